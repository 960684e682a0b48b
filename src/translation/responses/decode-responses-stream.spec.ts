import type { CanonicalEvent } from '../canonical/events';
import { decodeSse, type SseEvent } from '../sse/decode-sse';
import { decodeResponsesStream } from './decode-responses-stream';
import { chunks, collect, fixture, fixtureEvents, from } from './responses-test-kit';

const origin = { protocol: 'responses', upstreamModel: 'gpt-sim-1' };
const decodeFixture = (name: string) => collect(decodeResponsesStream(fixtureEvents(name), origin));
const decodeEvents = (payloads: Array<Record<string, unknown>>) =>
  collect(decodeResponsesStream(from(payloads.map((payload): SseEvent => ({ event: String(payload.type), data: JSON.stringify(payload) }))), origin));

const textDeltas = (index: number, pieces: string[]): CanonicalEvent[] => pieces.map((text) => ({ type: 'text_delta', index, text }));
const argumentDeltas = (index: number): CanonicalEvent[] => ['{"city', '":"Par', 'is"}'].map((piece) => ({ type: 'tool_call_delta', index, arguments: piece }));
const created = { type: 'response.created', response: { id: 'resp_1', model: 'm' } };

describe(decodeResponsesStream.name, () => {
  it('decodes a text stream', async () => {
    expect(await decodeFixture('responses-text.sse')).toEqual([
      { type: 'start', id: 'resp_oIjX1vAB4mODFmhGDA0sjCrhyZJQ4liX7hpJrHMvHQvi0jHk', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      ...textDeltas(0, ['Hello', ' from', ' gpt-sim-1:', ' Say', ' hello.']),
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 33, cachedInputTokens: 0, outputTokens: 5, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('gives the same events when the bytes arrive one at a time', async () => {
    const bytewise = await collect(decodeResponsesStream(decodeSse(chunks(fixture('responses-reasoning.sse'), 1)), origin));
    expect(bytewise).toEqual(await decodeFixture('responses-reasoning.sse'));
  });

  it('decodes a function call stream', async () => {
    expect(await decodeFixture('responses-function-call.sse')).toEqual([
      { type: 'start', id: 'resp_MDqtpvwtQKnWOJmbKPEaI57y9N0ydevC64aqy9eryrI8kJYv', model: 'gpt-sim-1' },
      { type: 'tool_call_start', index: 0, id: 'call_BNf8xVpSHOPOrP9JLGfhOMUH', name: 'get_weather', kind: 'function' },
      ...argumentDeltas(0),
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 38, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('decodes parallel calls one after the other', async () => {
    expect(await decodeFixture('responses-parallel-calls.sse')).toEqual([
      { type: 'start', id: 'resp_0Rdwh3e5xjTL34XbNHxIXBF2aI4xU6OB9aW8UUH3xF3OGbjC', model: 'gpt-sim-1' },
      { type: 'tool_call_start', index: 0, id: 'call_Mmeh1bM2BOUMWCDn2zZtyMY7', name: 'get_weather', kind: 'function' },
      ...argumentDeltas(0),
      { type: 'part_end', index: 0 },
      { type: 'tool_call_start', index: 1, id: 'call_Hnj9D3IUMe7Su9pzt3pK3VxF', name: 'get_weather', kind: 'function' },
      ...argumentDeltas(1),
      { type: 'part_end', index: 1 },
      { type: 'usage', usage: { inputTokens: 38, cachedInputTokens: 0, outputTokens: 2, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('decodes reasoning: summary deltas, then the encrypted content before the part ends', async () => {
    expect(await decodeFixture('responses-reasoning.sse')).toEqual([
      { type: 'start', id: 'resp_vG8sAFehcA0nEuFdkrflza6iPh6ec5jHQCzCXxojLKsNs15i', model: 'gpt-sim-1' },
      { type: 'reasoning_start', index: 0, origin },
      ...['Thinking', ' about', ' "Think,', ' then', ' say', ' hello."', ' before', ' answering.'].map((text): CanonicalEvent => ({
        type: 'reasoning_delta',
        index: 0,
        text,
      })),
      {
        type: 'reasoning_opaque',
        index: 0,
        kind: 'encrypted',
        value: 'gAAAAABPEysS1JB9255V5F+e11eCzUZy6Hx3zs7DqkF2+B8+b8=',
        itemId: 'rs_W6zlaLI1Hu1vwCtB8jrE101w4IOleXtqyLIs5M3NvQzg4fF7',
      },
      { type: 'part_end', index: 0 },
      { type: 'text_start', index: 1 },
      ...textDeltas(1, ['Hello', ' from', ' gpt-sim-1:', ' Think,', ' then', ' say', ' hello.']),
      { type: 'part_end', index: 1 },
      { type: 'usage', usage: { inputTokens: 36, cachedInputTokens: 0, outputTokens: 15, reasoningTokens: 8 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('decodes response.incomplete cut by max_output_tokens as max_tokens', async () => {
    const events = await decodeFixture('responses-incomplete.sse');
    expect(events.slice(-3)).toEqual([
      { type: 'usage', usage: { inputTokens: 39, cachedInputTokens: 0, outputTokens: 4, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'max_tokens' },
      { type: 'end' },
    ]);
  });

  it('reports a stream that breaks off before the response completed', async () => {
    expect(await decodeFixture('responses-cut-off.sse')).toEqual([
      { type: 'start', id: 'resp_S3LTEFFUk9XEBdEmjRGnfLxrvYCdDmTec5gjrECzdBZQ6oSM', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hello' },
      { type: 'error', message: 'The upstream stream ended before the response was complete.', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('separates summary parts with a blank line', async () => {
    const place = { item_id: 'rs_1', output_index: 0 };
    expect(
      await decodeEvents([
        created,
        { type: 'response.output_item.added', output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [] } },
        { type: 'response.reasoning_summary_part.added', ...place, summary_index: 0 },
        { type: 'response.reasoning_summary_text.delta', ...place, summary_index: 0, delta: 'One.' },
        { type: 'response.reasoning_summary_part.added', ...place, summary_index: 1 },
        { type: 'response.reasoning_summary_text.delta', ...place, summary_index: 1, delta: 'Two.' },
        { type: 'response.output_item.done', output_index: 0, item: { id: 'rs_1', type: 'reasoning', summary: [{ text: 'One.' }, { text: 'Two.' }] } },
      ]),
    ).toEqual([
      { type: 'start', id: 'resp_1', model: 'm' },
      { type: 'reasoning_start', index: 0, origin },
      { type: 'reasoning_delta', index: 0, text: 'One.' },
      { type: 'reasoning_delta', index: 0, text: '\n\n' },
      { type: 'reasoning_delta', index: 0, text: 'Two.' },
      { type: 'part_end', index: 0 },
      { type: 'error', message: 'The upstream stream ended before the response was complete.', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('streams custom tool input as {"input": …} arguments that parse back to the input', async () => {
    const place = { item_id: 'ctc_1', output_index: 0 };
    const events = await decodeEvents([
      created,
      { type: 'response.output_item.added', output_index: 0, item: { id: 'ctc_1', type: 'custom_tool_call', call_id: 'call_1', name: 'run_sql', input: '' } },
      { type: 'response.custom_tool_call_input.delta', ...place, delta: 'SELECT "a"\n' },
      { type: 'response.custom_tool_call_input.delta', ...place, delta: 'FROM t' },
      {
        type: 'response.output_item.done',
        output_index: 0,
        item: { id: 'ctc_1', type: 'custom_tool_call', call_id: 'call_1', name: 'run_sql', input: 'SELECT "a"\nFROM t' },
      },
      { type: 'response.completed', response: { status: 'completed' } },
    ]);
    expect(events).toEqual([
      { type: 'start', id: 'resp_1', model: 'm' },
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'run_sql', kind: 'custom' },
      { type: 'tool_call_delta', index: 0, arguments: '{"input":"' },
      { type: 'tool_call_delta', index: 0, arguments: 'SELECT \\"a\\"\\n' },
      { type: 'tool_call_delta', index: 0, arguments: 'FROM t' },
      { type: 'tool_call_delta', index: 0, arguments: '"}' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
    const argumentsText = events.flatMap((event) => (event.type === 'tool_call_delta' ? [event.arguments] : [])).join('');
    expect(JSON.parse(argumentsText)).toEqual({ input: 'SELECT "a"\nFROM t' });
  });

  it('completes an item from its final form when the server sent no deltas', async () => {
    const events = await decodeEvents([
      created,
      { type: 'response.output_item.added', output_index: 0, item: { id: 'msg_1', type: 'message', content: [] } },
      { type: 'response.output_item.done', output_index: 0, item: { id: 'msg_1', type: 'message', content: [{ type: 'output_text', text: 'Whole.' }] } },
      { type: 'response.completed', response: { status: 'completed', usage: { input_tokens: 3, output_tokens: 1 } } },
    ]);
    expect(events.slice(1)).toEqual([
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Whole.' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 1 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('turns response.failed into an error and stops', async () => {
    expect(
      await decodeEvents([
        created,
        { type: 'response.failed', response: { status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Slow down.' } } },
        { type: 'response.output_item.added', output_index: 0, item: { type: 'message' } },
      ]),
    ).toEqual([{ type: 'start', id: 'resp_1', model: 'm' }, { type: 'error', message: 'Slow down.', kind: 'rate_limit' }, { type: 'end' }]);
  });

  it('turns an error event into an error, even before response.created', async () => {
    expect(await decodeEvents([{ type: 'error', code: 'server_error', message: 'Oops.', param: null }])).toEqual([
      { type: 'error', message: 'Oops.', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('closes its source when the consumer stops early', async () => {
    let closed = false;
    async function* source(): AsyncGenerator<SseEvent> {
      try {
        yield* fixtureEvents('responses-text.sse');
      } finally {
        closed = true;
      }
    }
    for await (const event of decodeResponsesStream(source(), origin)) {
      if (event.type === 'text_start') break;
    }
    expect(closed).toBe(true);
  });

  it('skips hosted tool items and events it has no use for', async () => {
    const events = await decodeEvents([
      created,
      { type: 'response.in_progress', response: {} },
      { type: 'response.output_item.added', output_index: 0, item: { id: 'ws_1', type: 'web_search_call' } },
      { type: 'response.web_search_call.searching', output_index: 0 },
      { type: 'response.output_item.done', output_index: 0, item: { id: 'ws_1', type: 'web_search_call' } },
      { type: 'response.completed', response: { status: 'completed' } },
    ]);
    expect(events).toEqual([{ type: 'start', id: 'resp_1', model: 'm' }, { type: 'finish', stopReason: 'end' }, { type: 'end' }]);
  });
});
