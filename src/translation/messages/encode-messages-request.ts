import type { CanonicalRequest, CanonicalTool, Mapped, ReasoningEffort } from '../canonical/request';
import { encodeMessagesTurns } from './encode-messages-content';

/**
 * The canonical request → a messages upstream request (the responses entry translating to a
 * model that only speaks messages).
 * @see https://docs.anthropic.com/en/api/messages
 */

/** Thinking budgets per strength (docs/translation.md "Reasoning"). */
const THINKING_BUDGET: Record<ReasoningEffort, number> = {
  // The API's smallest budget: the weakest the upstream can think at all.
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24576,
};
/** The API refuses budgets below this, and the budget must stay below `max_tokens`. */
const MINIMUM_THINKING_BUDGET = 1024;

export function encodeMessagesRequest(request: CanonicalRequest): Mapped<Record<string, unknown>> {
  const dropped: string[] = [];
  const thinking = encodeThinking(request, dropped);
  const system = request.system.filter((text) => text !== '');
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxOutputTokens,
    ...(system.length > 0 && { system: system.join('\n\n') }),
    messages: encodeMessagesTurns(request.messages, request.model),
    ...encodeTools(request),
    ...(thinking && { thinking }),
    ...encodeSampling(request, thinking !== undefined, dropped),
    ...(request.stop && request.stop.length > 0 && { stop_sequences: request.stop }),
    stream: request.stream,
  };
  return { value: body, dropped, ignored: [] };
}

/**
 * `{type:"enabled", budget_tokens}`, or nothing when the output limit leaves no room for the
 * smallest budget or a tool use is forced (the API refuses thinking with both); reasoning that
 * was asked for and cannot be sent is reported as dropped.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
 */
function encodeThinking(request: CanonicalRequest, dropped: string[]): Record<string, unknown> | undefined {
  if (!request.reasoning) return undefined;
  const forcesTool = request.toolChoice?.type === 'required' || request.toolChoice?.type === 'tool';
  if (request.maxOutputTokens <= MINIMUM_THINKING_BUDGET || forcesTool) {
    dropped.push('reasoning');
    return undefined;
  }
  const budget = Math.max(Math.min(THINKING_BUDGET[request.reasoning.effort], request.maxOutputTokens - 1), MINIMUM_THINKING_BUDGET);
  return { type: 'enabled', budget_tokens: budget };
}

/** With thinking on the API refuses a changed `temperature` or `top_p`; they are dropped then. */
function encodeSampling(request: CanonicalRequest, thinking: boolean, dropped: string[]): Record<string, unknown> {
  const sampling: Record<string, unknown> = {};
  if (request.temperature !== undefined) {
    if (thinking) dropped.push('temperature');
    else sampling.temperature = request.temperature;
  }
  if (request.topP !== undefined) {
    if (thinking) dropped.push('topP');
    else sampling.top_p = request.topP;
  }
  return sampling;
}

/** Tool choice means nothing without tools, so it is only sent along with them. */
function encodeTools(request: CanonicalRequest): Record<string, unknown> {
  if (request.tools.length === 0) return {};
  const toolChoice = encodeToolChoice(request);
  return { tools: request.tools.map(encodeTool), ...(toolChoice && { tool_choice: toolChoice }) };
}

function encodeTool(tool: CanonicalTool): Record<string, unknown> {
  return {
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    input_schema: tool.parameters,
    ...(tool.strict !== undefined && { strict: tool.strict }),
  };
}

/** @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use */
function encodeToolChoice(request: CanonicalRequest): Record<string, unknown> | undefined {
  const serial = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  const choice = request.toolChoice ?? (request.parallelToolCalls === false ? { type: 'auto' as const } : undefined);
  switch (choice?.type) {
    case undefined:
      return undefined;
    case 'auto':
      return { type: 'auto', ...serial };
    case 'required':
      return { type: 'any', ...serial };
    case 'tool':
      return { type: 'tool', name: choice.name, ...serial };
    // `none` takes no parallel setting: no tool is called at all.
    case 'none':
      return { type: 'none' };
    default: {
      const unreachable: never = choice;
      throw new Error(`Unhandled tool choice: ${JSON.stringify(unreachable)}`);
    }
  }
}
