import { tokenCount as count, type CanonicalUsage } from '../translation/canonical/response';
import { decodeChatUsage } from '../translation/chat-completions/decode-chat-response';
import { decodeMessagesUsage } from '../translation/messages/messages-usage';
import { decodeResponsesUsage } from '../translation/responses/decode-responses-response';

/**
 * Metered figures of one call, named as in the price table. A figure the upstream did not
 * report is absent, never 0: "unknown" and "zero" bill the same but mean different things
 * in a record.
 *
 * Some figures overlap. `input_tokens` is every input token, cached ones included;
 * `cached_input_tokens` and `cache_write_input_tokens` say how many of them were cache reads and
 * cache writes; `cache_write_5m_input_tokens` and `cache_write_1h_input_tokens` split the cache
 * writes by how long the entry lives, and `cache_write_input_tokens` stays their total.
 * `reasoning_tokens` are part of `output_tokens` and are kept for information only.
 * pricing.ts bills each token once.
 */
export type UsageFigures = Partial<Record<string, number>>;

type Json = Record<string, unknown>;

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

/**
 * Canonical usage → metered figures: the one mapping for every text protocol, native calls
 * (below) and translated ones (translated-call.service.ts) alike. The translation decoders
 * have already dropped what the upstream did not report (and negative or non-numeric
 * figures); those stay absent here. One object, and only when a figure is known; written
 * member by member, as a loop over a name table costs several times as much per call.
 * usage-figures.spec.ts names every member, so a member added to `CanonicalUsage` fails it
 * until it is mapped here.
 */
export function canonicalUsageFigures(usage: CanonicalUsage): UsageFigures | undefined {
  const { inputTokens, cachedInputTokens, cacheWriteInputTokens, cacheWrite5mInputTokens, cacheWrite1hInputTokens, outputTokens, reasoningTokens } = usage;
  if (
    inputTokens === undefined &&
    cachedInputTokens === undefined &&
    cacheWriteInputTokens === undefined &&
    cacheWrite5mInputTokens === undefined &&
    cacheWrite1hInputTokens === undefined &&
    outputTokens === undefined &&
    reasoningTokens === undefined
  ) {
    return undefined;
  }
  const figures: UsageFigures = {};
  if (inputTokens !== undefined) figures.input_tokens = inputTokens;
  if (cachedInputTokens !== undefined) figures.cached_input_tokens = cachedInputTokens;
  if (cacheWriteInputTokens !== undefined) figures.cache_write_input_tokens = cacheWriteInputTokens;
  if (cacheWrite5mInputTokens !== undefined) figures.cache_write_5m_input_tokens = cacheWrite5mInputTokens;
  if (cacheWrite1hInputTokens !== undefined) figures.cache_write_1h_input_tokens = cacheWrite1hInputTokens;
  if (outputTokens !== undefined) figures.output_tokens = outputTokens;
  if (reasoningTokens !== undefined) figures.reasoning_tokens = reasoningTokens;
  return figures;
}

/**
 * Native text calls read their usage with the translation decoders, so a native and a
 * translated call that the upstream reports the same usage for bill the same figures.
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
 */
export function chatUsageFigures(usage: unknown): UsageFigures | undefined {
  return canonicalUsageFigures(decodeChatUsage(usage));
}

/** @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage */
export function responsesUsageFigures(usage: unknown): UsageFigures | undefined {
  return canonicalUsageFigures(decodeResponsesUsage(usage));
}

/**
 * Messages usage reports uncached input apart from cache reads and writes; `input_tokens` here
 * is their sum, and `cache_creation` splits the writes by duration (decodeMessagesUsage).
 * @see https://docs.anthropic.com/en/api/messages#response-usage
 */
export function messagesUsageFigures(usage: unknown): UsageFigures | undefined {
  return canonicalUsageFigures(decodeMessagesUsage(usage));
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
