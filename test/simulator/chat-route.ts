import {
  asRecord,
  measureInput,
  newId,
  optionalNumber,
  planReply,
  splitFixed,
  splitWords,
  textOf,
  unixSeconds,
  type Reply,
  type ReplyUsage,
  type ToolChoice,
  type ToolSpec,
  type Turn,
} from './scripted-model';
import { jsonEvent, obfuscation } from './sse-writer';
import type { Route, SseEvent } from './simulator-types';

/**
 * OpenAI Chat Completions: `POST /v1/chat/completions`, JSON or SSE (`data:` lines only,
 * ended by `data: [DONE]`).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://platform.openai.com/docs/api-reference/chat-streaming
 */

const SYSTEM_FINGERPRINT = 'fp_sim0000001';

interface ChatFrame {
  id: string;
  created: number;
  model: string;
}

interface StreamOptions {
  includeUsage: boolean;
  includeObfuscation: boolean;
}

export const chatRoute: Route = {
  vendor: 'openai',
  async handle(context) {
    const problem = findProblem(context.body);
    if (problem) return context.reject(400, problem);
    const turn = decodeChatTurn(context.body, context.rawBody);
    const reply = planReply(turn);
    const frame = { id: newId('chatcmpl-', 29), created: unixSeconds(), model: turn.model };
    if (context.body.stream !== true) return context.json(200, encodeChatCompletion(reply, frame));
    const streamOptions = asRecord(context.body.stream_options);
    return context.events(
      encodeChatStream(reply, frame, {
        includeUsage: streamOptions.include_usage === true,
        includeObfuscation: streamOptions.include_obfuscation !== false,
      }),
    );
  },
};

function findProblem(body: Record<string, unknown>): string | undefined {
  if (typeof body.model !== 'string') return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "Missing required parameter: 'messages'.";
  return undefined;
}

export function decodeChatTurn(body: Record<string, unknown>, rawBody: string): Turn {
  const messages = (body.messages as unknown[]).map(asRecord);
  const last = messages[messages.length - 1];
  const lastUser = [...messages].reverse().find((message) => message.role === 'user');
  return {
    model: body.model as string,
    userText: textOf(lastUser?.content),
    endsWithUser: last.role === 'user',
    toolResult: last.role === 'tool' ? textOf(last.content) : undefined,
    tools: decodeTools(body.tools),
    toolChoice: decodeToolChoice(body.tool_choice),
    allowParallelCalls: body.parallel_tool_calls !== false,
    reasoning: typeof body.reasoning_effort === 'string' && body.reasoning_effort !== 'none',
    outputLimit: optionalNumber(body.max_completion_tokens, body.max_tokens),
    ...measureInput(body.messages, rawBody),
  };
}

function decodeTools(tools: unknown): ToolSpec[] {
  if (!Array.isArray(tools)) return [];
  return tools
    .map(asRecord)
    .filter((tool) => tool.type === 'function')
    .map((tool) => asRecord(tool.function))
    .map((definition) => ({ name: String(definition.name), parameters: definition.parameters }));
}

function decodeToolChoice(choice: unknown): ToolChoice {
  if (choice === 'none' || choice === 'required' || choice === 'auto') return { kind: choice };
  const name = asRecord(asRecord(choice).function).name;
  return typeof name === 'string' ? { kind: 'named', name } : { kind: 'auto' };
}

function finishReason(reply: Reply): string {
  if (reply.toolCalls.length > 0) return 'tool_calls';
  return reply.truncated ? 'length' : 'stop';
}

export function encodeChatUsage(usage: ReplyUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: usage.reasoningTokens,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function withCallIds(reply: Reply): { id: string; name: string; arguments: string }[] {
  return reply.toolCalls.map((call) => ({ id: newId('call_'), ...call }));
}

export function encodeChatCompletion(reply: Reply, frame: ChatFrame): Record<string, unknown> {
  const calls = withCallIds(reply);
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: calls.length > 0 ? null : reply.text,
    refusal: null,
    annotations: [],
  };
  if (calls.length > 0) {
    message.tool_calls = calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: frame.id,
    object: 'chat.completion',
    created: frame.created,
    model: frame.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(reply) }],
    usage: encodeChatUsage(reply.usage),
    service_tier: 'default',
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}

/**
 * Chunks: a role chunk, content or tool-call deltas, a chunk with `finish_reason`, then (only
 * with `include_usage`) a chunk with `choices: []` and the usage; ordinary chunks then carry
 * `"usage": null`, as the API documents.
 */
export function encodeChatStream(reply: Reply, frame: ChatFrame, options: StreamOptions): SseEvent[] {
  const chunk = (choices: unknown[], usage: unknown = null): SseEvent => {
    const data: Record<string, unknown> = {
      id: frame.id,
      object: 'chat.completion.chunk',
      created: frame.created,
      model: frame.model,
      service_tier: 'default',
      system_fingerprint: SYSTEM_FINGERPRINT,
      choices,
    };
    if (options.includeUsage) data.usage = usage;
    if (options.includeObfuscation) data.obfuscation = obfuscation(JSON.stringify(choices));
    return jsonEvent(data);
  };
  const choice = (delta: unknown, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish });
  const deltas = reply.toolCalls.length > 0 ? toolCallDeltas(reply) : textDeltas(reply);
  const events = deltas.map((delta) => chunk([choice(delta)]));
  events.push(chunk([choice({}, finishReason(reply))]));
  if (options.includeUsage) events.push(chunk([], encodeChatUsage(reply.usage)));
  events.push({ data: '[DONE]' });
  return events;
}

function textDeltas(reply: Reply): unknown[] {
  const opening = { role: 'assistant', content: '', refusal: null };
  return [opening, ...splitWords(reply.text).map((piece) => ({ content: piece }))];
}

/** Each call opens with its id, type and name; its arguments follow in pieces under the same index. */
function toolCallDeltas(reply: Reply): unknown[] {
  const deltas: unknown[] = [];
  withCallIds(reply).forEach((call, index) => {
    const opening = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    deltas.push(index === 0 ? { role: 'assistant', content: null, tool_calls: [opening], refusal: null } : { tool_calls: [opening] });
    for (const piece of splitFixed(call.arguments)) {
      deltas.push({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
  });
  return deltas;
}
