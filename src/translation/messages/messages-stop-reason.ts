import type { StopReason } from '../canonical/response';

/** @see https://docs.anthropic.com/en/api/messages (response `stop_reason`) */
export type MessagesStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';

const MESSAGES_STOP_REASONS: readonly string[] = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
] satisfies MessagesStopReason[];

/**
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/handling-stop-reasons
 */
export function mapMessagesStopReason(reason: MessagesStopReason): StopReason {
  switch (reason) {
    case 'end_turn':
      return 'end';
    case 'max_tokens':
      return 'max_tokens';
    // The context window cut the output short: for the client it is the same as the output limit.
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'tool_use':
      return 'tool_calls';
    case 'pause_turn':
      return 'pause';
    case 'refusal':
      return 'refusal';
    default: {
      const unreachable: never = reason;
      throw new Error(`Unhandled messages stop reason: ${String(unreachable)}`);
    }
  }
}

/**
 * A stop reason from the wire. One this code does not know yet (the API adds them over time)
 * or a missing one is read as a natural end rather than failing an answer that is complete.
 */
export function readMessagesStopReason(value: unknown): StopReason {
  if (typeof value !== 'string' || !MESSAGES_STOP_REASONS.includes(value)) return 'end';
  return mapMessagesStopReason(value as MessagesStopReason);
}

/** @see https://docs.anthropic.com/en/api/messages (response `stop_reason`) */
export function encodeMessagesStopReason(reason: StopReason): MessagesStopReason {
  switch (reason) {
    case 'end':
      return 'end_turn';
    case 'max_tokens':
      return 'max_tokens';
    case 'tool_calls':
      return 'tool_use';
    case 'stop_sequence':
      return 'stop_sequence';
    // Messages has no filter reason; a withheld answer is what `refusal` tells the client.
    case 'content_filter':
      return 'refusal';
    case 'refusal':
      return 'refusal';
    case 'pause':
      return 'pause_turn';
    default: {
      const unreachable: never = reason;
      throw new Error(`Unhandled stop reason: ${String(unreachable)}`);
    }
  }
}
