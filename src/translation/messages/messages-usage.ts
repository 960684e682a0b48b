import { knownUsage, tokenCount, type CanonicalUsage } from '../canonical/response';
import { asRecord } from './messages-values';

/**
 * Messages usage counts cached input apart: `input_tokens` holds only the uncached part, and
 * the total input is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`.
 * The canonical `inputTokens` counts every input token, so the figures are summed on the way
 * in and split again on the way out. The one reader of messages usage: native calls are metered
 * from it too (metering/usage-figures.ts).
 *
 * `cache_creation` splits the cache writes by how long the entry lives (5 minutes, 1 hour),
 * which are priced apart; `cache_creation_input_tokens` stays their total. A usage that gives the
 * split without the total has the split's sum as its total, so the input still counts them.
 * @see https://docs.anthropic.com/en/api/messages (response `usage`)
 * @see https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#1-hour-cache-duration
 */
export function decodeMessagesUsage(raw: unknown): CanonicalUsage {
  const usage = asRecord(raw);
  const uncached = tokenCount(usage.input_tokens);
  const cacheRead = tokenCount(usage.cache_read_input_tokens);
  const creation = asRecord(usage.cache_creation);
  const write5m = tokenCount(creation.ephemeral_5m_input_tokens);
  const write1h = tokenCount(creation.ephemeral_1h_input_tokens);
  const splitTotal = write5m === undefined && write1h === undefined ? undefined : (write5m ?? 0) + (write1h ?? 0);
  const cacheWrite = tokenCount(usage.cache_creation_input_tokens) ?? splitTotal;
  const thinking = tokenCount(asRecord(usage.output_tokens_details).thinking_tokens);
  return knownUsage({
    inputTokens: uncached === undefined ? undefined : uncached + (cacheRead ?? 0) + (cacheWrite ?? 0),
    cachedInputTokens: cacheRead,
    cacheWriteInputTokens: cacheWrite,
    cacheWrite5mInputTokens: write5m,
    cacheWrite1hInputTokens: write1h,
    outputTokens: tokenCount(usage.output_tokens),
    reasoningTokens: thinking,
  });
}

/** The uncached part of the input, as messages `input_tokens` reports it. */
export function uncachedInputTokens(usage: CanonicalUsage): number | undefined {
  if (usage.inputTokens === undefined) return undefined;
  return Math.max(usage.inputTokens - (usage.cachedInputTokens ?? 0) - (usage.cacheWriteInputTokens ?? 0), 0);
}

/**
 * A complete messages `usage` object. The SDK types `input_tokens` and `output_tokens` as
 * numbers, so unknown ones are written as 0; unknown cache figures are null, as the API allows.
 */
export function encodeMessagesUsage(usage: CanonicalUsage): Record<string, unknown> {
  return {
    input_tokens: uncachedInputTokens(usage) ?? 0,
    output_tokens: usage.outputTokens ?? 0,
    cache_creation_input_tokens: usage.cacheWriteInputTokens ?? null,
    cache_read_input_tokens: usage.cachedInputTokens ?? null,
  };
}
