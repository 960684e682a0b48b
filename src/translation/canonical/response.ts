import type { CanonicalPart, ReasoningOrigin } from './request';

/**
 * Why the model stopped, in one vocabulary for all three protocols.
 * - `end`: a natural end of turn; `max_tokens`: the output limit cut it;
 *   `tool_calls`: it wants tool results; `stop_sequence`: a stop string matched;
 *   `content_filter` and `refusal`: the upstream withheld output; `pause`: a long turn paused.
 */
export type StopReason = 'end' | 'max_tokens' | 'tool_calls' | 'stop_sequence' | 'content_filter' | 'refusal' | 'pause';

/**
 * Token usage. A figure the upstream did not report is undefined, never 0.
 * `inputTokens` counts every input token, cached ones included. The cache writes by how long the
 * entry lives (messages `cache_creation`) are part of `cacheWriteInputTokens`, which stays the total.
 */
export interface CanonicalUsage {
  inputTokens?: number;
  cachedInputTokens?: number;
  cacheWriteInputTokens?: number;
  cacheWrite5mInputTokens?: number;
  cacheWrite1hInputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
}

/**
 * A usage figure as the upstream reported it: a finite number of at least 0. Anything else
 * (missing, null, a string, a negative or non-finite number) is no report, so undefined, never
 * 0; a negative count would otherwise be billed as a credit. The one rule of every protocol's
 * usage decoder, and so of metering, which bills what they decode.
 */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/**
 * The usage figures that are known, member by member: what `definedOnly` does, without its
 * key array and keyed copy. Every native text call is metered through a usage decoder, so this
 * runs per call; inlined, the object passed in is not even allocated.
 * A member added to `CanonicalUsage` must be added here too, or it is dropped.
 */
export function knownUsage(figures: CanonicalUsage): CanonicalUsage {
  const known: CanonicalUsage = {};
  if (figures.inputTokens !== undefined) known.inputTokens = figures.inputTokens;
  if (figures.cachedInputTokens !== undefined) known.cachedInputTokens = figures.cachedInputTokens;
  if (figures.cacheWriteInputTokens !== undefined) known.cacheWriteInputTokens = figures.cacheWriteInputTokens;
  if (figures.cacheWrite5mInputTokens !== undefined) known.cacheWrite5mInputTokens = figures.cacheWrite5mInputTokens;
  if (figures.cacheWrite1hInputTokens !== undefined) known.cacheWrite1hInputTokens = figures.cacheWrite1hInputTokens;
  if (figures.outputTokens !== undefined) known.outputTokens = figures.outputTokens;
  if (figures.reasoningTokens !== undefined) known.reasoningTokens = figures.reasoningTokens;
  return known;
}

export type CanonicalOutputPart =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string; kind: 'function' | 'custom' }
  | {
      type: 'reasoning';
      text: string;
      summary?: string[];
      opaque?: { kind: 'signature' | 'encrypted' | 'redacted'; value: string; itemId?: string };
      origin?: ReasoningOrigin;
    };

export interface CanonicalResponse {
  id: string;
  /** The model name as the upstream reported it. */
  model: string;
  output: CanonicalOutputPart[];
  stopReason: StopReason;
  stopSequence?: string;
  usage: CanonicalUsage;
}

/** An upstream error, decoded from its protocol's body. */
export interface CanonicalError {
  status: number;
  /** A coarse kind that every protocol can express. */
  kind: 'invalid_request' | 'authentication' | 'permission' | 'not_found' | 'rate_limit' | 'overloaded' | 'server' | 'timeout';
  message: string;
  /** The upstream's own error code or type, when it gave one. */
  code?: string;
}

export type { CanonicalPart };
