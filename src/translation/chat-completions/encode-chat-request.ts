import type { CanonicalMessage, CanonicalPart, CanonicalRequest, CanonicalTool, CanonicalToolChoice, Mapped } from '../canonical/request';

/**
 * Canonical request → OpenAI chat-completions request body (upstream side only: chat is never a
 * translated entry).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */

type UserPart = Extract<CanonicalPart, { type: 'text' | 'image' | 'file' }>;
type ToolResultPart = Extract<CanonicalPart, { type: 'tool_result' }>;
type ChatContentPart = Record<string, unknown>;
type ChatMessage = Record<string, unknown>;

/**
 * OpenAI rejects an inline `file_data` without a filename ("Missing required parameter ...
 * file.file_id"), so a PDF that came without one gets this name.
 * @see https://github.com/openai/openai-agents-python/pull/1513
 */
const DEFAULT_FILENAME = 'document.pdf';

/** Separator when several text parts must become one chat string (assistant content, tool results). */
const TEXT_SEPARATOR = '\n';

/**
 * Chat carries temperature, top_p and stop, so nothing is ever dropped here. Reasoning parts are
 * always left out: chat has no field for them (docs/translation.md "Reasoning").
 */
export function encodeChatRequest(request: CanonicalRequest): Mapped<Record<string, unknown>> {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: [...request.system.map((text) => ({ role: 'system', content: text })), ...encodeMessages(request.messages)],
  };
  // OpenAI refuses an empty `tools` array, and `tool_choice` / `parallel_tool_calls` without tools.
  if (request.tools.length > 0) {
    body.tools = request.tools.map(encodeTool);
    if (request.toolChoice !== undefined) body.tool_choice = encodeToolChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) body.parallel_tool_calls = request.parallelToolCalls;
  }
  body.max_completion_tokens = request.maxOutputTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.stop !== undefined) body.stop = request.stop;
  // Absent reasoning leaves the model's default: `none` is not accepted by every chat model.
  if (request.reasoning !== undefined) body.reasoning_effort = request.reasoning.effort;
  body.stream = request.stream;
  // Without it the stream carries no usage at all, and metering needs it.
  if (request.stream) body.stream_options = { include_usage: true };
  return { value: body, dropped: [], ignored: [] };
}

/**
 * Chat requires the `tool` messages answering an assistant's calls to follow it directly, before
 * any user message. User content — including images and files out of tool results, which a chat
 * `tool` message cannot hold (its content is text only) — therefore waits in `pendingUser` until
 * the run of tool results ends, and then goes out as one user message.
 */
function encodeMessages(messages: CanonicalMessage[]): ChatMessage[] {
  const output: ChatMessage[] = [];
  let pendingUser: ChatContentPart[] = [];
  const flushUser = (): void => {
    if (pendingUser.length > 0) output.push({ role: 'user', content: userContent(pendingUser) });
    pendingUser = [];
  };
  for (const message of messages) {
    const answersToolCalls = message.parts.some((part) => part.type === 'tool_result');
    if (message.role === 'assistant' || !answersToolCalls) flushUser();
    if (message.role === 'assistant') {
      const assistant = encodeAssistantMessage(message);
      if (assistant !== undefined) output.push(assistant);
      continue;
    }
    const { toolMessages, content } = encodeUserParts(message.parts);
    output.push(...toolMessages);
    pendingUser.push(...content);
  }
  flushUser();
  return output;
}

function encodeUserParts(parts: CanonicalPart[]): { toolMessages: ChatMessage[]; content: ChatContentPart[] } {
  const toolMessages: ChatMessage[] = [];
  const content: ChatContentPart[] = [];
  for (const part of parts) {
    switch (part.type) {
      case 'text':
      case 'image':
      case 'file':
        content.push(encodeContentPart(part));
        break;
      case 'tool_result':
        toolMessages.push(encodeToolResult(part));
        content.push(...mediaOf(part).map(encodeContentPart));
        break;
      case 'tool_call':
      case 'reasoning':
        // A user turn cannot hold calls; reasoning is never carried by chat.
        break;
      default:
        return unreachable(part);
    }
  }
  return { toolMessages, content };
}

/** A lone text part goes as a plain string, the form every chat-compatible upstream accepts. */
function userContent(parts: ChatContentPart[]): string | ChatContentPart[] {
  const only = parts.length === 1 ? parts[0] : undefined;
  return only?.type === 'text' ? (only.text as string) : parts;
}

function encodeContentPart(part: UserPart): ChatContentPart {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image': {
      const imageUrl: Record<string, unknown> = { url: part.url };
      if (part.detail !== undefined) imageUrl.detail = part.detail;
      return { type: 'image_url', image_url: imageUrl };
    }
    case 'file':
      return {
        type: 'file',
        file: { file_data: `data:${part.mediaType};base64,${part.data}`, filename: part.filename ?? DEFAULT_FILENAME },
      };
    default:
      return unreachable(part);
  }
}

/**
 * The error flag of a tool result has no chat counterpart; the result text is sent as is (it
 * normally says what went wrong). Media parts are carried in the following user message.
 */
function encodeToolResult(part: ToolResultPart): ChatMessage {
  const content =
    typeof part.content === 'string'
      ? part.content
      : part.content
          .filter((item) => item.type === 'text')
          .map((item) => item.text)
          .join(TEXT_SEPARATOR);
  return { role: 'tool', tool_call_id: part.callId, content };
}

function mediaOf(part: ToolResultPart): UserPart[] {
  return typeof part.content === 'string' ? [] : part.content.filter((item) => item.type !== 'text');
}

/** Chat assistant messages hold text and tool calls only; a message left empty is not sent. */
function encodeAssistantMessage(message: CanonicalMessage): ChatMessage | undefined {
  const texts: string[] = [];
  const toolCalls: Record<string, unknown>[] = [];
  for (const part of message.parts) {
    if (part.type === 'text') texts.push(part.text);
    if (part.type === 'tool_call') {
      toolCalls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments } });
    }
  }
  if (texts.length === 0 && toolCalls.length === 0) return undefined;
  const assistant: ChatMessage = { role: 'assistant', content: texts.length > 0 ? texts.join(TEXT_SEPARATOR) : null };
  if (toolCalls.length > 0) assistant.tool_calls = toolCalls;
  return assistant;
}

/** Custom tools are already functions with one string parameter `input` in canonical form. */
function encodeTool(tool: CanonicalTool): Record<string, unknown> {
  const definition: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined) definition.description = tool.description;
  definition.parameters = tool.parameters;
  if (tool.strict !== undefined) definition.strict = tool.strict;
  return { type: 'function', function: definition };
}

/** @see https://platform.openai.com/docs/api-reference/chat/create#chat-create-tool_choice */
function encodeToolChoice(choice: CanonicalToolChoice): unknown {
  switch (choice.type) {
    case 'auto':
    case 'none':
    case 'required':
      return choice.type;
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
    default:
      return unreachable(choice);
  }
}

function unreachable(value: never): never {
  throw new Error(`Unexpected canonical value: ${JSON.stringify(value)}`);
}
