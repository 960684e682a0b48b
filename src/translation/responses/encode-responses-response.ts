import type { TranslationContext } from '../canonical/ids';
import { sealReasoning } from '../canonical/reasoning-seal';
import type { CanonicalOutputPart, CanonicalResponse, CanonicalUsage, StopReason } from '../canonical/response';
import { asRecord, unwrapCustomInput } from './responses-values';

/**
 * Canonical response → a Response object for a responses client, complete enough for the
 * official SDK (it reads `output`, `status`, `usage` and derives `output_text` itself). The
 * stream encoder builds its snapshots and final response with the same functions.
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */

/** What the answer encoders need from the client request. */
export interface ResponsesAnswerRequest {
  /** The client's request body: fields the Response object repeats (instructions, tools, …). */
  echo: Record<string, unknown>;
  /** The client asked for `reasoning.encrypted_content`, to continue reasoning. */
  includeOpaqueReasoning: boolean;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** The parts of a Response that change while it is produced; the rest is fixed at creation. */
export interface ResponseState {
  status: ResponseStatus;
  output: Record<string, unknown>[];
  usage?: CanonicalUsage;
  completedAt?: number;
  incompleteReason?: 'max_output_tokens' | 'content_filter';
  error?: { code: string; message: string };
}

export interface ResponseFrame {
  id: string;
  createdAt: number;
  model: string;
}

export function encodeResponsesResponse(response: CanonicalResponse, request: ResponsesAnswerRequest, context: TranslationContext): Record<string, unknown> {
  const frame: ResponseFrame = { id: context.newId('resp'), createdAt: context.now(), model: response.model };
  const output = response.output.map((part) => encodeOutputItem(part, context.newId(itemIdPrefix(part)), request));
  return encodeResponseObject(frame, finishedState(response.stopReason, output, response.usage, context.now()), request.echo);
}

/** The final state for a stop reason: truncation and filtering are `incomplete`, the rest `completed`. */
export function finishedState(stopReason: StopReason, output: Record<string, unknown>[], usage: CanonicalUsage, now: number): ResponseState {
  const incompleteReason = incompleteReasonOf(stopReason);
  if (incompleteReason === undefined) return { status: 'completed', output, usage, completedAt: now };
  return { status: 'incomplete', output, usage, incompleteReason };
}

/**
 * A pause (a long turn the upstream stopped to resume later) and a refusal still end the
 * response normally in responses terms: the output says what happened.
 * @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-incomplete_details
 */
function incompleteReasonOf(stopReason: StopReason): ResponseState['incompleteReason'] {
  switch (stopReason) {
    case 'end':
    case 'tool_calls':
    case 'stop_sequence':
    case 'refusal':
    case 'pause':
      return undefined;
    case 'max_tokens':
      return 'max_output_tokens';
    case 'content_filter':
      return 'content_filter';
    default: {
      const unreachable: never = stopReason;
      throw new Error(`Unknown stop reason: ${String(unreachable)}`);
    }
  }
}

/** Output item id prefixes the real API uses, which some clients check. */
export function itemIdPrefix(part: Pick<CanonicalOutputPart, 'type'> & { kind?: 'function' | 'custom' }): string {
  switch (part.type) {
    case 'text':
      return 'msg';
    case 'tool_call':
      return part.kind === 'custom' ? 'ctc' : 'fc';
    case 'reasoning':
      return 'rs';
    default: {
      const unreachable: never = part.type;
      throw new Error(`Unknown output part: ${String(unreachable)}`);
    }
  }
}

/**
 * One finished output item. Items are always `completed`: the stream closes an item before the
 * upstream says why it stopped, and the Response's own status carries a truncation.
 */
export function encodeOutputItem(part: CanonicalOutputPart, id: string, request: ResponsesAnswerRequest): Record<string, unknown> {
  switch (part.type) {
    case 'text':
      return { id, type: 'message', status: 'completed', content: [outputText(part.text)], role: 'assistant' };
    case 'tool_call':
      if (part.kind === 'custom') {
        return { id, type: 'custom_tool_call', status: 'completed', call_id: part.id, input: unwrapCustomInput(part.arguments), name: part.name };
      }
      return { id, type: 'function_call', status: 'completed', arguments: part.arguments, call_id: part.id, name: part.name };
    case 'reasoning':
      return encodeReasoningItem(part, id, request);
    default: {
      const unreachable: never = part;
      throw new Error(`Unknown output part: ${JSON.stringify(unreachable)}`);
    }
  }
}

export function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', annotations: [], logprobs: [], text };
}

/**
 * A summary is shown only when the client asked for one (`reasoning.summary`), as the API does.
 * The seal keeps the full text either way: a messages upstream verifies it on continuation.
 */
function encodeReasoningItem(part: Extract<CanonicalOutputPart, { type: 'reasoning' }>, id: string, request: ResponsesAnswerRequest): Record<string, unknown> {
  const summary = wantsSummary(request.echo) ? summaryTexts(part) : [];
  const item: Record<string, unknown> = { id, type: 'reasoning', summary: summary.map(summaryText) };
  if (request.includeOpaqueReasoning && part.opaque !== undefined && part.origin !== undefined) {
    const { kind, value, itemId } = part.opaque;
    item.encrypted_content = sealReasoning({ origin: part.origin, kind, value, text: part.text, itemId });
  }
  return item;
}

export function wantsSummary(echo: Record<string, unknown>): boolean {
  const reasoning = asRecord(echo.reasoning);
  const summary = reasoning.summary ?? reasoning.generate_summary;
  return summary !== undefined && summary !== null;
}

function summaryTexts(part: Extract<CanonicalOutputPart, { type: 'reasoning' }>): string[] {
  if (part.summary !== undefined) return part.summary;
  return part.text === '' ? [] : [part.text];
}

export function summaryText(text: string): Record<string, unknown> {
  return { type: 'summary_text', text };
}

/**
 * Unknown usage figures become 0 here: the Response object has no way to say "not reported",
 * and the SDK types them as numbers.
 */
export function encodeResponsesUsage(usage: CanonicalUsage): Record<string, unknown> {
  const input = usage.inputTokens ?? 0;
  const output = usage.outputTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: input + output,
  };
}

/**
 * The Response object in the API's own field order. Request fields are repeated from the
 * client's body with the API's defaults; `store` is false because the gateway stores nothing.
 */
export function encodeResponseObject(frame: ResponseFrame, state: ResponseState, echo: Record<string, unknown>): Record<string, unknown> {
  const reasoning = asRecord(echo.reasoning);
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    status: state.status,
    background: false,
    completed_at: state.completedAt ?? null,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason === undefined ? null : { reason: state.incompleteReason },
    instructions: echo.instructions ?? null,
    max_output_tokens: echo.max_output_tokens ?? null,
    max_tool_calls: echo.max_tool_calls ?? null,
    model: frame.model,
    output: state.output,
    parallel_tool_calls: echo.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: echo.prompt_cache_key ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? reasoning.generate_summary ?? null },
    safety_identifier: echo.safety_identifier ?? null,
    service_tier: 'default',
    store: false,
    temperature: echo.temperature ?? 1,
    text: echo.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: echo.tool_choice ?? 'auto',
    tools: echo.tools ?? [],
    top_logprobs: echo.top_logprobs ?? 0,
    top_p: echo.top_p ?? 1,
    truncation: echo.truncation ?? 'disabled',
    usage: state.usage === undefined ? null : encodeResponsesUsage(state.usage),
    user: echo.user ?? null,
    metadata: echo.metadata ?? {},
  };
}
