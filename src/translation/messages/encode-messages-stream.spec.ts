import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import { sealReasoning } from '../canonical/reasoning-seal';
import type { SseEvent } from '../sse/decode-sse';
import { AWKWARD_TEXT, deltaOfEachKind } from '../canonical/delta-events.test-kit';
import { encodeMessagesStream, messagesPingEvent } from './encode-messages-stream';

const context: TranslationContext = { newId: (prefix) => `${prefix}_gateway1`, now: () => 1_700_000_000 };
const fromResponses = { protocol: 'responses', upstreamModel: 'gpt-up' };

async function* streamOf(events: CanonicalEvent[], afterwards?: () => void): AsyncGenerator<CanonicalEvent> {
  yield* events;
  afterwards?.();
}

/** Encodes and parses each event's data, checking that the `event:` name matches its type. */
async function encode(events: CanonicalEvent[]): Promise<Array<Record<string, unknown>>> {
  const output: Array<Record<string, unknown>> = [];
  for await (const event of encodeMessagesStream(streamOf(events), context)) {
    const data = JSON.parse(event.data) as Record<string, unknown>;
    expect(event.event).toBe(data.type);
    output.push(data);
  }
  return output;
}

const start = (usage = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: null, cache_read_input_tokens: null } as Record<string, unknown>) => ({
  type: 'message_start',
  message: { id: 'msg_gateway1', type: 'message', role: 'assistant', model: 'gpt-up', content: [], stop_reason: null, stop_sequence: null, usage },
});

describe(encodeMessagesStream.name, () => {
  it('writes content_block_delta events as text in the API member order, the value escaped as JSON', async () => {
    const raw: SseEvent[] = [];
    for await (const event of encodeMessagesStream(streamOf(deltaOfEachKind(fromResponses)), context)) raw.push(event);
    const signature = sealReasoning({ origin: fromResponses, kind: 'encrypted', value: 'gAAAA', text: AWKWARD_TEXT, itemId: 'rs_up' });
    expect(raw.filter((event) => event.event === 'content_block_delta').map((event) => event.data)).toEqual([
      JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: AWKWARD_TEXT } }),
      JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } }),
      JSON.stringify({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: AWKWARD_TEXT } }),
      JSON.stringify({ type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"city":' } }),
    ]);
  });

  it('encodes a text answer as the API streams it, usage known from the start', async () => {
    const events = await encode([
      { type: 'start', id: 'up_1', model: 'gpt-up', usage: { inputTokens: 26, cachedInputTokens: 13, cacheWriteInputTokens: 0, outputTokens: 1 } },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hello' },
      { type: 'text_delta', index: 0, text: '' },
      { type: 'text_delta', index: 0, text: ' there' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { outputTokens: 5 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
    expect(events).toEqual([
      start({ input_tokens: 13, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 13 }),
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' there' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5, input_tokens: 13, cache_read_input_tokens: 13, cache_creation_input_tokens: 0 },
      },
      { type: 'message_stop' },
    ]);
  });

  it('starts with input_tokens 0 when the upstream tells usage only at the end, and gives the figures in message_delta', async () => {
    const events = await encode([
      { type: 'start', id: 'chatcmpl-1', model: 'gpt-up' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hi' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 50, cachedInputTokens: 20, outputTokens: 3 } },
      { type: 'finish', stopReason: 'max_tokens' },
      { type: 'end' },
    ]);
    expect(events[0]).toEqual(start());
    expect(events[4]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'max_tokens', stop_sequence: null },
      usage: { output_tokens: 3, input_tokens: 30, cache_read_input_tokens: 20 },
    });
  });

  it('streams reasoning as a thinking block that ends with the sealed signature', async () => {
    const events = await encode([
      { type: 'start', id: 'resp_1', model: 'gpt-up' },
      { type: 'reasoning_start', index: 0, origin: fromResponses },
      { type: 'reasoning_delta', index: 0, text: 'Think' },
      { type: 'reasoning_delta', index: 0, text: 'ing' },
      { type: 'reasoning_opaque', index: 0, kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' },
      { type: 'part_end', index: 0 },
      { type: 'tool_call_start', index: 1, id: 'call_1', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 1, arguments: '{"city":' },
      { type: 'tool_call_delta', index: 1, arguments: '"Paris"}' },
      { type: 'part_end', index: 1 },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
    const signature = sealReasoning({ origin: fromResponses, kind: 'encrypted', value: 'gAAAA', text: 'Thinking', itemId: 'rs_1' });
    expect(events.slice(1)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Think' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'ing' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 0 } },
      { type: 'message_stop' },
    ]);
  });

  it('opens redacted reasoning as a redacted_thinking block with its data sealed', async () => {
    const origin = { protocol: 'messages', upstreamModel: 'claude-up' };
    const events = await encode([
      { type: 'start', id: 'msg_up', model: 'gpt-up' },
      { type: 'reasoning_start', index: 0, origin },
      { type: 'reasoning_opaque', index: 0, kind: 'redacted', value: 'EmwK' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
    expect(events.slice(1, 3)).toEqual([
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'redacted_thinking', data: sealReasoning({ origin, kind: 'redacted', value: 'EmwK', text: '' }) },
      },
      { type: 'content_block_stop', index: 0 },
    ]);
  });

  it('sends no signature for reasoning without opaque data', async () => {
    const events = await encode([
      { type: 'start', id: 'c', model: 'gpt-up' },
      { type: 'reasoning_start', index: 0 },
      { type: 'reasoning_delta', index: 0, text: 'Hmm' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
    expect(events.map((event) => (event.delta as { type?: string } | undefined)?.type ?? event.type)).toEqual([
      'message_start',
      'content_block_start',
      'thinking_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('numbers blocks from 0 without gaps and closes parts left open before message_delta', async () => {
    const events = await encode([
      { type: 'start', id: 'c', model: 'gpt-up' },
      { type: 'text_start', index: 4 },
      { type: 'text_delta', index: 4, text: 'cut' },
      { type: 'finish', stopReason: 'max_tokens', stopSequence: undefined },
      { type: 'end' },
    ]);
    expect(events.slice(1, 4)).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'cut' } },
      { type: 'content_block_stop', index: 0 },
    ]);
    expect(events[4].type).toBe('message_delta');
  });

  it('carries the stop sequence that matched', async () => {
    const events = await encode([
      { type: 'start', id: 'c', model: 'gpt-up' },
      { type: 'finish', stopReason: 'stop_sequence', stopSequence: 'END' },
      { type: 'end' },
    ]);
    expect(events[1].delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it('turns an error into an error event and reads nothing after it', async () => {
    let readPastError = false;
    const output: SseEvent[] = [];
    const events: CanonicalEvent[] = [
      { type: 'start', id: 'c', model: 'gpt-up' },
      { type: 'text_start', index: 0 },
      { type: 'error', message: 'Upstream went away', kind: 'overloaded' },
    ];
    for await (const event of encodeMessagesStream(
      streamOf(events, () => (readPastError = true)),
      context,
    ))
      output.push(event);
    expect(output.slice(-1)).toEqual([
      { event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Upstream went away' } }) },
    ]);
    expect(readPastError).toBe(false);
  });

  it('names an error of unknown kind api_error', async () => {
    const events = await encode([
      { type: 'start', id: 'c', model: 'gpt-up' },
      { type: 'error', message: 'Boom', kind: 'server_error' },
    ]);
    expect(events[1]).toEqual({ type: 'error', error: { type: 'api_error', message: 'Boom' } });
  });

  it('reports an error when the events end before the model finished', async () => {
    const events = await encode([{ type: 'start', id: 'c', model: 'gpt-up' }, { type: 'text_start', index: 0 }, { type: 'end' }]);
    expect(events.slice(-1)).toEqual([{ type: 'error', error: { type: 'api_error', message: 'The upstream stream ended before the answer was complete.' } }]);
    const unterminated = await encode([{ type: 'start', id: 'c', model: 'gpt-up' }]);
    expect(unterminated.map((event) => event.type)).toEqual(['message_start', 'error']);
  });
});

describe(messagesPingEvent.name, () => {
  it('is a ping event exactly as the API sends it', () => {
    expect(messagesPingEvent()).toEqual({ event: 'ping', data: '{"type":"ping"}' });
  });
});
