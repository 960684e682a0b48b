import { asRecord, newId, opaqueToken, unixSeconds, type Reply, type ReplyUsage } from './scripted-model';

/**
 * OpenAI Responses objects: output items and the Response itself, shared by the JSON answer and
 * the snapshots inside stream events.
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */

export interface ResponseFrame {
  id: string;
  createdAt: number;
  model: string;
  body: Record<string, unknown>;
}

/** Output items in their final form; the stream builds them up event by event. */
export type OutputItem =
  | { type: 'reasoning'; id: string; summary: { type: 'summary_text'; text: string }[]; encrypted_content?: string }
  | { type: 'message'; id: string; status: string; content: OutputText[]; role: 'assistant' }
  | { type: 'function_call'; id: string; status: string; arguments: string; call_id: string; name: string };

export interface OutputText {
  type: 'output_text';
  annotations: unknown[];
  logprobs: unknown[];
  text: string;
}

/** Reasoning first (summary only when asked, encrypted content only when included), then the answer. */
export function buildOutput(reply: Reply, body: Record<string, unknown>): OutputItem[] {
  const output: OutputItem[] = [];
  if (reply.reasoning !== undefined) output.push(reasoningItem(reply.reasoning, body));
  if (reply.toolCalls.length === 0) {
    const text: OutputText = { type: 'output_text', annotations: [], logprobs: [], text: reply.text };
    const status = reply.truncated ? 'incomplete' : 'completed';
    output.push({ type: 'message', id: newId('msg_', 48), status, content: [text], role: 'assistant' });
  }
  for (const call of reply.toolCalls) {
    output.push({ type: 'function_call', id: newId('fc_', 48), status: 'completed', call_id: newId('call_'), ...call });
  }
  return output;
}

function reasoningItem(reasoning: string, body: Record<string, unknown>): OutputItem {
  const wantsSummary = typeof asRecord(body.reasoning).summary === 'string';
  const include = Array.isArray(body.include) ? body.include : [];
  const item: OutputItem = {
    type: 'reasoning',
    id: newId('rs_', 48),
    summary: wantsSummary ? [{ type: 'summary_text', text: reasoning }] : [],
  };
  if (include.includes('reasoning.encrypted_content')) {
    item.encrypted_content = `gAAAAAB${opaqueToken('reasoning', reasoning)}`;
  }
  return item;
}

export function encodeResponsesUsage(usage: ReplyUsage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

/** Without a reply the response is still in progress (the `response.created` snapshot). */
export function encodeResponse(frame: ResponseFrame, output: OutputItem[], reply?: Reply): Record<string, unknown> {
  const body = frame.body;
  const reasoning = asRecord(body.reasoning);
  const status = reply === undefined ? 'in_progress' : reply.truncated ? 'incomplete' : 'completed';
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    status,
    background: false,
    completed_at: status === 'completed' ? unixSeconds() : null,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: frame.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage: reply === undefined ? null : encodeResponsesUsage(reply.usage),
    user: null,
    metadata: body.metadata ?? {},
  };
}
