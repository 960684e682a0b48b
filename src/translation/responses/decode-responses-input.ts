import { openReasoning } from '../canonical/reasoning-seal';
import { TranslationRejection, type CanonicalMessage, type CanonicalPart, type CanonicalRole } from '../canonical/request';
import { isRecord, records, wrapCustomInput } from './responses-values';

/**
 * Responses `input` (a string or a list of items) → canonical system strings and messages.
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-input
 */

type ContentPart = Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>;
type ReasoningPart = Extract<CanonicalPart, { type: 'reasoning' }>;

export interface DecodedInput {
  system: string[];
  messages: CanonicalMessage[];
}

export function decodeResponsesInput(input: unknown): DecodedInput {
  if (typeof input === 'string') return { system: [], messages: [{ role: 'user', parts: [{ type: 'text', text: input }] }] };
  if (!Array.isArray(input)) throw new TranslationRejection('`input` must be a string or a list of input items.');
  const decoded: DecodedInput = { system: [], messages: [] };
  input.forEach((item, index) => decodeItem(decoded, requireRecord(item, `input[${index}]`), `input[${index}]`));
  return decoded;
}

/**
 * Responses has no turn boundaries between items (a reasoning item, the assistant's text and
 * its function calls are siblings), so consecutive items of one role form one canonical
 * message; this is also the shape the messages protocol requires.
 */
function append(decoded: DecodedInput, role: CanonicalRole, parts: CanonicalPart[]): void {
  const last = decoded.messages[decoded.messages.length - 1];
  if (last !== undefined && last.role === role) last.parts.push(...parts);
  else decoded.messages.push({ role, parts });
}

function decodeItem(decoded: DecodedInput, item: Record<string, unknown>, path: string): void {
  // An item without `type` but with `role` is the "easy" message form the SDKs document.
  const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
  switch (type) {
    case 'message':
      return decodeMessage(decoded, item, path);
    case 'function_call':
    case 'custom_tool_call':
      return append(decoded, 'assistant', [decodeToolCall(item, type === 'custom_tool_call', path)]);
    case 'function_call_output':
    case 'custom_tool_call_output':
      return append(decoded, 'user', [decodeToolOutput(item, type === 'custom_tool_call_output', path)]);
    case 'reasoning':
      return append(decoded, 'assistant', [decodeReasoning(item, path)]);
    case 'item_reference':
      throw new TranslationRejection(`${path}: item_reference points at a stored item, and the gateway stores nothing; send the item itself.`);
    default:
      throw new TranslationRejection(`${path}: input items of type ${JSON.stringify(type)} cannot be translated for this model.`);
  }
}

function decodeMessage(decoded: DecodedInput, item: Record<string, unknown>, path: string): void {
  const role = item.role;
  switch (role) {
    case 'system':
    case 'developer':
      decoded.system.push(...decodeSystemContent(item.content, `${path}.content`));
      return;
    case 'user':
      return append(decoded, 'user', decodeContent(item.content, `${path}.content`, { media: true }));
    case 'assistant':
      return append(decoded, 'assistant', decodeContent(item.content, `${path}.content`, { media: false }));
    default:
      throw new TranslationRejection(`${path}.role must be user, assistant, system or developer.`);
  }
}

/** One string per text part: the encoders join system strings with blank lines. */
function decodeSystemContent(content: unknown, path: string): string[] {
  return decodeContent(content, path, { media: false }).flatMap((part) => (part.type === 'text' ? [part.text] : []));
}

/** Images and files come only from the user (and inside tool outputs); the other roles speak text. */
function decodeContent(content: unknown, path: string, rules: { media: boolean }): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw new TranslationRejection(`${path} must be a string or a list of content parts.`);
  return content.map((raw, index) => {
    const part = decodeContentPart(requireRecord(raw, `${path}[${index}]`), `${path}[${index}]`);
    if (part.type !== 'text' && !rules.media) {
      throw new TranslationRejection(`${path}[${index}]: only user messages and tool outputs can hold images and files.`);
    }
    return part;
  });
}

function decodeContentPart(part: Record<string, unknown>, path: string): ContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: requireString(part.text, `${path}.text`) };
    case 'refusal':
      // The refusal is what the model said; continuing the conversation needs it as text.
      return { type: 'text', text: requireString(part.refusal, `${path}.refusal`) };
    case 'input_image':
      return decodeImage(part, path);
    case 'input_file':
      return decodeFile(part, path);
    default:
      throw new TranslationRejection(`${path}: content parts of type ${JSON.stringify(part.type)} cannot be translated for this model.`);
  }
}

function decodeImage(part: Record<string, unknown>, path: string): ContentPart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw new TranslationRejection(`${path}: images cannot be referenced by file_id here; send image_url as an address or data URL.`);
  }
  const url = part.image_url;
  if (typeof url !== 'string' || !/^(https?:|data:)/i.test(url)) {
    throw new TranslationRejection(`${path}.image_url must be an http(s) address or a data URL.`);
  }
  return typeof part.detail === 'string' ? { type: 'image', url, detail: part.detail } : { type: 'image', url };
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;
const PDF = 'application/pdf';

/** Only inline PDFs travel: every upstream takes them, and nothing stored upstream is reachable. */
function decodeFile(part: Record<string, unknown>, path: string): ContentPart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw new TranslationRejection(`${path}: files cannot be referenced by file_id here; send file_data inline.`);
  }
  if (part.file_url !== undefined && part.file_url !== null) {
    throw new TranslationRejection(`${path}: files cannot be referenced by file_url here; send file_data inline.`);
  }
  const filename = typeof part.filename === 'string' ? part.filename : undefined;
  const fileData = requireString(part.file_data, `${path}.file_data`);
  const dataUrl = DATA_URL.exec(fileData);
  const isPdf = dataUrl ? dataUrl[1].toLowerCase() === PDF : filename?.toLowerCase().endsWith('.pdf') === true;
  if (!isPdf) throw new TranslationRejection(`${path}: only PDF files can be translated (a data:application/pdf URL or a .pdf filename).`);
  const data = dataUrl ? dataUrl[2] : fileData;
  return filename === undefined ? { type: 'file', mediaType: PDF, data } : { type: 'file', mediaType: PDF, data, filename };
}

function decodeToolCall(item: Record<string, unknown>, custom: boolean, path: string): CanonicalPart {
  const id = requireString(item.call_id, `${path}.call_id`);
  const name = requireString(item.name, `${path}.name`);
  if (custom) {
    return { type: 'tool_call', id, name, arguments: wrapCustomInput(requireString(item.input, `${path}.input`)), kind: 'custom' };
  }
  return { type: 'tool_call', id, name, arguments: requireString(item.arguments, `${path}.arguments`), kind: 'function' };
}

function decodeToolOutput(item: Record<string, unknown>, custom: boolean, path: string): CanonicalPart {
  const callId = requireString(item.call_id, `${path}.call_id`);
  const output = item.output;
  const content = typeof output === 'string' ? output : decodeContent(output, `${path}.output`, { media: true });
  return { type: 'tool_result', callId, content, kind: custom ? 'custom' : 'function' };
}

/**
 * A reasoning item handed back for continuation. A gateway seal in `encrypted_content` opens
 * into the upstream's own opaque data and origin; anything else (a vendor's own encrypted
 * content) keeps no origin, so no upstream encoder restores it.
 */
function decodeReasoning(item: Record<string, unknown>, path: string): ReasoningPart {
  if (item.summary !== undefined && !Array.isArray(item.summary)) throw new TranslationRejection(`${path}.summary must be a list.`);
  const summary = records(item.summary).map((part, index) => requireString(part.text, `${path}.summary[${index}].text`));
  const summaryText = summary.join('\n\n');
  const reasoning: ReasoningPart = { type: 'reasoning', text: summaryText };
  if (summary.length > 0) reasoning.summary = summary;
  const encrypted = item.encrypted_content;
  if (encrypted === undefined || encrypted === null) return reasoning;
  const token = requireString(encrypted, `${path}.encrypted_content`);
  const sealed = openReasoning(token);
  if (sealed === undefined) {
    const itemId = typeof item.id === 'string' ? item.id : undefined;
    return { ...reasoning, opaque: itemId === undefined ? { kind: 'encrypted', value: token } : { kind: 'encrypted', value: token, itemId } };
  }
  const opaque = sealed.itemId === undefined ? { kind: sealed.kind, value: sealed.value } : { kind: sealed.kind, value: sealed.value, itemId: sealed.itemId };
  // Messages upstreams need their thinking text back verbatim, which the seal kept.
  return { ...reasoning, text: sealed.text ?? summaryText, opaque, origin: sealed.origin };
}

export function requireRecord(value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value)) throw new TranslationRejection(`${path} must be an object.`);
  return value;
}

export function requireString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new TranslationRejection(`${path} must be a string.`);
  return value;
}
