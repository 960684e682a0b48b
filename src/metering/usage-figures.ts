/**
 * Metered figures of one call, named as in the price table. A figure the upstream did not
 * report is absent, never 0: "unknown" and "zero" bill the same but mean different things
 * in a record.
 *
 * `input_tokens` is every input token, cached ones included; `cached_input_tokens` and
 * `cache_write_input_tokens` say how many of them were cache reads and cache writes.
 * `reasoning_tokens` are part of `output_tokens` and are kept for information only.
 */
export type UsageFigures = Partial<Record<string, number>>;

type Json = Record<string, unknown>;

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function child(value: unknown, key: string): unknown {
  return value && typeof value === 'object' ? (value as Json)[key] : undefined;
}

function compact(figures: UsageFigures): UsageFigures | undefined {
  const result: UsageFigures = {};
  let any = false;
  for (const [name, value] of Object.entries(figures)) {
    if (value === undefined) continue;
    result[name] = value;
    any = true;
  }
  return any ? result : undefined;
}

/** @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage */
export function chatUsageFigures(usage: unknown): UsageFigures | undefined {
  return compact({
    input_tokens: count(child(usage, 'prompt_tokens')),
    cached_input_tokens: count(child(child(usage, 'prompt_tokens_details'), 'cached_tokens')),
    output_tokens: count(child(usage, 'completion_tokens')),
    reasoning_tokens: count(child(child(usage, 'completion_tokens_details'), 'reasoning_tokens')),
  });
}

/** @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage */
export function responsesUsageFigures(usage: unknown): UsageFigures | undefined {
  return compact({
    input_tokens: count(child(usage, 'input_tokens')),
    cached_input_tokens: count(child(child(usage, 'input_tokens_details'), 'cached_tokens')),
    output_tokens: count(child(usage, 'output_tokens')),
    reasoning_tokens: count(child(child(usage, 'output_tokens_details'), 'reasoning_tokens')),
  });
}

/**
 * Messages usage reports uncached input apart from cache reads and writes; the sum is the
 * whole input. @see https://docs.anthropic.com/en/api/messages#response-usage
 */
export function messagesUsageFigures(usage: unknown): UsageFigures | undefined {
  const uncached = count(child(usage, 'input_tokens'));
  const cacheRead = count(child(usage, 'cache_read_input_tokens'));
  const cacheWrite = count(child(usage, 'cache_creation_input_tokens'));
  const input = uncached === undefined ? undefined : uncached + (cacheRead ?? 0) + (cacheWrite ?? 0);
  return compact({
    input_tokens: input,
    cached_input_tokens: cacheRead,
    cache_write_input_tokens: cacheWrite,
    output_tokens: count(child(usage, 'output_tokens')),
  });
}

/** @see https://platform.openai.com/docs/api-reference/embeddings/object */
export function embeddingsUsageFigures(usage: unknown): UsageFigures | undefined {
  return compact({ input_tokens: count(child(usage, 'prompt_tokens')) });
}
