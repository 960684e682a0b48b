import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalEvent } from '../canonical/events';
import { decodeSse, type SseEvent } from '../sse/decode-sse';
import { decodeChatStream } from './decode-chat-stream';

/** Chunk boundaries are the SSE codec's business (sse/), so each fixture goes in as one chunk. */
async function* fixtureEvents(name: string): AsyncGenerator<SseEvent> {
  yield* decodeSse(
    (async function* () {
      yield readFileSync(join(__dirname, '__fixtures__', name));
    })(),
  );
}

async function* eventsOf(items: SseEvent[]): AsyncGenerator<SseEvent> {
  yield* items;
}

async function collect(source: AsyncIterable<SseEvent>): Promise<CanonicalEvent[]> {
  const events: CanonicalEvent[] = [];
  for await (const event of decodeChatStream(source)) events.push(event);
  return events;
}

/** A chat chunk with one choice; `usage` when given. */
function chunk(delta: Record<string, unknown>, finishReason: string | null = null, usage?: unknown): SseEvent {
  const data: Record<string, unknown> = { id: 'chatcmpl-1', model: 'm', choices: [{ index: 0, delta, finish_reason: finishReason }] };
  if (usage !== undefined) data.usage = usage;
  return { data: JSON.stringify(data) };
}

function usageChunk(usage: unknown): SseEvent {
  return { data: JSON.stringify({ id: 'chatcmpl-1', model: 'm', choices: [], usage }) };
}

const DONE: SseEvent = { data: '[DONE]' };
const START: CanonicalEvent = { type: 'start', id: 'chatcmpl-1', model: 'm' };

function textDeltas(index: number, pieces: string[]): CanonicalEvent[] {
  return pieces.map((text) => ({ type: 'text_delta', index, text }));
}

describe(decodeChatStream.name, () => {
  it('decodes a text stream, holding the finish until the usage chunk (chat-text-usage.sse)', async () => {
    expect(await collect(fixtureEvents('chat-text-usage.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-MH9T7FEBADJtcpDCl1ekELqYRinQI', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      ...textDeltas(0, ['Hello', ' from', ' gpt-sim-1:', ' Say', ' hello.']),
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 22, cachedInputTokens: 0, outputTokens: 5, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('releases the finish at [DONE] when no usage chunk comes (chat-text.sse)', async () => {
    expect(await collect(fixtureEvents('chat-text.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-ZysSAu5y4BsblKTQZEX7Adkm3g1dP', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      ...textDeltas(0, ['Hello', ' from', ' gpt-sim-1:', ' Say', ' hello.']),
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('decodes parallel tool calls as sequential parts (chat-parallel-tool-calls.sse)', async () => {
    expect(await collect(fixtureEvents('chat-parallel-tool-calls.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-o2ZUCHYrwFKRlxpnUDm6ARGxQKPbH', model: 'gpt-sim-1' },
      { type: 'tool_call_start', index: 0, id: 'call_gPMvsK8ZV9taglnEAOyHVBsc', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 0, arguments: '{"city' },
      { type: 'tool_call_delta', index: 0, arguments: '":"Par' },
      { type: 'tool_call_delta', index: 0, arguments: 'is"}' },
      { type: 'part_end', index: 0 },
      { type: 'tool_call_start', index: 1, id: 'call_ahi7lcYSNUfZW76T6CRzMYxl', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 1, arguments: '{"city' },
      { type: 'tool_call_delta', index: 1, arguments: '":"Par' },
      { type: 'tool_call_delta', index: 1, arguments: 'is"}' },
      { type: 'part_end', index: 1 },
      { type: 'usage', usage: { inputTokens: 27, cachedInputTokens: 0, outputTokens: 2, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('buffers the fragments of a later call until the earlier one is complete (chat-interleaved-tool-calls.sse)', async () => {
    expect(await collect(fixtureEvents('chat-interleaved-tool-calls.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-interleaved0000000000000000001', model: 'compat-model-1' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Checking both cities.' },
      { type: 'part_end', index: 0 },
      { type: 'tool_call_start', index: 1, id: 'call_paris', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 1, arguments: '{"city":' },
      { type: 'tool_call_delta', index: 1, arguments: '"Paris"' },
      { type: 'tool_call_delta', index: 1, arguments: '}' },
      { type: 'part_end', index: 1 },
      { type: 'tool_call_start', index: 2, id: 'call_rome', name: 'get_weather', kind: 'function' },
      { type: 'tool_call_delta', index: 2, arguments: '{"city":"Rome"}' },
      { type: 'part_end', index: 2 },
      { type: 'usage', usage: { inputTokens: 40, outputTokens: 18 } },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('reports reasoning tokens from the usage chunk (chat-reasoning.sse)', async () => {
    const events = await collect(fixtureEvents('chat-reasoning.sse'));
    expect(events.filter((event) => event.type === 'usage')).toEqual([
      { type: 'usage', usage: { inputTokens: 25, cachedInputTokens: 0, outputTokens: 15, reasoningTokens: 8 } },
    ]);
    expect(events.some((event) => event.type === 'reasoning_start')).toBe(false);
  });

  it('maps a length cut to max_tokens (chat-length.sse)', async () => {
    expect((await collect(fixtureEvents('chat-length.sse'))).slice(-5)).toEqual([
      { type: 'text_delta', index: 0, text: ' Tell' },
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 28, cachedInputTokens: 0, outputTokens: 4, reasoningTokens: 0 } },
      { type: 'finish', stopReason: 'max_tokens' },
      { type: 'end' },
    ]);
  });

  it('turns an in-stream error into error then end, leaving the open part unclosed (chat-error.sse)', async () => {
    expect(await collect(fixtureEvents('chat-error.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-error00000000000000000000000001', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hello' },
      { type: 'error', message: 'The server had an error while processing your request. Sorry about that!', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('reports a stream cut before its finish as ended early (chat-cut-off.sse)', async () => {
    expect(await collect(fixtureEvents('chat-cut-off.sse'))).toEqual([
      { type: 'start', id: 'chatcmpl-jtTUR1iUtbgtTLzXiPuhHd6xE6BES', model: 'gpt-sim-1' },
      { type: 'text_start', index: 0 },
      ...textDeltas(0, ['Hello', ' from', ' gpt-sim-1:']),
      { type: 'error', message: 'upstream stream ended early', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('accepts a stream that ends after its finish without [DONE]', async () => {
    expect(await collect(eventsOf([chunk({ content: 'Hi' }), chunk({}, 'stop')]))).toEqual([
      START,
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hi' },
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('releases the finish at once when usage comes in the finish chunk', async () => {
    const events = await collect(eventsOf([chunk({ content: 'Hi' }), chunk({}, 'stop', { prompt_tokens: 3, completion_tokens: 1 }), DONE]));
    expect(events.slice(-4)).toEqual([
      { type: 'part_end', index: 0 },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 1 } },
      { type: 'finish', stopReason: 'end' },
      { type: 'end' },
    ]);
  });

  it('keeps only the latest usage when several chunks report it', async () => {
    const events = await collect(
      eventsOf([
        chunk({ content: 'Hi' }, null, { prompt_tokens: 3, completion_tokens: 1 }),
        chunk({}, 'stop'),
        usageChunk({ prompt_tokens: 3, completion_tokens: 2 }),
        DONE,
      ]),
    );
    expect(events.filter((event) => event.type === 'usage')).toEqual([{ type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } }]);
  });

  it('infers the finish at [DONE] when the upstream gave no finish reason', async () => {
    const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } };
    expect((await collect(eventsOf([chunk({ tool_calls: [call] }), DONE]))).slice(-3)).toEqual([
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('turns refusal deltas into text with the refusal stop reason', async () => {
    expect(
      await collect(eventsOf([chunk({ role: 'assistant', content: null, refusal: "I can't" }), chunk({ refusal: ' help.' }), chunk({}, 'stop'), DONE])),
    ).toEqual([
      START,
      { type: 'text_start', index: 0 },
      ...textDeltas(0, ["I can't", ' help.']),
      { type: 'part_end', index: 0 },
      { type: 'finish', stopReason: 'refusal' },
      { type: 'end' },
    ]);
  });

  it('opens text after a tool call as a new part once the call is complete', async () => {
    const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":' } };
    const events = await collect(
      eventsOf([
        chunk({ tool_calls: [call] }),
        chunk({ content: 'Note.' }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }),
        chunk({}, 'tool_calls'),
        DONE,
      ]),
    );
    expect(events).toEqual([
      START,
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'f', kind: 'function' },
      { type: 'tool_call_delta', index: 0, arguments: '{"a":' },
      { type: 'tool_call_delta', index: 0, arguments: '1}' },
      { type: 'part_end', index: 0 },
      { type: 'text_start', index: 1 },
      { type: 'text_delta', index: 1, text: 'Note.' },
      { type: 'part_end', index: 1 },
      { type: 'finish', stopReason: 'tool_calls' },
      { type: 'end' },
    ]);
  });

  it('buffers a call whose first fragment lacks the name, opening it once the name comes', async () => {
    const events = await collect(
      eventsOf([
        chunk({ tool_calls: [{ index: 0, id: 'call_1', function: { arguments: '{' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '}' } }] }),
        chunk({}, 'tool_calls'),
        DONE,
      ]),
    );
    expect(events.slice(1, 4)).toEqual([
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'f', kind: 'function' },
      { type: 'tool_call_delta', index: 0, arguments: '{}' },
      { type: 'part_end', index: 0 },
    ]);
  });

  it('reads an `event: error` item as an in-stream error', async () => {
    const error: SseEvent = { event: 'error', data: JSON.stringify({ error: { message: 'Rate limit reached', type: 'tokens' } }) };
    expect(await collect(eventsOf([chunk({ content: 'Hi' }), error, DONE]))).toEqual([
      START,
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hi' },
      { type: 'error', message: 'Rate limit reached', kind: 'rate_limit' },
      { type: 'end' },
    ]);
  });

  it('stops at a chunk that is not JSON', async () => {
    expect(await collect(eventsOf([chunk({ content: 'Hi' }), { data: '{"id": "chatcmpl-1", "choi' }, DONE]))).toEqual([
      START,
      { type: 'text_start', index: 0 },
      { type: 'text_delta', index: 0, text: 'Hi' },
      { type: 'error', message: 'upstream sent an unreadable stream chunk', kind: 'server' },
      { type: 'end' },
    ]);
  });

  it('reports a stream with no chunk at all as ended early', async () => {
    expect(await collect(eventsOf([DONE]))).toEqual([{ type: 'error', message: 'upstream stream ended early', kind: 'server' }, { type: 'end' }]);
    expect(await collect(eventsOf([]))).toEqual([{ type: 'error', message: 'upstream stream ended early', kind: 'server' }, { type: 'end' }]);
  });

  it('closes the upstream events when the consumer stops early', async () => {
    let closed = false;
    async function* upstream(): AsyncGenerator<SseEvent> {
      try {
        yield chunk({ content: 'Hi' });
        yield chunk({ content: ' there' });
      } finally {
        closed = true;
      }
    }
    for await (const event of decodeChatStream(upstream())) {
      if (event.type === 'text_start') break;
    }
    expect(closed).toBe(true);
  });
});
