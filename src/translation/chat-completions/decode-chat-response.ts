import { knownUsage, tokenCount, type CanonicalOutputPart, type CanonicalResponse, type CanonicalUsage, type StopReason } from '../canonical/response';

/**
 * OpenAI chat-completions answer (JSON) → canonical response. Only `choices[0]` is read: the
 * gateway never asks for `n` > 1.
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */

/** The finish reasons chat documents; `function_call` is the deprecated form of `tool_calls`. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

const CHAT_FINISH_REASONS: readonly string[] = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'];

export function decodeChatResponse(body: unknown): CanonicalResponse {
  const completion = asRecord(body);
  const choices = completion.choices;
  if (!Array.isArray(choices) || choices.length === 0) {
    throw new Error('The upstream answer is not a chat completion: it has no choices.');
  }
  const choice = asRecord(choices[0]);
  const message = asRecord(choice.message);
  const refused = nonEmptyString(message.refusal) !== undefined;
  return {
    id: stringOr(completion.id, ''),
    model: stringOr(completion.model, ''),
    output: decodeMessage(message),
    stopReason: decodeFinishReason(choice.finish_reason, { refused, calledTools: Array.isArray(message.tool_calls) }),
    usage: decodeChatUsage(completion.usage),
  };
}

/**
 * Content and refusal both become text: a refusal is the model's answer to show the client
 * (messages and responses clients have no separate refusal text here), and the stop reason
 * says it was one. Tool calls follow the text, as the model produced them after it.
 */
function decodeMessage(message: Record<string, unknown>): CanonicalOutputPart[] {
  const output: CanonicalOutputPart[] = [];
  for (const text of [nonEmptyString(message.content), nonEmptyString(message.refusal)]) {
    if (text !== undefined) output.push({ type: 'text', text });
  }
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.map(asRecord) : [];
  for (const call of toolCalls) {
    // Only function calls: the gateway declares custom tools to chat as functions too.
    if (call.type !== 'function') continue;
    const definition = asRecord(call.function);
    output.push({
      type: 'tool_call',
      id: stringOr(call.id, ''),
      name: stringOr(definition.name, ''),
      arguments: stringOr(definition.arguments, ''),
      kind: 'function',
    });
  }
  return output;
}

/** What else is known about the answer when its finish reason is read. */
export interface FinishContext {
  /** The model refused (a `refusal` text came): chat then reports a plain `stop`. */
  refused: boolean;
  /** The answer holds tool calls; used only when the upstream gave no finish reason at all. */
  calledTools: boolean;
}

/**
 * Reads a finish reason off the wire. Chat-compatible upstreams sometimes send values of their
 * own (`eos`, `end_turn`) or none: a finished answer without a known reason ended naturally.
 */
export function decodeFinishReason(value: unknown, context: FinishContext): StopReason {
  if (typeof value === 'string' && CHAT_FINISH_REASONS.includes(value)) {
    const stopReason = mapChatFinishReason(value as ChatFinishReason);
    return stopReason === 'end' && context.refused ? 'refusal' : stopReason;
  }
  if (context.refused) return 'refusal';
  return context.calledTools ? 'tool_calls' : 'end';
}

/**
 * Chat's `stop` covers both a natural end and a matched stop string, without saying which
 * string matched, so it maps to `end`.
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices
 */
export function mapChatFinishReason(reason: ChatFinishReason): StopReason {
  switch (reason) {
    case 'stop':
      return 'end';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default: {
      const unreachable: never = reason;
      throw new Error(`Unknown chat finish reason: ${String(unreachable)}`);
    }
  }
}

/**
 * Chat usage → canonical usage. `prompt_tokens` already includes cached tokens and
 * `completion_tokens` reasoning tokens, as canonical figures do. A figure the upstream left out
 * stays undefined (many chat-compatible upstreams send no `*_details`). The one reader of chat
 * usage: native chat calls are metered from it too (metering/usage-figures.ts).
 * @see https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
 */
export function decodeChatUsage(value: unknown): CanonicalUsage {
  const usage = asRecord(value);
  return knownUsage({
    inputTokens: tokenCount(usage.prompt_tokens),
    cachedInputTokens: tokenCount(asRecord(usage.prompt_tokens_details).cached_tokens),
    outputTokens: tokenCount(usage.completion_tokens),
    reasoningTokens: tokenCount(asRecord(usage.completion_tokens_details).reasoning_tokens),
  });
}

export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

export function nonEmptyString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
