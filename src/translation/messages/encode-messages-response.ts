import type { TranslationContext } from '../canonical/ids';
import type { CanonicalOutputPart, CanonicalResponse } from '../canonical/response';
import { encodeMessagesStopReason } from './messages-stop-reason';
import { encodeReasoningBlock } from './messages-reasoning';
import { encodeMessagesUsage } from './messages-usage';
import { parseJsonObject } from './messages-values';

/**
 * The canonical response → a complete Message for a messages client, as the official SDK reads
 * it. The id is the gateway's own (`msg_…`): the upstream's id has another protocol's shape.
 * @see https://docs.anthropic.com/en/api/messages (response)
 */
export function encodeMessagesResponse(response: CanonicalResponse, context: TranslationContext): Record<string, unknown> {
  return {
    id: context.newId('msg'),
    type: 'message',
    role: 'assistant',
    model: response.model,
    content: response.output.map(encodeContentBlock),
    stop_reason: encodeMessagesStopReason(response.stopReason),
    stop_sequence: response.stopSequence ?? null,
    usage: encodeMessagesUsage(response.usage),
  };
}

function encodeContentBlock(part: CanonicalOutputPart): Record<string, unknown> {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    // A custom tool call cannot reach a messages client (it declares no custom tools); should
    // one come anyway, its `{"input": …}` arguments are still a valid tool input.
    case 'tool_call':
      return { type: 'tool_use', id: part.id, name: part.name, input: parseJsonObject(part.arguments) ?? {} };
    case 'reasoning':
      return encodeReasoningBlock(part);
    default: {
      const unreachable: never = part;
      throw new Error(`Unhandled output part: ${JSON.stringify(unreachable)}`);
    }
  }
}
