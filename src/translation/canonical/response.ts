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
 * `inputTokens` counts every input token, cached ones included.
 */
export interface CanonicalUsage {
  inputTokens?: number;
  cachedInputTokens?: number;
  cacheWriteInputTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
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
