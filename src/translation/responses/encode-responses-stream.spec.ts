import type { CanonicalEvent } from '../canonical/events';
import { openReasoning } from '../canonical/reasoning-seal';
import type { SseEvent } from '../sse/decode-sse';
import { AWKWARD_TEXT, deltaOfEachKind } from '../canonical/delta-events.test-kit';
import { decodeResponsesStream } from './decode-responses-stream';
import { encodeResponsesResponse, type ResponsesAnswerRequest } from './encode-responses-response';
import { encodeResponsesStream } from './encode-responses-stream';
import { assemble, collect, fixtureEvents, from, payloads, testContext } from './responses-test-kit';

const origin = { protocol: 'messages', upstreamModel: 'claude-sim-1' };
const withSummary: ResponsesAnswerRequest = { echo: { reasoning: { effort: 'low', summary: 'auto' } }, includeOpaqueReasoning: true };
const plain: ResponsesAnswerRequest = { echo: {}, includeOpaqueReasoning: false };

/** A messages-style answer: thinking, text, a function call and a custom tool call. */
const fullAnswer: CanonicalEvent[] = [
  { type: 'start', id: 'msg_1', model: 'claude-sim-1', usage: { inputTokens: 40, cachedInputTokens: 10 } },
  { type: 'reasoning_start', index: 0, origin },
  { type: 'reasoning_delta', index: 0, text: 'Think ' },
  { type: 'reasoning_delta', index: 0, text: 'first.' },
  { type: 'reasoning_opaque', index: 0, kind: 'signature', value: 'sig-1' },
  { type: 'part_end', index: 0 },
  { type: 'text_start', index: 1 },
  { type: 'text_delta', index: 1, text: 'Calling ' },
  { type: 'text_delta', index: 1, text: 'tools.' },
  { type: 'part_end', index: 1 },
  { type: 'tool_call_start', index: 2, id: 'toolu_1', name: 'get_weather', kind: 'function' },
  { type: 'tool_call_delta', index: 2, arguments: '{"city":' },
  { type: 'tool_call_delta', index: 2, arguments: '"Paris"}' },
  { type: 'part_end', index: 2 },
  { type: 'tool_call_start', index: 3, id: 'toolu_2', name: 'run_sql', kind: 'custom' },
  { type: 'tool_call_delta', index: 3, arguments: '{"input":"SEL' },
  { type: 'tool_call_delta', index: 3, arguments: 'ECT 1"}' },
  { type: 'part_end', index: 3 },
  { type: 'usage', usage: { outputTokens: 30, reasoningTokens: 4 } },
  { type: 'finish', stopReason: 'tool_calls' },
  { type: 'end' },
];

const encode = (events: CanonicalEvent[], request: ResponsesAnswerRequest = withSummary) =>
  collect(encodeResponsesStream(from(events), request, testContext()));
const types = (events: SseEvent[]) => events.map((event) => event.event);
const last = (events: SseEvent[]) => payloads(events)[events.length - 1];

describe(encodeResponsesStream.name, () => {
  it('writes delta events as text in the API member order, the delta escaped as JSON', async () => {
    const events = await encode(deltaOfEachKind(origin));
    expect(events.filter((event) => event.event?.endsWith('.delta')).map((event) => event.data)).toEqual([
      JSON.stringify({
        type: 'response.reasoning_summary_text.delta',
        sequence_number: 4,
        item_id: 'rs_2',
        output_index: 0,
        summary_index: 0,
        delta: AWKWARD_TEXT,
      }),
      JSON.stringify({
        type: 'response.output_text.delta',
        sequence_number: 10,
        item_id: 'msg_3',
        output_index: 1,
        content_index: 0,
        delta: AWKWARD_TEXT,
        logprobs: [],
      }),
      JSON.stringify({ type: 'response.function_call_arguments.delta', sequence_number: 15, item_id: 'fc_4', output_index: 2, delta: '{"city":' }),
    ]);
  });

  it('emits the events in the order the API does, each named after its type and numbered from 0', async () => {
    const events = await encode(fullAnswer);
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const data = payloads(events);
    expect(data.map((payload) => payload.type)).toEqual(types(events));
    expect(data.map((payload) => payload.sequence_number)).toEqual(data.map((_, index) => index));
  });

  it('writes the item events with ids, indexes and content as the API does', async () => {
    const data = payloads(await encode(fullAnswer)).map(({ sequence_number: _, ...payload }) => payload);
    const message = { item_id: 'msg_3', output_index: 1, content_index: 0 };
    const summary = { item_id: 'rs_2', output_index: 0, summary_index: 0 };
    expect(data.slice(2, 25)).toEqual([
      { type: 'response.output_item.added', output_index: 0, item: { id: 'rs_2', type: 'reasoning', summary: [] } },
      { type: 'response.reasoning_summary_part.added', ...summary, part: { type: 'summary_text', text: '' } },
      { type: 'response.reasoning_summary_text.delta', ...summary, delta: 'Think ' },
      { type: 'response.reasoning_summary_text.delta', ...summary, delta: 'first.' },
      { type: 'response.reasoning_summary_text.done', ...summary, text: 'Think first.' },
      { type: 'response.reasoning_summary_part.done', ...summary, part: { type: 'summary_text', text: 'Think first.' } },
      {
        type: 'response.output_item.done',
        output_index: 0,
        item: { id: 'rs_2', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Think first.' }], encrypted_content: expect.stringMatching(/^gwr1\./) },
      },
      { type: 'response.output_item.added', output_index: 1, item: { id: 'msg_3', type: 'message', status: 'in_progress', content: [], role: 'assistant' } },
      { type: 'response.content_part.added', ...message, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } },
      { type: 'response.output_text.delta', ...message, delta: 'Calling ', logprobs: [] },
      { type: 'response.output_text.delta', ...message, delta: 'tools.', logprobs: [] },
      { type: 'response.output_text.done', ...message, text: 'Calling tools.', logprobs: [] },
      { type: 'response.content_part.done', ...message, part: { type: 'output_text', annotations: [], logprobs: [], text: 'Calling tools.' } },
      {
        type: 'response.output_item.done',
        output_index: 1,
        item: {
          id: 'msg_3',
          type: 'message',
          status: 'completed',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Calling tools.' }],
          role: 'assistant',
        },
      },
      {
        type: 'response.output_item.added',
        output_index: 2,
        item: { id: 'fc_4', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'toolu_1', name: 'get_weather' },
      },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_4', output_index: 2, delta: '{"city":' },
      { type: 'response.function_call_arguments.delta', item_id: 'fc_4', output_index: 2, delta: '"Paris"}' },
      { type: 'response.function_call_arguments.done', item_id: 'fc_4', output_index: 2, name: 'get_weather', arguments: '{"city":"Paris"}' },
      {
        type: 'response.output_item.done',
        output_index: 2,
        item: { id: 'fc_4', type: 'function_call', status: 'completed', arguments: '{"city":"Paris"}', call_id: 'toolu_1', name: 'get_weather' },
      },
      {
        type: 'response.output_item.added',
        output_index: 3,
        item: { id: 'ctc_5', type: 'custom_tool_call', status: 'in_progress', call_id: 'toolu_2', input: '', name: 'run_sql' },
      },
      { type: 'response.custom_tool_call_input.delta', item_id: 'ctc_5', output_index: 3, delta: 'SELECT 1' },
      { type: 'response.custom_tool_call_input.done', item_id: 'ctc_5', output_index: 3, input: 'SELECT 1' },
      {
        type: 'response.output_item.done',
        output_index: 3,
        item: { id: 'ctc_5', type: 'custom_tool_call', status: 'completed', call_id: 'toolu_2', input: 'SELECT 1', name: 'run_sql' },
      },
    ]);
  });

  it('opens with in-progress snapshots of the same response', async () => {
    const [created, inProgress] = payloads(await encode(fullAnswer));
    expect(created.response).toMatchObject({ id: 'resp_1', status: 'in_progress', output: [], usage: null, model: 'claude-sim-1', created_at: 1_700_000_000 });
    expect(inProgress.response).toEqual(created.response);
  });

  it('ends with the same Response object the JSON encoder builds for the same answer', async () => {
    const final = last(await encode(fullAnswer));
    const json = encodeResponsesResponse(assemble(fullAnswer), withSummary, testContext());
    expect(final.response).toEqual(json);
    expect(json).toMatchObject({ status: 'completed', usage: { input_tokens: 40, output_tokens: 30, total_tokens: 70 } });
    const reasoning = (json.output as Array<Record<string, unknown>>)[0];
    expect(openReasoning(String(reasoning.encrypted_content))).toMatchObject({ origin, kind: 'signature', value: 'sig-1', text: 'Think first.' });
  });

  it.each(['responses-text.sse', 'responses-function-call.sse', 'responses-parallel-calls.sse', 'responses-reasoning.sse', 'responses-incomplete.sse'])(
    'ends %s re-encoded with the JSON encoding of the same answer',
    async (name) => {
      const upstreamOrigin = { protocol: 'responses', upstreamModel: 'gpt-sim-1' };
      const canonical = await collect(decodeResponsesStream(fixtureEvents(name), upstreamOrigin));
      const final = last(await encode(canonical));
      expect(final.response).toEqual(encodeResponsesResponse(assemble(canonical), withSummary, testContext()));
    },
  );

  it('streams no summary events when the client asked for no summary', async () => {
    const events = await encode(fullAnswer.slice(0, 6).concat([{ type: 'finish', stopReason: 'end' }, { type: 'end' }]), plain);
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(payloads(events)[3].item).toEqual({ id: 'rs_2', type: 'reasoning', summary: [] });
  });

  it('ends a truncated answer with response.incomplete', async () => {
    const events = await encode([
      { type: 'start', id: 'msg_1', model: 'm' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Cut' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'max_tokens' },
      { type: 'end' },
    ]);
    expect(last(events)).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
  });

  it('turns an upstream error into an error event and response.failed, and stops reading', async () => {
    const events = await encode([
      { type: 'start', id: 'msg_1', model: 'm' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Par' },
      { type: 'error', message: 'Overloaded.', kind: 'overloaded' },
      { type: 'text_delta', index: 0, text: 'never sent' },
      { type: 'end' },
    ]);
    expect(types(events).slice(-2)).toEqual(['error', 'response.failed']);
    const [error, failed] = payloads(events).slice(-2);
    expect(error).toEqual({ type: 'error', sequence_number: 5, code: 'server_is_overloaded', message: 'Overloaded.', param: null });
    expect(failed.response).toMatchObject({ status: 'failed', error: { code: 'server_is_overloaded', message: 'Overloaded.' }, output: [] });
  });

  it('fails the response when the canonical stream ends without finishing', async () => {
    const events = await encode([{ type: 'start', id: 'msg_1', model: 'm' }]);
    expect(types(events)).toEqual(['response.created', 'response.in_progress', 'error', 'response.failed']);
    expect(payloads(events)[2]).toMatchObject({ code: 'server_error', message: 'The upstream stream ended before the response was complete.' });
  });

  it('closes its source when the consumer stops early', async () => {
    let closed = false;
    async function* source(): AsyncGenerator<CanonicalEvent> {
      try {
        yield* fullAnswer;
      } finally {
        closed = true;
      }
    }
    for await (const event of encodeResponsesStream(source(), plain, testContext())) {
      if (event.event === 'response.output_item.added') break;
    }
    expect(closed).toBe(true);
  });

  it('still creates the response when the first event is an error', async () => {
    const events = await encode([{ type: 'error', message: 'Nope.', kind: 'rate_limit' }], { echo: { model: 'gateway-model' }, includeOpaqueReasoning: false });
    expect(types(events)).toEqual(['response.created', 'response.in_progress', 'error', 'response.failed']);
    expect(payloads(events)[0].response).toMatchObject({ model: 'gateway-model' });
    expect(payloads(events)[2]).toMatchObject({ code: 'rate_limit_exceeded' });
  });
});
