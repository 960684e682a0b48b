import type { CanonicalMessage, CanonicalPart, CanonicalRequest, CanonicalTool, CanonicalToolChoice, Mapped } from '../canonical/request';

/**
 * Canonical request → OpenAI Responses request body, for a messages client whose model has a
 * responses interface.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */

type ContentPart = Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>;
type ReasoningPart = Extract<CanonicalPart, { type: 'reasoning' }>;
type Item = Record<string, unknown>;

/** The upstream protocol name reasoning origins carry for this adapter. */
export const RESPONSES_PROTOCOL = 'responses';

/** OpenAI requires a filename with inline `file_data`. */
const DEFAULT_FILENAME = 'document.pdf';

export function encodeResponsesRequest(request: CanonicalRequest): Mapped<Record<string, unknown>> {
  const body: Record<string, unknown> = { model: request.model };
  if (request.system.length > 0) body.instructions = request.system.join('\n\n');
  body.input = encodeInput(request);
  // Like chat, an empty `tools` list and a tool choice without tools are refused upstream.
  if (request.tools.length > 0) {
    body.tools = request.tools.map(encodeTool);
    if (request.toolChoice !== undefined) body.tool_choice = encodeToolChoice(request.toolChoice);
  }
  if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  body.max_output_tokens = request.maxOutputTokens;
  // Only the messages entry translates to responses, and its clients always see thinking text.
  if (request.reasoning !== undefined) body.reasoning = { effort: request.reasoning.effort, summary: 'auto' };
  // The gateway stores nothing, so reasoning can only continue through its encrypted form.
  body.include = ['reasoning.encrypted_content'];
  body.store = false;
  body.stream = request.stream;
  return { value: body, dropped: droppedFields(request), ignored: [] };
}

/** SPEC.md "Messages entry": temperature, top_p and stop sequences are dropped toward responses. */
function droppedFields(request: CanonicalRequest): string[] {
  const dropped: string[] = [];
  if (request.temperature !== undefined) dropped.push('temperature');
  if (request.topP !== undefined) dropped.push('topP');
  if (request.stop !== undefined) dropped.push('stop');
  return dropped;
}

function encodeInput(request: CanonicalRequest): Item[] {
  return request.messages.flatMap((message) => encodeMessage(message, request.model));
}

/**
 * One canonical message becomes a run of items in part order: neighbouring content parts
 * share one `message` item; calls, outputs and reasoning are items of their own.
 */
function encodeMessage(message: CanonicalMessage, upstreamModel: string): Item[] {
  const items: Item[] = [];
  let content: ContentPart[] = [];
  const flush = (): void => {
    if (content.length > 0) items.push(encodeContentItem(message.role, content));
    content = [];
  };
  for (const part of message.parts) {
    if (part.type === 'text' || part.type === 'image' || part.type === 'file') {
      content.push(part);
      continue;
    }
    flush();
    const item = encodeItemPart(part, upstreamModel);
    if (item !== undefined) items.push(item);
  }
  flush();
  return items;
}

function encodeItemPart(part: Exclude<CanonicalPart, ContentPart>, upstreamModel: string): Item | undefined {
  switch (part.type) {
    case 'tool_call':
      // Custom tools were declared as functions upstream, so their calls are function calls too.
      return { type: 'function_call', call_id: part.id, name: part.name, arguments: part.arguments };
    case 'tool_result':
      return { type: 'function_call_output', call_id: part.callId, output: encodeToolOutput(part.content) };
    case 'reasoning':
      return encodeReasoning(part, upstreamModel);
    default: {
      const unreachable: never = part;
      throw new Error(`Unknown canonical part: ${JSON.stringify(unreachable)}`);
    }
  }
}

function encodeContentItem(role: CanonicalMessage['role'], parts: ContentPart[]): Item {
  if (role === 'assistant') {
    // Earlier answers go back as output text; the API takes them without ids when nothing is stored.
    const content = parts.filter((part) => part.type === 'text').map((part) => ({ type: 'output_text', text: part.text, annotations: [] }));
    return { type: 'message', role: 'assistant', content };
  }
  return { type: 'message', role: 'user', content: parts.map(encodeContentPart) };
}

function encodeContentPart(part: ContentPart): Item {
  switch (part.type) {
    case 'text':
      return { type: 'input_text', text: part.text };
    case 'image':
      return { type: 'input_image', image_url: part.url, detail: part.detail ?? 'auto' };
    case 'file':
      return { type: 'input_file', filename: part.filename ?? DEFAULT_FILENAME, file_data: `data:${part.mediaType};base64,${part.data}` };
    default: {
      const unreachable: never = part;
      throw new Error(`Unknown canonical content part: ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Responses has no error flag on outputs; the text of the result says what went wrong. */
function encodeToolOutput(content: Extract<CanonicalPart, { type: 'tool_result' }>['content']): string | Item[] {
  return typeof content === 'string' ? content : content.map(encodeContentPart);
}

/**
 * Restores reasoning only where it came from: encrypted content of this protocol and the same
 * upstream model (docs/translation.md "Reasoning"). Anything else is left out; it is not a
 * top-level field, so it is not reported either.
 */
function encodeReasoning(part: ReasoningPart, upstreamModel: string): Item | undefined {
  const origin = part.origin;
  if (origin?.protocol !== RESPONSES_PROTOCOL || origin.upstreamModel !== upstreamModel) return undefined;
  if (part.opaque?.kind !== 'encrypted') return undefined;
  const summary = part.summary ?? (part.text === '' ? [] : [part.text]);
  const item: Item = { type: 'reasoning' };
  if (part.opaque.itemId !== undefined) item.id = part.opaque.itemId;
  item.summary = summary.map((text) => ({ type: 'summary_text', text }));
  item.encrypted_content = part.opaque.value;
  return item;
}

/** `strict: false` unless set: responses would otherwise make every function strict. */
function encodeTool(tool: CanonicalTool): Item {
  const encoded: Item = { type: 'function', name: tool.name };
  if (tool.description !== undefined) encoded.description = tool.description;
  encoded.parameters = tool.parameters;
  encoded.strict = tool.strict ?? false;
  return encoded;
}

function encodeToolChoice(choice: CanonicalToolChoice): string | Item {
  switch (choice.type) {
    case 'auto':
    case 'none':
    case 'required':
      return choice.type;
    case 'tool':
      return { type: 'function', name: choice.name };
    default: {
      const unreachable: never = choice;
      throw new Error(`Unknown canonical tool choice: ${JSON.stringify(unreachable)}`);
    }
  }
}
