import {
  asRecord,
  measureInput,
  newId,
  opaqueToken,
  optionalNumber,
  planReply,
  splitFixed,
  splitWords,
  textOf,
  type Reply,
  type ReplyUsage,
  type ToolChoice,
  type ToolSpec,
  type Turn,
} from './scripted-model';
import { jsonEvent } from './sse-writer';
import type { Route, RouteContext, SseEvent } from './simulator-types';

/**
 * Anthropic Messages: `POST /v1/messages` (JSON or named SSE events) and
 * `POST /v1/messages/count_tokens`.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 * @see https://docs.anthropic.com/en/api/messages-count-tokens
 */

type ContentBlock =
  { type: 'thinking'; thinking: string; signature: string } | { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

interface MessageFrame {
  id: string;
  model: string;
}

export const messagesRoute: Route = {
  vendor: 'anthropic',
  async handle(context) {
    const problem = findProblem(context, true);
    if (problem) return context.reject(400, problem);
    const turn = decodeMessagesTurn(context.body, context.rawBody);
    const reply = planReply(turn);
    const frame = { id: newId('msg_01'), model: turn.model };
    const content = buildContent(reply, turn.model);
    if (context.body.stream === true) return context.events(encodeMessageStream(reply, frame, content));
    return context.json(200, encodeMessage(reply, frame, content));
  },
};

/** Counts what a Messages call would bill as input; cached or not, every token counts here. */
export const countTokensRoute: Route = {
  vendor: 'anthropic',
  async handle(context) {
    const problem = findProblem(context, false);
    if (problem) return context.reject(400, problem);
    return context.json(200, { input_tokens: decodeMessagesTurn(context.body, context.rawBody).inputTokens });
  },
};

function findProblem(context: RouteContext, needsMaxTokens: boolean): string | undefined {
  const headers = context.request.headers;
  // `messages-version` is the neutral name the gateway specification uses for the version header.
  if (!headers['anthropic-version'] && !headers['messages-version']) return 'anthropic-version: header is required';
  const body = context.body;
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (needsMaxTokens && typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  return undefined;
}

export function decodeMessagesTurn(body: Record<string, unknown>, rawBody: string): Turn {
  const messages = arrayOfRecords(body.messages);
  const last = messages[messages.length - 1] ?? {};
  const lastUser = [...messages].reverse().find((message) => message.role === 'user');
  const toolResult = last.role === 'user' ? arrayOfRecords(last.content).find((block) => block.type === 'tool_result') : undefined;
  const thinking = asRecord(body.thinking).type;
  return {
    model: body.model as string,
    userText: textOf(lastUser?.content),
    endsWithUser: last.role === 'user' && toolResult === undefined,
    toolResult: toolResult === undefined ? undefined : textOf(toolResult.content),
    tools: decodeTools(body.tools),
    toolChoice: decodeToolChoice(body.tool_choice),
    allowParallelCalls: asRecord(body.tool_choice).disable_parallel_tool_use !== true,
    reasoning: thinking === 'enabled' || thinking === 'adaptive',
    outputLimit: optionalNumber(body.max_tokens),
    ...measureInput({ system: body.system, messages: body.messages }, rawBody),
  };
}

function arrayOfRecords(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.map(asRecord) : [];
}

/** Client tools have no `type` (or `custom`); typed server tools (web search…) are not called. */
function decodeTools(tools: unknown): ToolSpec[] {
  return arrayOfRecords(tools)
    .filter((tool) => tool.type === undefined || tool.type === 'custom')
    .map((tool) => ({ name: String(tool.name), parameters: tool.input_schema }));
}

function decodeToolChoice(choice: unknown): ToolChoice {
  const record = asRecord(choice);
  switch (record.type) {
    case 'none':
      return { kind: 'none' };
    case 'any':
      return { kind: 'required' };
    case 'tool':
      return typeof record.name === 'string' ? { kind: 'named', name: record.name } : { kind: 'auto' };
    default:
      return { kind: 'auto' };
  }
}

function buildContent(reply: Reply, model: string): ContentBlock[] {
  const content: ContentBlock[] = [];
  if (reply.reasoning !== undefined) {
    const signature = opaqueToken(`thinking:${model}`, reply.reasoning);
    content.push({ type: 'thinking', thinking: reply.reasoning, signature });
  }
  if (reply.toolCalls.length === 0) content.push({ type: 'text', text: reply.text });
  for (const call of reply.toolCalls) {
    content.push({ type: 'tool_use', id: newId('toolu_01'), name: call.name, input: JSON.parse(call.arguments) });
  }
  return content;
}

function stopReason(reply: Reply): string {
  if (reply.toolCalls.length > 0) return 'tool_use';
  return reply.truncated ? 'max_tokens' : 'end_turn';
}

/**
 * Anthropic counts cached input apart: `input_tokens` excludes what `cache_read_input_tokens` and
 * `cache_creation_input_tokens` hold; `cache_creation` splits the writes by duration (zeros
 * without any). Thinking tokens are part of `output_tokens`, detailed when the model thought.
 */
export function encodeMessagesUsage(usage: ReplyUsage): Record<string, unknown> {
  const cacheWrites = usage.cacheWrite5mTokens + usage.cacheWrite1hTokens;
  return {
    input_tokens: usage.inputTokens - usage.cachedTokens - cacheWrites,
    cache_creation_input_tokens: cacheWrites,
    cache_read_input_tokens: usage.cachedTokens,
    cache_creation: { ephemeral_5m_input_tokens: usage.cacheWrite5mTokens, ephemeral_1h_input_tokens: usage.cacheWrite1hTokens },
    output_tokens: usage.outputTokens,
    ...(usage.reasoningTokens > 0 ? { output_tokens_details: { thinking_tokens: usage.reasoningTokens } } : {}),
    service_tier: 'standard',
  };
}

function encodeMessage(reply: Reply, frame: MessageFrame, content: ContentBlock[]): Record<string, unknown> {
  return {
    id: frame.id,
    type: 'message',
    role: 'assistant',
    model: frame.model,
    content,
    stop_reason: stopReason(reply),
    stop_sequence: null,
    usage: encodeMessagesUsage(reply.usage),
  };
}

/**
 * `message_start` (output_tokens not yet known, reported as 1 like the API; the cache writes by
 * duration only here), per block `content_block_start` / deltas / `content_block_stop` with a
 * `ping` after the first start, then `message_delta` whose usage figures are cumulative totals
 * (the thinking tokens among them), then `message_stop`.
 */
function encodeMessageStream(reply: Reply, frame: MessageFrame, content: ContentBlock[]): SseEvent[] {
  const event = (data: Record<string, unknown>) => jsonEvent(data, String(data.type));
  const usage = encodeMessagesUsage(reply.usage);
  const { output_tokens_details, ...startUsage } = usage;
  const events = [
    event({
      type: 'message_start',
      message: { ...encodeMessage(reply, frame, []), stop_reason: null, usage: { ...startUsage, output_tokens: 1 } },
    }),
  ];
  content.forEach((block, index) => {
    events.push(event({ type: 'content_block_start', index, content_block: openingOf(block) }));
    if (index === 0) events.push(event({ type: 'ping' }));
    for (const delta of deltasOf(block)) events.push(event({ type: 'content_block_delta', index, delta }));
    events.push(event({ type: 'content_block_stop', index }));
  });
  const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = usage;
  const deltaUsage = { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens };
  events.push(
    event({
      type: 'message_delta',
      delta: { stop_reason: stopReason(reply), stop_sequence: null },
      usage: output_tokens_details === undefined ? deltaUsage : { ...deltaUsage, output_tokens_details },
    }),
  );
  events.push(event({ type: 'message_stop' }));
  return events;
}

function openingOf(block: ContentBlock): ContentBlock {
  switch (block.type) {
    case 'thinking':
      return { type: 'thinking', thinking: '', signature: '' };
    case 'text':
      return { type: 'text', text: '' };
    case 'tool_use':
      return { ...block, input: {} };
  }
}

/** Thinking streams its text then its signature; tool input streams as raw JSON pieces. */
function deltasOf(block: ContentBlock): Record<string, unknown>[] {
  switch (block.type) {
    case 'thinking':
      return [...splitWords(block.thinking).map((thinking) => ({ type: 'thinking_delta', thinking })), { type: 'signature_delta', signature: block.signature }];
    case 'text':
      return splitWords(block.text).map((text) => ({ type: 'text_delta', text }));
    case 'tool_use':
      return ['', ...splitFixed(JSON.stringify(block.input))].map((partial_json) => ({ type: 'input_json_delta', partial_json }));
  }
}
