import type { ReasoningOrigin } from '../canonical/request';
import type { CanonicalOutputPart, CanonicalResponse } from '../canonical/response';
import { readMessagesStopReason } from './messages-stop-reason';
import { decodeMessagesUsage } from './messages-usage';
import { isRecord, recordsOf, stringOf } from './messages-values';

/**
 * A messages upstream's Message → the canonical response. `origin` (the upstream protocol and
 * model) goes on reasoning parts, so their signatures can be sealed for the client.
 * @see https://docs.anthropic.com/en/api/messages (response)
 */
export function decodeMessagesResponse(body: unknown, origin: ReasoningOrigin): CanonicalResponse {
  if (!isRecord(body) || body.type !== 'message') {
    throw new Error('The messages upstream answered with a body that is not a message.');
  }
  const stopSequence = stringOf(body.stop_sequence);
  return {
    id: stringOf(body.id) ?? '',
    model: stringOf(body.model) ?? '',
    output: recordsOf(body.content).flatMap((block) => decodeContentBlock(block, origin)),
    stopReason: readMessagesStopReason(body.stop_reason),
    ...(stopSequence !== undefined && { stopSequence }),
    usage: decodeMessagesUsage(body.usage),
  };
}

/**
 * Server tool blocks (web search and the like) are left out: the translation path never asks
 * for server tools, and a client of another protocol could not read them.
 */
function decodeContentBlock(block: Record<string, unknown>, origin: ReasoningOrigin): CanonicalOutputPart[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: stringOf(block.text) ?? '' }];
    case 'tool_use': {
      const [id, name] = [stringOf(block.id) ?? '', stringOf(block.name) ?? ''];
      return [{ type: 'tool_call', id, name, arguments: JSON.stringify(block.input ?? {}), kind: 'function' }];
    }
    case 'thinking': {
      const opaque = { kind: 'signature' as const, value: stringOf(block.signature) ?? '' };
      return [{ type: 'reasoning', text: stringOf(block.thinking) ?? '', opaque, origin }];
    }
    case 'redacted_thinking':
      return [{ type: 'reasoning', text: '', opaque: { kind: 'redacted', value: stringOf(block.data) ?? '' }, origin }];
    default:
      return [];
  }
}
