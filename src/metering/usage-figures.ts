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
  for (const name in figures) {
    const value = figures[name];
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

/**
 * Images format A: input text and image tokens, output text and image tokens. When the details
 * are missing, the input total counts as text and the output total as image tokens (the
 * images API outputs images); when one detail is given, the other is the rest of the total.
 * The totals themselves are not kept, so nothing is billed twice.
 * @see https://platform.openai.com/docs/api-reference/images/object
 */
export function imagesUsageFigures(usage: unknown): UsageFigures | undefined {
  const input = count(child(usage, 'input_tokens'));
  const output = count(child(usage, 'output_tokens'));
  const inputDetails = child(usage, 'input_tokens_details');
  const outputDetails = child(usage, 'output_tokens_details');
  const inputText = count(child(inputDetails, 'text_tokens'));
  const inputImage = count(child(inputDetails, 'image_tokens'));
  const outputText = count(child(outputDetails, 'text_tokens'));
  const outputImage = count(child(outputDetails, 'image_tokens'));
  // One detail given: the other is the rest of the total, so no token goes unbilled.
  return compact({
    input_text_tokens: inputText ?? remainder(input, inputImage),
    input_image_tokens: inputImage ?? (inputText === undefined ? undefined : remainder(input, inputText)),
    output_text_tokens: outputText ?? (outputImage === undefined ? undefined : remainder(output, outputImage)),
    output_image_tokens: outputImage ?? remainder(output, outputText),
  });
}

/**
 * Images format B: `usage.generated_images` (else the number of images returned) and
 * `usage.input_images`.
 */
export function vendorBImagesUsageFigures(usage: unknown, returnedImages: number | undefined): UsageFigures | undefined {
  return compact({
    output_images: count(child(usage, 'generated_images')) ?? returnedImages,
    input_images: count(child(usage, 'input_images')),
  });
}

/**
 * Images format C (generateContent): prompt tokens are the input; candidate tokens split by
 * modality into text and image output (all text when the split is missing); thoughts apart.
 * @see https://ai.google.dev/api/generate-content#UsageMetadata
 */
export function generateContentUsageFigures(usage: unknown): UsageFigures | undefined {
  const candidates = count(child(usage, 'candidatesTokenCount'));
  const details = child(usage, 'candidatesTokensDetails');
  const byModality = (modality: string): number | undefined => {
    if (!Array.isArray(details)) return undefined;
    let total: number | undefined;
    for (const detail of details) {
      if (child(detail, 'modality') !== modality) continue;
      total = (total ?? 0) + (count(child(detail, 'tokenCount')) ?? 0);
    }
    return total;
  };
  const image = byModality('IMAGE');
  return compact({
    input_tokens: count(child(usage, 'promptTokenCount')),
    cached_input_tokens: count(child(usage, 'cachedContentTokenCount')),
    output_text_tokens: byModality('TEXT') ?? remainder(candidates, image),
    output_image_tokens: image,
    thinking_tokens: count(child(usage, 'thoughtsTokenCount')),
  });
}

/** Speech (vendor-c t2a_v2): the characters billed, `extra_info.usage_characters`. */
export function speechUsageFigures(extraInfo: unknown): UsageFigures | undefined {
  return compact({ input_characters: count(child(extraInfo, 'usage_characters')) });
}

/** `total - part`, with an unknown part counted as 0; unknown when the total is. */
function remainder(total: number | undefined, part: number | undefined): number | undefined {
  return total === undefined ? undefined : Math.max(total - (part ?? 0), 0);
}
