import { TranslationRejection, type CanonicalMessage, type CanonicalPart } from '../canonical/request';
import { decodeRedactedThinkingBlock, decodeThinkingBlock } from './messages-reasoning';
import { isRecord, stringOf } from './messages-values';

/**
 * Client `messages` → canonical messages (docs/translation.md "Messages entry"). Problems are
 * named by their path (`messages.0.content.1.source.type`), as the API itself names them.
 * @see https://docs.anthropic.com/en/api/messages (request `messages`)
 */

type RichPart = Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>;
type ImagePart = Extract<CanonicalPart, { type: 'image' }>;

export function decodeMessagesList(value: unknown): CanonicalMessage[] {
  if (!Array.isArray(value)) throw new TranslationRejection('messages: Field required (a list of messages).');
  return value.map((message, index) => decodeMessage(message, `messages.${index}`));
}

function decodeMessage(value: unknown, path: string): CanonicalMessage {
  if (!isRecord(value)) throw new TranslationRejection(`${path}: must be an object with role and content.`);
  const { role, content } = value;
  if (role !== 'user' && role !== 'assistant') {
    throw new TranslationRejection(`${path}.role: must be "user" or "assistant".`);
  }
  if (typeof content === 'string') return { role, parts: [{ type: 'text', text: content }] };
  if (!Array.isArray(content)) throw new TranslationRejection(`${path}.content: must be a string or a list of content blocks.`);
  return { role, parts: content.flatMap((block, index) => decodeBlock(block, `${path}.content.${index}`)) };
}

function decodeBlock(block: unknown, path: string): CanonicalPart[] {
  if (!isRecord(block)) throw new TranslationRejection(`${path}: must be a content block object.`);
  switch (block.type) {
    case 'tool_use':
      return [decodeToolUse(block, path)];
    case 'tool_result':
      return [decodeToolResult(block, path)];
    case 'thinking':
      return [decodeThinkingBlock(requireString(block.thinking, `${path}.thinking`), stringOf(block.signature) ?? '')];
    case 'redacted_thinking':
      return [decodeRedactedThinkingBlock(requireString(block.data, `${path}.data`))];
    default:
      return decodeRichBlock(block, path);
  }
}

/** Blocks that may also appear inside tool results and document contents. */
function decodeRichBlock(block: Record<string, unknown>, path: string): RichPart[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: requireString(block.text, `${path}.text`) }];
    case 'image':
      return [decodeImage(block, path)];
    case 'document':
      return decodeDocument(block, path);
    default:
      throw new TranslationRejection(`${path}.type: content blocks of type ${JSON.stringify(block.type)} are not supported on the translation path.`);
  }
}

function decodeToolUse(block: Record<string, unknown>, path: string): CanonicalPart {
  const id = requireString(block.id, `${path}.id`);
  const name = requireString(block.name, `${path}.name`);
  // Canonical arguments are a JSON string (docs/translation.md "Canonical conventions").
  return { type: 'tool_call', id, name, arguments: JSON.stringify(block.input ?? {}), kind: 'function' };
}

function decodeToolResult(block: Record<string, unknown>, path: string): CanonicalPart {
  const callId = requireString(block.tool_use_id, `${path}.tool_use_id`);
  const content = decodeToolResultContent(block.content, `${path}.content`);
  const part: CanonicalPart = { type: 'tool_result', callId, content, kind: 'function' };
  return block.is_error === true ? { ...part, isError: true } : part;
}

function decodeToolResultContent(content: unknown, path: string): string | RichPart[] {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new TranslationRejection(`${path}: must be a string or a list of content blocks.`);
  return content.flatMap((block, index) => {
    if (!isRecord(block)) throw new TranslationRejection(`${path}.${index}: must be a content block object.`);
    return decodeRichBlock(block, `${path}.${index}`);
  });
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/vision */
function decodeImage(block: Record<string, unknown>, path: string): ImagePart {
  const source = isRecord(block.source) ? block.source : {};
  switch (source.type) {
    case 'base64': {
      const mediaType = requireString(source.media_type, `${path}.source.media_type`);
      return { type: 'image', url: `data:${mediaType};base64,${requireString(source.data, `${path}.source.data`)}` };
    }
    case 'url':
      return { type: 'image', url: requireString(source.url, `${path}.source.url`) };
    case 'file':
      throw new TranslationRejection(`${path}.source: uploaded files cannot be referenced on the translation path; send the image as base64 or as a URL.`);
    default:
      throw new TranslationRejection(`${path}.source.type: must be "base64" or "url".`);
  }
}

/** @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support */
function decodeDocument(block: Record<string, unknown>, path: string): RichPart[] {
  const source = isRecord(block.source) ? block.source : {};
  switch (source.type) {
    case 'base64':
      return [decodePdf(block, source, path)];
    case 'text':
      return [{ type: 'text', text: requireString(source.data, `${path}.source.data`) }];
    case 'content': {
      const content = decodeToolResultContent(source.content, `${path}.source.content`);
      return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
    }
    case 'url':
      throw new TranslationRejection(`${path}.source: documents are not fetched by URL on the translation path; send the PDF inline as base64.`);
    case 'file':
      throw new TranslationRejection(`${path}.source: uploaded files cannot be referenced on the translation path; send the PDF inline as base64.`);
    default:
      throw new TranslationRejection(`${path}.source.type: must be "base64", "text" or "content".`);
  }
}

function decodePdf(block: Record<string, unknown>, source: Record<string, unknown>, path: string): RichPart {
  const mediaType = requireString(source.media_type, `${path}.source.media_type`);
  if (mediaType !== 'application/pdf') {
    throw new TranslationRejection(`${path}.source.media_type: base64 documents must be "application/pdf".`);
  }
  const data = requireString(source.data, `${path}.source.data`);
  // The title is the only name a messages document has; upstreams that want a file name get it.
  const title = stringOf(block.title);
  return title === undefined ? { type: 'file', mediaType, data } : { type: 'file', mediaType, data, filename: title };
}

function requireString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new TranslationRejection(`${path}: must be a string.`);
  return value;
}
