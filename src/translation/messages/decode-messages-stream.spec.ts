import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalEvent } from '../canonical/events';
import { decodeSse, type SseEvent } from '../sse/decode-sse';
import { decodeMessagesStream } from './decode-messages-stream';

const origin = { protocol: 'messages', upstreamModel: 'claude-sim-1' };

function fixtureBytes(name: string): Buffer {
  return readFileSync(join(__dirname, '__fixtures__', `messages-${name}.sse`));
}

/** Replays bytes in small chunks, so events arrive split the way a socket splits them. */
async function* chunked(bytes: Buffer, size = 37): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < bytes.length; start += size) yield bytes.subarray(start, start + size);
}

async function collect(events: AsyncIterable<CanonicalEvent>): Promise<CanonicalEvent[]> {
  const collected: CanonicalEvent[] = [];
  for await (const event of events) collected.push(event);
  return collected;
}

function decodeFixture(name: string): Promise<CanonicalEvent[]> {
  return collect(decodeMessagesStream(decodeSse(chunked(fixtureBytes(name))), origin));
}

async function* eventsOf(...data: unknown[]): AsyncGenerator<SseEvent> {
  for (const item of data) yield { event: (item as { type: string }).type, data: JSON.stringify(item) };
}

/** The captures report no cache writes, and so zeros for both durations (`cache_creation`). */
const usage = (input: number, output: number, cached = 0) => ({
  inputTokens: input + cached,
  cachedInputTokens: cached,
  cacheWriteInputTokens: 0,
  cacheWrite5mInputTokens: 0,
  cacheWrite1hInputTokens: 0,
  outputTokens: output,
});
const texts = (index: number, ...pieces: string[]): CanonicalEvent[] => pieces.map((text) => ({ type: 'text_delta', index, text }));

describe(decodeMessagesStream.name, () => {
  it('decodes the text capture', async () => {
    expect(await decodeFixture('text')).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_01bs7NHquoG9dupEWMO0uE06CE', model: 'claude-sim-1', usage: usage(14, 1) },
      { type: 'text_start', index: 0 },
      ...texts(0, 'Hello', ' from', ' claude-sim-1:', ' Hello', ' there'),
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: usage(14, 5) },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('decodes the tool_use capture, its input JSON streamed in pieces', async () => {
    expect(await decodeFixture('tool-use')).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_01QoXQxlWULgB2ktQOZ6C9ikFu', model: 'claude-sim-1', usage: usage(18, 1) },
      { type: 'tool_call_start', index: 0, id: 'toolu_01V3VpM4Rl6V8Ak7OocMwh1BlL', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 0, arguments: '{"city' },
      { type: 'tool_call_delta', index: 0, arguments: '":"Par' },
      { type: 'tool_call_delta', index: 0, arguments: 'is"}' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: usage(18, 1) },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('decodes the parallel tool_use capture as two calls, each closed before the next', async () => {
    const call = (index: number, id: string): CanonicalEvent[] => [
      { type: 'tool_call_start', index, id, name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index, arguments: '{"city' },
      { type: 'tool_call_delta', index, arguments: '":"Par' },
      { type: 'tool_call_delta', index, arguments: 'is"}' },
      { type: 'part_end', index },
    ];
    expect(await decodeFixture('parallel-tool-use')).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_013bMpjvGqY9vuvBZq4fc6djES', model: 'claude-sim-1', usage: usage(22, 1) },
      ...call(0, 'toolu_01Ok9np5xcNtlAk0yiiQG7ikbr'),
      ...call(1, 'toolu_01EqzVgVos5cbA8FqDSq7E7R0E'),
      { type: 'usage', usage: usage(22, 2) },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('decodes the thinking capture with its signature and origin', async () => {
    const thoughts = ['Thinking', ' about', ' "Why', ' is', ' the', ' sky', ' blue?"', ' before', ' answering.'];
    expect(await decodeFixture('thinking')).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_01ZMzqi2X4C4jFatb2rgXn0Sgn', model: 'claude-sim-1', usage: usage(16, 1) },
      { type: 'reasoning_start', index: 0, origin },
      ...thoughts.map((text): CanonicalEvent => ({ type: 'reasoning_delta', index: 0, text })),
      { type: 'reasoning_opaque', index: 0, kind: 'signature', value: 'f02qVaE0G3fUwcqPYsBLX4JSgh/aDFKEjozs23WDPFI=' },
      { type: 'part_end', index: 0 },
      { type: 'text_start', index: 1 },
      ...texts(1, 'Hello', ' from', ' claude-sim-1:', ' Why', ' is', ' the', ' sky', ' blue?'),
      { type: 'part_end', index: 1 },
      { type: 'usage', usage: usage(16, 17) },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('decodes the max_tokens capture', async () => {
    expect(await decodeFixture('max-tokens')).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_01hCFKsW0HVdJIMkj4UGCXfxC7', model: 'claude-sim-1', usage: usage(20, 1) },
      { type: 'text_start', index: 0 },
      ...texts(0, 'Hello', ' from', ' claude-sim-1:'),
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: usage(20, 3) },
      { type: 'finish', stopReason: 'max_tokens' },
      { type: 'end' },
    ]);
  });

  it('decodes the cached capture with cached tokens counted in the input', async () => {
    const events = await decodeFixture('cached');
    expect(events[0]).toEqual({ type: 'start', id: 'msg_010aMaEoT4uDKkeMFqIHNbiAjG', model: 'claude-sim-1', usage: usage(13, 1, 13) });
    expect(events.slice(-3)).toEqual([{ type: 'usage', usage: usage(13, 5, 13) }, { type: 'finish', stopReason: 'end' }, { type: 'end' }]);
  });

  it('reports an error when the stream stops before message_stop', async () => {
    const bytes = fixtureBytes('text');
    const cut = bytes.subarray(0, bytes.indexOf('event: content_block_stop'));
    const events = await collect(decodeMessagesStream(decodeSse(chunked(cut)), origin));
    expect(events.slice(-3)).toEqual([
      { type: 'text_delta', index: 0, text: ' there' },
      { type: 'error', message: 'The upstream stream ended before message_stop.' },
      { type: 'end' },
    ]);
  });

  it('turns an error event into an error and stops reading', async () => {
    let readAfterError = false;
    async function* source(): AsyncGenerator<SseEvent> {
      yield* eventsOf({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 3, output_tokens: 1 } } });
      yield { event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) };
      readAfterError = true;
    }
    const events = await collect(decodeMessagesStream(source(), origin));
    expect(events.slice(1)).toEqual([{ type: 'error', message: 'Overloaded', kind: 'overloaded' }, { type: 'end' }]);
    expect(readAfterError).toBe(false);
  });

  it('ignores pings and unknown events, and skips server tool blocks with their deltas', async () => {
    const events = await collect(
      decodeMessagesStream(
        eventsOf(
          { type: 'message_start', message: { id: 'msg_1', model: 'm' } },
          { type: 'ping' },
          { type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 's', name: 'web_search', input: {} } },
          { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{}' } },
          { type: 'content_block_stop', index: 0 },
          { type: 'brand_new_event' },
          { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: {} } },
          { type: 'content_block_stop', index: 1 },
          { type: 'message_delta', delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' }, usage: { output_tokens: 2 } },
          { type: 'message_stop' },
        ),
        origin,
      ),
    );
    expect(events).toEqual<CanonicalEvent[]>([
      { type: 'start', id: 'msg_1', model: 'm' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hi' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { outputTokens: 2 } },
      { type: 'finish', stopReason: 'stop_sequence', stopSequence: 'END' },
      { type: 'end' },
    ]);
  });

  it('decodes redacted thinking, and gives a tool without streamed input the arguments {}', async () => {
    const events = await collect(
      decodeMessagesStream(
        eventsOf(
          { type: 'message_start', message: { id: 'msg_1', model: 'm' } },
          { type: 'content_block_start', index: 0, content_block: { type: 'redacted_thinking', data: 'EmwKAhgB' } },
          { type: 'content_block_stop', index: 0 },
          { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't', name: 'now', input: {} } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
          { type: 'content_block_stop', index: 1 },
          { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } },
          { type: 'message_stop' },
        ),
        origin,
      ),
    );
    expect(events.slice(1, 7)).toEqual<CanonicalEvent[]>([
      { type: 'reasoning_start', index: 0, origin },
      { type: 'reasoning_opaque', index: 0, kind: 'redacted', value: 'EmwKAhgB' },
      { type: 'part_end', index: 0 },
      { type: 'tool_call_start', index: 1, id: 't', name: 'now', kind: 'function' },
      { type: 'tool_call_delta', index: 1, arguments: '{}' },
      { type: 'part_end', index: 1 },
    ]);
  });

  it('sums a message_delta that repeats only some input figures with those known from message_start', async () => {
    const events = await collect(
      decodeMessagesStream(
        eventsOf(
          { type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 10, cache_read_input_tokens: 90, output_tokens: 1 } } },
          { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 12, cache_creation_input_tokens: null, output_tokens: 6 } },
          { type: 'message_stop' },
        ),
        origin,
      ),
    );
    expect(events[1]).toEqual({ type: 'usage', usage: { inputTokens: 102, cachedInputTokens: 90, outputTokens: 6 } });
  });

  it('reports an unreadable event as an error', async () => {
    async function* source(): AsyncGenerator<SseEvent> {
      yield { event: 'message_start', data: '{not json' };
    }
    expect(await collect(decodeMessagesStream(source(), origin))).toEqual([
      { type: 'error', message: 'The upstream sent an unreadable message_start event.' },
      { type: 'end' },
    ]);
  });
});
