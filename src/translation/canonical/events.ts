import type { CanonicalUsage, StopReason } from './response';
import type { ReasoningOrigin } from './request';

/**
 * The canonical stream: what a decoder reads out of an upstream SSE stream and an encoder
 * writes as the client protocol's events. Parts are numbered by `index` in output order;
 * each part is opened, receives deltas, and is closed before the next one opens — except
 * tool calls of chat-completions streams, which may interleave; decoders open them in order
 * and close each before the next (buffering as needed), so encoders can rely on it.
 */
export type CanonicalEvent =
  /** First event: the upstream's response id and model. Usage known so far may come along. */
  | { type: 'start'; id: string; model: string; usage?: CanonicalUsage }
  | { type: 'text_start'; index: number }
  | { type: 'text_delta'; index: number; text: string }
  | { type: 'reasoning_start'; index: number; origin?: ReasoningOrigin }
  | { type: 'reasoning_delta'; index: number; text: string }
  /** Opaque continuation data of the reasoning part (signature or encrypted content). */
  | { type: 'reasoning_opaque'; index: number; kind: 'signature' | 'encrypted' | 'redacted'; value: string; itemId?: string }
  | { type: 'tool_call_start'; index: number; id: string; name: string; kind: 'function' | 'custom' }
  | { type: 'tool_call_delta'; index: number; arguments: string }
  | { type: 'part_end'; index: number }
  /**
   * Usage figures known so far. Each figure present overwrites the one known before
   * (upstream totals are cumulative, as in messages streams); absent figures stay as they were.
   */
  | { type: 'usage'; usage: CanonicalUsage }
  /** The model finished; the last event before `end`. */
  | { type: 'finish'; stopReason: StopReason; stopSequence?: string }
  /** The upstream reported an error inside the stream. */
  | { type: 'error'; message: string; kind?: string }
  /** Nothing more will come. */
  | { type: 'end' };
