import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TranslationContext } from './canonical/ids';
import type { CanonicalUsage } from './canonical/response';
import { SseDecoder, SseEvent } from './sse/decode-sse';
import { planTranslation, StreamTranslation, translateAnswer, TranslationPlan } from './translate';
import type { TextProtocol, TranslatableEntry } from './translation-routes';

/**
 * The four directions end to end through the pure layer, on upstream wire captures: the
 * stream and the JSON answer of the same upstream reply must give the client the same
 * content and the same usage, and the stream must follow the called protocol's event order.
 */

const FIXTURE_FOLDERS: Record<TextProtocol, string> = {
  messages: 'messages/__fixtures__',
  responses: 'responses/__fixtures__',
  chat_completions: 'chat-completions/__fixtures__',
};

function fixture(upstream: TextProtocol, name: string): Buffer {
  return readFileSync(join(__dirname, FIXTURE_FOLDERS[upstream], name));
}

function context(): TranslationContext {
  let next = 0;
  return { newId: (prefix) => `${prefix}_${++next}`, now: () => 1_800_000_000 };
}

/** The capture in chunks of 61 bytes, so that events and characters are cut anywhere. */
function chunks(buffer: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  for (let start = 0; start < buffer.length; start += 61) pieces.push(buffer.subarray(start, start + 61));
  return pieces;
}

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

function clientBody(entry: TranslatableEntry): Record<string, unknown> {
  if (entry === 'responses') {
    return {
      model: 'client-model',
      input: 'Why is the sky blue?',
      store: false,
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low', summary: 'auto' },
      tools: [{ type: 'function', ...WEATHER_TOOL }],
    };
  }
  return {
    model: 'client-model',
    max_tokens: 4096,
    messages: [{ role: 'user', content: 'Why is the sky blue?' }],
    thinking: { type: 'enabled', budget_tokens: 2048 },
    tools: [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: WEATHER_TOOL.parameters }],
  };
}

function plan(entry: TranslatableEntry, upstream: TextProtocol): TranslationPlan {
  return planTranslation(entry, upstream, clientBody(entry), { upstreamModel: 'upstream-model', maxTokens: 8192 });
}

/** As the translated stream's loop reads: chunk by chunk until the translation is finished, then its end. */
function translatedStream(entry: TranslatableEntry, upstream: TextProtocol, name: string) {
  let usage: CanonicalUsage = {};
  const events: SseEvent[] = [];
  const translation = new StreamTranslation(plan(entry, upstream), context(), (known) => (usage = known));
  const decoder = new SseDecoder();
  for (const chunk of chunks(fixture(upstream, name))) {
    for (const event of decoder.push(chunk)) if (!translation.finished) events.push(...translation.read(event));
  }
  for (const event of decoder.end()) if (!translation.finished) events.push(...translation.read(event));
  events.push(...translation.end());
  return { events, usage };
}

function eventOrder(events: SseEvent[]): string[] {
  const names = events.map((event) => event.event ?? 'message');
  return names.filter((name, index) => name !== names[index - 1]);
}

/**
 * Drops what legitimately differs between the two captures of one answer: the upstream's ids
 * (random per capture; the seals embed them too) and times.
 */
const CAPTURE_SPECIFIC = new Set(['id', 'call_id', 'created_at', 'completed_at', 'signature', 'encrypted_content']);

function withoutIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutIds);
  if (!value || typeof value !== 'object') return value;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (CAPTURE_SPECIFIC.has(key)) continue;
    result[key] = withoutIds(item);
  }
  return result;
}

/** The message a messages client assembles from the stream (what the SDK's MessageStream does). */
function assembleMessage(events: SseEvent[]) {
  const content: Array<Record<string, unknown>> = [];
  let usage: Record<string, unknown> = {};
  let stopReason: unknown;
  for (const event of events) {
    const data = JSON.parse(event.data) as Record<string, any>;
    if (data.type === 'message_start') usage = { ...data.message.usage };
    if (data.type === 'content_block_start') content[data.index] = { ...data.content_block, partial: '' };
    if (data.type === 'content_block_delta') {
      const block = content[data.index];
      const delta = data.delta;
      if (delta.type === 'text_delta') block.text = `${block.text}${delta.text}`;
      if (delta.type === 'thinking_delta') block.thinking = `${block.thinking}${delta.thinking}`;
      if (delta.type === 'signature_delta') block.signature = delta.signature;
      if (delta.type === 'input_json_delta') block.partial = `${block.partial}${delta.partial_json}`;
    }
    if (data.type === 'content_block_stop') {
      const block = content[data.index];
      if (block.type === 'tool_use') block.input = JSON.parse((block.partial as string) || '{}');
      delete block.partial;
    }
    if (data.type === 'message_delta') {
      stopReason = data.delta.stop_reason;
      usage = { ...usage, ...Object.fromEntries(Object.entries(data.usage).filter(([, value]) => value !== null)) };
    }
  }
  return { content, usage, stopReason };
}

const RESPONSES_ENTRY_CASES: Array<[TextProtocol, string, string[]]> = [
  [
    'messages',
    'messages-thinking',
    [
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ],
  ],
  [
    'messages',
    'messages-parallel-tool-use',
    [
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
    ],
  ],
  [
    'chat_completions',
    'chat-parallel-tool-calls',
    [
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
    ],
  ],
  [
    'chat_completions',
    'chat-reasoning',
    [
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ],
  ],
];

describe('translation to a responses client', () => {
  it.each(RESPONSES_ENTRY_CASES)('streams %s upstream %s in the responses event order', (upstream, name, items) => {
    const { events } = translatedStream('responses', upstream, `${name}.sse`);
    expect(eventOrder(events)).toEqual(['response.created', 'response.in_progress', ...items, 'response.completed']);
    const sequence = events.map((event) => (JSON.parse(event.data) as { sequence_number: number }).sequence_number);
    expect(sequence).toEqual(events.map((_, index) => index));
  });

  it.each(RESPONSES_ENTRY_CASES)('gives the same response and usage from a %s upstream stream as from its JSON answer (%s)', (upstream, name) => {
    const { events, usage } = translatedStream('responses', upstream, `${name}.sse`);
    const answer = translateAnswer(plan('responses', upstream), JSON.parse(fixture(upstream, `${name}.json`).toString('utf8')), context());
    const completed = JSON.parse(events[events.length - 1].data) as { response: Record<string, unknown> };
    expect(withoutIds(completed.response.output)).toEqual(withoutIds(answer.body.output));
    expect(completed.response.usage).toEqual(answer.body.usage);
    expect(usage).toEqual(answer.usage);
  });
});

const MESSAGES_ENTRY_CASES: Array<[TextProtocol, string, string[]]> = [
  ['responses', 'responses-reasoning', ['thinking', 'text']],
  ['responses', 'responses-parallel-calls', ['tool_use', 'tool_use']],
  ['chat_completions', 'chat-parallel-tool-calls', ['tool_use', 'tool_use']],
  ['chat_completions', 'chat-text-usage', ['text']],
];

describe('translation to a messages client', () => {
  it.each(MESSAGES_ENTRY_CASES)('streams %s upstream %s in the messages event order', (upstream, name, blocks) => {
    const { events } = translatedStream('messages', upstream, `${name}.sse`);
    const order = eventOrder(events);
    expect(order[0]).toBe('message_start');
    expect(order.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(order.filter((event) => event === 'content_block_start')).toHaveLength(blocks.length);
    expect(assembleMessage(events).content.map((block) => block.type)).toEqual(blocks);
  });

  it.each(MESSAGES_ENTRY_CASES)('gives the same message and usage from a %s upstream stream as from its JSON answer (%s)', (upstream, name) => {
    const { events, usage } = translatedStream('messages', upstream, `${name}.sse`);
    const answer = translateAnswer(
      plan('messages', upstream),
      JSON.parse(fixture(upstream, name === 'chat-text-usage' ? 'chat-text.json' : `${name}.json`).toString('utf8')),
      context(),
    );
    const streamed = assembleMessage(events);
    expect(withoutIds(streamed.content)).toEqual(withoutIds(answer.body.content));
    expect(streamed.stopReason).toBe(answer.body.stop_reason);
    expect(streamed.usage).toMatchObject(
      Object.fromEntries(Object.entries(answer.body.usage as Record<string, unknown>).filter(([, value]) => value !== null)),
    );
    expect(usage).toEqual(answer.usage);
  });
});

describe('StreamTranslation when a stream ends early', () => {
  const messagesEvent = (data: Record<string, unknown>): SseEvent => ({ event: String(data.type), data: JSON.stringify(data) });
  const start = messagesEvent({ type: 'message_start', message: { id: 'msg_1', model: 'upstream-model', usage: { input_tokens: 5, output_tokens: 1 } } });
  const textStart = messagesEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  const delta = messagesEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Rayleigh' } });

  /** Reads the upstream events until the translation is finished, then its end; counts the events read. */
  function translated(entry: TranslatableEntry, upstream: SseEvent[]): { read: number; events: SseEvent[] } {
    const translation = new StreamTranslation(plan(entry, 'messages'), context(), () => undefined);
    const events: SseEvent[] = [];
    let read = 0;
    for (const event of upstream) {
      if (translation.finished) break;
      read++;
      events.push(...translation.read(event));
    }
    events.push(...translation.end());
    return { read, events };
  }

  it('ends the client stream in its protocol when the upstream stops before its final event', () => {
    const { read, events } = translated('responses', [start, textStart, delta]);

    expect(read).toBe(3);
    expect(events[0].event).toBe('response.created');
    expect(events.map((event) => event.event)).toContain('response.output_text.delta');
    expect(events[events.length - 1].event).toBe('response.failed');
    // The upstream decoder's account of the cut, not only the client encoder's own.
    expect(JSON.parse(events[events.length - 1].data)).toMatchObject({ response: { error: { message: 'The upstream stream ended before message_stop.' } } });
  });

  it('is finished once the client stream is complete (an upstream error event): nothing after it is read', () => {
    const error = messagesEvent({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const { read, events } = translated('messages', [start, textStart, delta, error, delta, delta]);

    expect(read).toBe(4);
    expect(events[events.length - 1]).toMatchObject({ event: 'error' });
    expect(JSON.parse(events[events.length - 1].data)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });
});
