import type { CanonicalMessage, CanonicalPart } from '../canonical/request';
import { restoreReasoningBlock } from './messages-reasoning';
import { parseJsonObject } from './messages-values';

/**
 * Canonical messages → messages `messages`, which must alternate user and assistant: parts are
 * laid out by the role that may carry them, and consecutive turns of one role are merged.
 * @see https://docs.anthropic.com/en/api/messages (request `messages`)
 */

type Block = Record<string, unknown>;
type RichPart = Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>;
type Role = 'user' | 'assistant';

interface Turn {
  role: Role;
  blocks: Block[];
}

export function encodeMessagesTurns(messages: CanonicalMessage[], upstreamModel: string): Array<{ role: Role; content: Block[] }> {
  const turns: Turn[] = [];
  for (const message of messages) {
    for (const part of message.parts) {
      const block = encodePart(part, upstreamModel);
      if (block !== undefined) addBlock(turns, roleOf(part, message.role), block);
    }
  }
  return turns.map(({ role, blocks }) => ({ role, content: orderTurn(role, blocks) }));
}

/** Tool calls and reasoning are the assistant's, tool results the user's, whatever message held them. */
function roleOf(part: CanonicalPart, messageRole: Role): Role {
  switch (part.type) {
    case 'tool_call':
    case 'reasoning':
      return 'assistant';
    case 'tool_result':
      return 'user';
    default:
      return messageRole;
  }
}

function addBlock(turns: Turn[], role: Role, block: Block): void {
  const last = turns[turns.length - 1];
  if (last?.role === role) last.blocks.push(block);
  else turns.push({ role, blocks: [block] });
}

/**
 * The API wants tool results first in their user turn and thinking first in its assistant turn;
 * the order within each group is kept.
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-tool-use-and-tool-result-content-blocks
 */
function orderTurn(role: Role, blocks: Block[]): Block[] {
  const leading = role === 'user' ? ['tool_result'] : ['thinking', 'redacted_thinking'];
  const first = blocks.filter((block) => leading.includes(block.type as string));
  return first.length === 0 ? blocks : [...first, ...blocks.filter((block) => !leading.includes(block.type as string))];
}

function encodePart(part: CanonicalPart, upstreamModel: string): Block | undefined {
  switch (part.type) {
    case 'text':
    case 'image':
    case 'file':
      return encodeRichPart(part);
    case 'tool_call':
      // Messages wants an object; arguments that are not one would be refused, so they become {}.
      return { type: 'tool_use', id: part.id, name: part.name, input: parseJsonObject(part.arguments) ?? {} };
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: part.callId,
        content: encodeToolResultContent(part.content),
        ...(part.isError === true && { is_error: true }),
      };
    case 'reasoning':
      return restoreReasoningBlock(part, upstreamModel);
    default: {
      const unreachable: never = part;
      throw new Error(`Unhandled part: ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Empty text blocks are refused by the API and carry nothing, so they are left out. */
function encodeRichPart(part: RichPart): Block | undefined {
  switch (part.type) {
    case 'text':
      return part.text === '' ? undefined : { type: 'text', text: part.text };
    case 'image':
      return { type: 'image', source: encodeImageSource(part.url) };
    case 'file':
      return {
        type: 'document',
        source: { type: 'base64', media_type: part.mediaType, data: part.data },
        ...(part.filename !== undefined && { title: part.filename }),
      };
    default: {
      const unreachable: never = part;
      throw new Error(`Unhandled part: ${JSON.stringify(unreachable)}`);
    }
  }
}

function encodeToolResultContent(content: string | RichPart[]): string | Block[] {
  if (typeof content === 'string') return content;
  const blocks = content.map(encodeRichPart).filter((block): block is Block => block !== undefined);
  return blocks.length === 0 ? '' : blocks;
}

/**
 * A data URL becomes a base64 source with its media type; anything else is an address.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision
 */
export function encodeImageSource(url: string): Block {
  if (!url.startsWith('data:')) return { type: 'url', url };
  const comma = url.indexOf(',');
  const header = url.slice('data:'.length, comma === -1 ? url.length : comma).split(';');
  const payload = comma === -1 ? '' : url.slice(comma + 1);
  // A data URL without ";base64" holds percent-encoded bytes; the API only takes base64.
  const data = header.includes('base64') ? payload : Buffer.from(decodeURIComponent(payload), 'utf8').toString('base64');
  return { type: 'base64', media_type: header[0], data };
}
