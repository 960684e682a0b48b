import type { ReasoningOrigin } from '../canonical/request';
import { knownUsage, tokenCount, type CanonicalOutputPart, type CanonicalResponse, type CanonicalUsage, type StopReason } from '../canonical/response';
import { definedOnly } from '../members';
import { asRecord, nonEmptyString, records, stringOr, wrapCustomInput } from './responses-values';

/**
 * OpenAI Responses answer (a Response object) → canonical response.
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */

type ReasoningOutput = Extract<CanonicalOutputPart, { type: 'reasoning' }>;

export function decodeResponsesResponse(body: unknown, origin: ReasoningOrigin): CanonicalResponse {
  const response = asRecord(body);
  if (response.object !== 'response' && !Array.isArray(response.output)) {
    throw new Error('The upstream answer is not a Response object: it has no output.');
  }
  if (response.status === 'failed' || response.status === 'cancelled') {
    const error = asRecord(response.error);
    throw new Error(`The upstream response ${String(response.status)}: ${stringOr(error.message, 'no reason given')}`);
  }
  const output = records(response.output).flatMap((item) => decodeOutputItem(item, origin));
  const refused = records(response.output).some((item) => records(item.content).some((part) => part.type === 'refusal'));
  return {
    id: stringOr(response.id, ''),
    model: stringOr(response.model, ''),
    output,
    stopReason: decodeResponsesEnding(response, { calledTools: output.some((part) => part.type === 'tool_call'), refused }),
    usage: decodeResponsesUsage(response.usage),
  };
}

/**
 * Hosted-tool items (web search, …) cannot appear: the gateway declares none upstream. Refusals
 * become text, as the model's answer to show; the stop reason says it was one.
 */
function decodeOutputItem(item: Record<string, unknown>, origin: ReasoningOrigin): CanonicalOutputPart[] {
  switch (item.type) {
    case 'message':
      return records(item.content).flatMap((part): CanonicalOutputPart[] => {
        if (part.type === 'output_text') return [{ type: 'text', text: stringOr(part.text, '') }];
        if (part.type === 'refusal') return [{ type: 'text', text: stringOr(part.refusal, '') }];
        return [];
      });
    case 'function_call':
      return [{ type: 'tool_call', ...callOf(item), arguments: stringOr(item.arguments, ''), kind: 'function' }];
    case 'custom_tool_call':
      return [{ type: 'tool_call', ...callOf(item), arguments: wrapCustomInput(stringOr(item.input, '')), kind: 'custom' }];
    case 'reasoning':
      return [decodeReasoningItem(item, origin)];
    default:
      return [];
  }
}

function callOf(item: Record<string, unknown>): { id: string; name: string } {
  return { id: stringOr(item.call_id, ''), name: stringOr(item.name, '') };
}

/** Summary parts joined by a blank line, the separator the stream decoder also uses. */
export const SUMMARY_SEPARATOR = '\n\n';

function decodeReasoningItem(item: Record<string, unknown>, origin: ReasoningOrigin): ReasoningOutput {
  const summary = records(item.summary).map((part) => stringOr(part.text, ''));
  const reasoning: ReasoningOutput = { type: 'reasoning', text: summary.join(SUMMARY_SEPARATOR), origin };
  if (summary.length > 0) reasoning.summary = summary;
  if (typeof item.encrypted_content === 'string') {
    reasoning.opaque = definedOnly({ kind: 'encrypted' as const, value: item.encrypted_content, itemId: nonEmptyString(item.id) });
  }
  return reasoning;
}

/** What the Response says about how it ended, in the terms `mapResponsesEnding` switches over. */
export type ResponsesEnding = 'completed' | 'max_output_tokens' | 'content_filter';

export interface EndingContext {
  /** The output holds function or custom tool calls: the model waits for their results. */
  calledTools: boolean;
  /** A refusal content part came: responses still says `completed`. */
  refused: boolean;
}

/**
 * `status` and `incomplete_details.reason` → ending. An incomplete response with an unknown
 * reason was still cut short, and the output limit is the documented way that happens.
 */
export function decodeResponsesEnding(response: Record<string, unknown>, context: EndingContext): StopReason {
  if (response.status !== 'incomplete') return mapResponsesEnding('completed', context);
  const reason = asRecord(response.incomplete_details).reason;
  return mapResponsesEnding(reason === 'content_filter' ? 'content_filter' : 'max_output_tokens', context);
}

/** @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-incomplete_details */
export function mapResponsesEnding(ending: ResponsesEnding, context: EndingContext): StopReason {
  switch (ending) {
    case 'completed':
      if (context.calledTools) return 'tool_calls';
      return context.refused ? 'refusal' : 'end';
    case 'max_output_tokens':
      return 'max_tokens';
    case 'content_filter':
      return 'content_filter';
    default: {
      const unreachable: never = ending;
      throw new Error(`Unknown responses ending: ${String(unreachable)}`);
    }
  }
}

/**
 * Responses usage → canonical usage: `input_tokens` already counts cached tokens and
 * `output_tokens` reasoning tokens, as canonical figures do. Missing figures stay undefined.
 * The one reader of responses usage: native calls are metered from it too (metering/usage-figures.ts).
 * @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage
 */
export function decodeResponsesUsage(value: unknown): CanonicalUsage {
  const usage = asRecord(value);
  return knownUsage({
    inputTokens: tokenCount(usage.input_tokens),
    cachedInputTokens: tokenCount(asRecord(usage.input_tokens_details).cached_tokens),
    outputTokens: tokenCount(usage.output_tokens),
    reasoningTokens: tokenCount(asRecord(usage.output_tokens_details).reasoning_tokens),
  });
}
