import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';
import { decodeChatTurn } from './simulator/chat-route';
import { decodeMessagesTurn } from './simulator/messages-route';
import { decodeResponsesTurn } from './simulator/responses-route';
import { opaqueToken, planReply, type ReplyUsage } from './simulator/scripted-model';
import type { RecordedRequest } from './simulator/upstream-simulator';
import type { UsageRecord } from '../src/metering/usage-record.entity';

/**
 * Translated streams in all four directions (SPEC.md "Translation" and "Events"): the event
 * sequence of the called protocol, tool calls and reasoning built up from deltas, the same
 * bill as the JSON answer, `ping` while a translated messages stream waits on a silent
 * upstream, and upstream failures re-expressed in the called protocol, before and after the
 * first byte.
 */

const OWNER = 'team-translation';

/**
 * Short enough to see several pings while a stalled upstream keeps a test waiting, long enough
 * that a busy test machine does not hold back the simulator's next chunk for a whole interval
 * (at 100 ms a full run saw a ping between two 256 KiB deltas of the full-socket test).
 */
const PING_INTERVAL_MS = 300;

/** Prices of the YAML below in nano-units per 1M tokens, restated so the tests compute costs themselves. */
const PRICES = {
  'msg-only': { input: 3_000_000_000n, cached: 300_000_000n, output: 15_000_000_000n },
  'chat-only': { input: 2_500_000_000n, cached: 1_250_000_000n, output: 10_000_000_000n },
  'resp-only': { input: 2_000_000_000n, cached: 500_000_000n, output: 8_000_000_000n },
} as const;
type PricedModel = keyof typeof PRICES;

function translationConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-sim
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: msg-only
    upstream_model: vendor-msg-1
    interfaces: [messages]
    lines: [line-sim]
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: chat-only
    upstream_model: vendor-chat-1
    interfaces: [chat_completions]
    lines: [line-sim]
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: resp-only
    upstream_model: vendor-resp-1
    interfaces: [responses]
    lines: [line-sim]
    max_tokens: 32000
    prices: { input_tokens: 2, cached_input_tokens: 0.5, output_tokens: 8 }
  - id: resp-and-chat
    upstream_model: vendor-resp-chat-1
    interfaces: [responses, chat_completions]
    lines: [line-sim]
    max_tokens: 16384
    prices: { input_tokens: 2, output_tokens: 8 }
  - id: msg-and-chat
    upstream_model: vendor-msg-chat-1
    interfaces: [messages, chat_completions]
    lines: [line-sim]
    max_tokens: 4096
    prices: { input_tokens: 1, output_tokens: 2 }
owners:
  - id: ${OWNER}
    kind: project
    budget: 100
keys:
  - key: ${KEYS.all}
    owner: ${OWNER}
    models: ["*"]
`;
}

const UPSTREAM = {
  'msg-only': { path: '/v1/messages', model: 'vendor-msg-1', protocol: 'messages' },
  'chat-only': { path: '/v1/chat/completions', model: 'vendor-chat-1', protocol: 'chat_completions' },
  'resp-only': { path: '/v1/responses', model: 'vendor-resp-1', protocol: 'responses' },
} as const;
type TranslatedModel = keyof typeof UPSTREAM;

/** Models the responses entry translates for, and those the messages entry translates for. */
const RESPONSES_ENTRY_MODELS = ['msg-only', 'chat-only'] as const;
const MESSAGES_ENTRY_MODELS = ['resp-only', 'chat-only'] as const;

const WEATHER_PARAMETERS = {
  type: 'object' as const,
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
};

const RESPONSES_WEATHER_TOOL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: WEATHER_PARAMETERS,
  strict: false,
};

const MESSAGES_WEATHER_TOOL: Anthropic.Tool = { name: 'get_weather', description: 'Current weather of a city', input_schema: WEATHER_PARAMETERS };

type Body = Record<string, any>;

function bodyOf(request: RecordedRequest): Body {
  return request.json as Body;
}

/** What the simulated upstream reported as usage for a request it got (its rules are deterministic). */
function upstreamUsage(request: RecordedRequest): ReplyUsage {
  const body = bodyOf(request);
  const raw = request.body.toString('utf8');
  if (request.path === '/v1/messages') return planReply(decodeMessagesTurn(body, raw)).usage;
  if (request.path === '/v1/responses') return planReply(decodeResponsesTurn(body, raw)).usage;
  return planReply(decodeChatTurn(body, raw)).usage;
}

/** Token figures priced per 1M tokens, summed, rounded once (half up) to whole nano-units. */
function costOf(usage: ReplyUsage, model: PricedModel): bigint {
  const prices = PRICES[model];
  const total =
    BigInt(usage.inputTokens - usage.cachedTokens) * prices.input + BigInt(usage.cachedTokens) * prices.cached + BigInt(usage.outputTokens) * prices.output;
  return (total + 500_000n) / 1_000_000n;
}

function simulatedThinking(question: string): string {
  return `Thinking about "${question}" before answering.`;
}

interface SseItem {
  event?: string;
  data: string;
}

function parseSseBlock(block: string): SseItem {
  const item: SseItem = { data: '' };
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith('event:')) item.event = line.slice(6).trim();
    if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  item.data = data.join('\n');
  return item;
}

function parseSse(text: string): SseItem[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map(parseSseBlock);
}

/**
 * Reads the SSE blocks of a live response, each turned into an item by `itemOf`, until `enough`
 * says so (or the stream ends). A block's text is let go of once read, so a stream of tens of
 * MiB is not held as one string.
 */
async function readBlocksUntil<T>(response: Response, itemOf: (block: string) => T, enough: (items: T[]) => boolean): Promise<T[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const items: T[] = [];
  let pending = '';
  try {
    while (!enough(items)) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      let start = 0;
      let end = pending.indexOf('\n\n');
      while (end !== -1) {
        const block = pending.slice(start, end);
        if (block.trim() !== '') items.push(itemOf(block));
        start = end + 2;
        end = pending.indexOf('\n\n', start);
      }
      pending = pending.slice(start);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return items;
}

/** Reads SSE items off a live response until `enough` says so (or the stream ends). */
function readSseUntil(response: Response, enough: (items: SseItem[]) => boolean): Promise<SseItem[]> {
  return readBlocksUntil(response, parseSseBlock, enough);
}

/** The event names of a live response (the data is not kept) until `enough` says so. */
function eventNamesUntil(response: Response, enough: (names: string[]) => boolean): Promise<string[]> {
  return readBlocksUntil(response, (block) => (block.startsWith('event: ') ? block.slice(7, block.indexOf('\n')) : ''), enough);
}

/** Event types of a raw stream, keep-alive pings left out (they may come at any point). */
function typesOf(items: SseItem[]): string[] {
  return items.filter((item) => item.event !== 'ping').map((item) => JSON.parse(item.data).type as string);
}

describe('translated streams', () => {
  let gateway: GatewayHarness;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** Headers of every answer the SDKs received, to read X-Request-Id and the translation headers of streams. */
  const received: Headers[] = [];

  const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    received.push(response.headers);
    return response;
  };

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: translationConfigYaml,
      settings: { translation: { pingIntervalMs: PING_INTERVAL_MS } },
    });
    openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000, fetch: recordingFetch });
    anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000, fetch: recordingFetch });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
    received.length = 0;
  });

  function lastHeaders(): Headers {
    expect(received.length).toBeGreaterThan(0);
    return received[received.length - 1];
  }

  /** The single upstream call, checked for its path, the upstream model name and that it streamed. */
  function onlyUpstreamCall(model: TranslatedModel): RecordedRequest {
    const calls = gateway.simulator.requests;
    expect(calls.map((call) => call.path)).toEqual([UPSTREAM[model].path]);
    expect(bodyOf(calls[0]).model).toBe(UPSTREAM[model].model);
    return calls[0];
  }

  /** The usage record of a call the client left: it is written once the gateway has noticed. */
  async function recordOnceWritten(requestId: string): Promise<UsageRecord> {
    for (;;) {
      const record = await gateway.usageRecord(requestId);
      if (record) return record;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function post(path: '/v1/responses' | '/v1/messages', body: unknown, signal?: AbortSignal): Promise<Response> {
    return fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
      signal: signal ?? AbortSignal.timeout(10_000),
    });
  }

  describe('responses entry', () => {
    it.each(RESPONSES_ENTRY_MODELS)(
      'streams a response from %s: response.created first, text deltas, response.completed last with the upstream usage',
      async (model) => {
        const stream = openai.responses.stream({ model, input: 'Stream to me', instructions: 'Be brief.' });
        const events: OpenAI.Responses.ResponseStreamEvent[] = [];
        for await (const event of stream) events.push(event);
        const response = await stream.finalResponse();

        const expectedText = `Hello from ${UPSTREAM[model].model}: Stream to me`;
        expect(response.status).toBe('completed');
        expect(response.output_text).toBe(expectedText);
        expect(events[0].type).toBe('response.created');
        const last = events[events.length - 1];
        expect(last.type).toBe('response.completed');
        expect(events.map((event) => event.sequence_number)).toEqual(events.map((_event, index) => index));
        const deltas = events.filter((event): event is OpenAI.Responses.ResponseTextDeltaEvent => event.type === 'response.output_text.delta');
        expect(deltas.length).toBeGreaterThan(1);
        expect(deltas.map((event) => event.delta).join('')).toBe(expectedText);
        const upstream = onlyUpstreamCall(model);
        expect(bodyOf(upstream).stream).toBe(true);
        const usage = upstreamUsage(upstream);
        expect((last as OpenAI.Responses.ResponseCompletedEvent).response.usage).toMatchObject({
          input_tokens: usage.inputTokens,
          output_tokens: usage.outputTokens,
        });
        expect(lastHeaders().get('content-type')).toMatch(/^text\/event-stream/);
        expect(lastHeaders().get('x-gateway-translated')).toBe(UPSTREAM[model].protocol);
        const record = await gateway.usageRecord(lastHeaders().get('x-request-id') ?? '');
        expect(record).toMatchObject({ interface: 'responses', translatedTo: UPSTREAM[model].protocol, stream: true, status: 200, errorCode: null });
      },
    );

    it('names the upstream protocol and the dropped fields in the headers of a stream', async () => {
      const response = await post('/v1/responses', { model: 'msg-only', input: 'Hello', top_logprobs: 2, metadata: { ticket: 'T-1' }, stream: true });

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(response.headers.get('x-gateway-translated')).toBe('messages');
      expect(response.headers.get('x-gateway-dropped')).toBe('top_logprobs');
      expect(typesOf(parseSse(await response.text())).at(-1)).toBe('response.completed');
    });

    it.each(RESPONSES_ENTRY_MODELS)('streams function-call arguments from %s as deltas that assemble into the call', async (model) => {
      const stream = openai.responses.stream({ model, input: 'What is the weather?', tools: [RESPONSES_WEATHER_TOOL] });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      const response = await stream.finalResponse();

      const deltas = events.filter(
        (event): event is OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent => event.type === 'response.function_call_arguments.delta',
      );
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.map((event) => event.delta).join('')).toBe('{"city":"Paris"}');
      const done = events.find(
        (event): event is OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent => event.type === 'response.function_call_arguments.done',
      );
      expect(done?.arguments).toBe('{"city":"Paris"}');
      expect(response.output).toEqual([
        expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', call_id: expect.any(String) }),
      ]);
      expect(events[events.length - 1].type).toBe('response.completed');
      onlyUpstreamCall(model);
    });

    it.each(RESPONSES_ENTRY_MODELS)('streams two parallel function calls from %s as two output items', async (model) => {
      const response = await openai.responses.stream({ model, input: 'Check the weather in parallel please', tools: [RESPONSES_WEATHER_TOOL] }).finalResponse();

      const calls = response.output.filter((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall[];
      expect(calls).toHaveLength(2);
      for (const call of calls) expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
      expect(calls[0].call_id).not.toBe(calls[1].call_id);
    });

    it.each(RESPONSES_ENTRY_MODELS)('streams a custom tool call from %s with its input', async (model) => {
      const stream = openai.responses.stream({ model, input: 'Count the users', tools: [{ type: 'custom', name: 'run_sql' }] });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      const response = await stream.finalResponse();

      expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', name: 'run_sql', input: 'Paris' })]);
      expect(events.find((event) => event.type === 'response.custom_tool_call_input.done')).toMatchObject({ input: 'Paris' });
    });

    it('streams reasoning with encrypted_content from a messages upstream, which continues on the same model', async () => {
      const question = 'Plan a trip';
      const first = await openai.responses
        .stream({ model: 'msg-only', input: [{ role: 'user', content: question }], reasoning: { effort: 'low' }, include: ['reasoning.encrypted_content'] })
        .finalResponse();
      const reasoning = first.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
      expect(reasoning.encrypted_content).toEqual(expect.any(String));
      expect(first.output_text).toBe(`Hello from vendor-msg-1: ${question}`);
      gateway.simulator.reset();

      const second = await openai.responses
        .stream({
          model: 'msg-only',
          input: [{ role: 'user', content: question }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'And then?' }],
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        })
        .finalResponse();

      expect(second.output_text).toBe('Hello from vendor-msg-1: And then?');
      const thinking = simulatedThinking(question);
      expect(bodyOf(onlyUpstreamCall('msg-only')).messages[1].content[0]).toEqual({
        type: 'thinking',
        thinking,
        signature: opaqueToken('thinking:vendor-msg-1', thinking),
      });
    });
  });

  describe('messages entry', () => {
    it.each(MESSAGES_ENTRY_MODELS)(
      'streams a message from %s: message_start first, text deltas, message_delta with the upstream usage, message_stop last',
      async (model) => {
        const stream = anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Stream to me' }] });
        const events: Anthropic.MessageStreamEvent[] = [];
        for await (const event of stream) events.push(event);
        const message = await stream.finalMessage();

        const expectedText = `Hello from ${UPSTREAM[model].model}: Stream to me`;
        expect(message.content).toEqual([{ type: 'text', text: expectedText }]);
        expect(message.stop_reason).toBe('end_turn');
        expect(events[0].type).toBe('message_start');
        expect(events[events.length - 1].type).toBe('message_stop');
        expect(events.map((event) => event.type)).toEqual([
          'message_start',
          'content_block_start',
          ...events.filter((event) => event.type === 'content_block_delta').map(() => 'content_block_delta'),
          'content_block_stop',
          'message_delta',
          'message_stop',
        ]);
        const deltas = events.filter((event): event is Anthropic.RawContentBlockDeltaEvent => event.type === 'content_block_delta');
        expect(deltas.map((event) => (event.delta as Anthropic.TextDelta).text).join('')).toBe(expectedText);
        const upstream = onlyUpstreamCall(model);
        expect(bodyOf(upstream).stream).toBe(true);
        const usage = upstreamUsage(upstream);
        const messageDelta = events.find((event): event is Anthropic.RawMessageDeltaEvent => event.type === 'message_delta');
        expect(messageDelta?.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
        expect(message.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
        expect(lastHeaders().get('x-gateway-translated')).toBe(UPSTREAM[model].protocol);
        const record = await gateway.usageRecord(lastHeaders().get('x-request-id') ?? '');
        expect(record).toMatchObject({ interface: 'messages', translatedTo: UPSTREAM[model].protocol, stream: true, status: 200, errorCode: null });
      },
    );

    it.each(MESSAGES_ENTRY_MODELS)('streams a tool_use block from %s whose input_json_delta pieces parse into the input', async (model) => {
      const stream = anthropic.messages.stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'What is the weather?' }],
        tools: [MESSAGES_WEATHER_TOOL],
      });
      const events: Anthropic.MessageStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      const message = await stream.finalMessage();

      const pieces = events
        .filter((event): event is Anthropic.RawContentBlockDeltaEvent => event.type === 'content_block_delta')
        .map((event) => (event.delta as Anthropic.InputJSONDelta).partial_json);
      expect(pieces.length).toBeGreaterThan(1);
      expect(JSON.parse(pieces.join(''))).toEqual({ city: 'Paris' });
      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'Paris' } }]);
    });

    it.each(MESSAGES_ENTRY_MODELS)('streams two parallel tool_use blocks from %s', async (model) => {
      const message = await anthropic.messages
        .stream({
          model,
          max_tokens: 256,
          messages: [{ role: 'user', content: 'Check the weather in parallel please' }],
          tools: [MESSAGES_WEATHER_TOOL],
        })
        .finalMessage();

      expect(message.content.map((block) => block.type)).toEqual(['tool_use', 'tool_use']);
      expect(message.content).toEqual([
        expect.objectContaining({ name: 'get_weather', input: { city: 'Paris' } }),
        expect.objectContaining({ name: 'get_weather', input: { city: 'Paris' } }),
      ]);
    });

    it('streams thinking with a signature from a responses upstream, which continues on the same model', async () => {
      const question = 'Plan a trip';
      const stream = anthropic.messages.stream({
        model: 'resp-only',
        max_tokens: 16000,
        thinking: { type: 'enabled', budget_tokens: 8000 },
        messages: [{ role: 'user', content: question }],
      });
      const deltaTypes: string[] = [];
      stream.on('streamEvent', (event) => {
        if (event.type === 'content_block_delta') deltaTypes.push(event.delta.type);
      });
      const first = await stream.finalMessage();

      expect(deltaTypes).toContain('thinking_delta');
      expect(deltaTypes).toContain('signature_delta');
      expect(first.content).toEqual([
        { type: 'thinking', thinking: simulatedThinking(question), signature: expect.stringMatching(/.+/) },
        { type: 'text', text: `Hello from vendor-resp-1: ${question}` },
      ]);
      gateway.simulator.reset();

      const second = await anthropic.messages
        .stream({
          model: 'resp-only',
          max_tokens: 16000,
          thinking: { type: 'enabled', budget_tokens: 8000 },
          messages: [
            { role: 'user', content: question },
            { role: 'assistant', content: first.content },
            { role: 'user', content: 'And then?' },
          ],
        })
        .finalMessage();

      expect(second.content[second.content.length - 1]).toMatchObject({ type: 'text', text: 'Hello from vendor-resp-1: And then?' });
      const input = bodyOf(onlyUpstreamCall('resp-only')).input as Body[];
      expect(input.find((item) => item.type === 'reasoning')).toMatchObject({
        encrypted_content: `gAAAAAB${opaqueToken('reasoning', simulatedThinking(question))}`,
      });
    });
  });

  describe('billing', () => {
    it.each([
      ['responses', 'msg-only'],
      ['responses', 'chat-only'],
      ['messages', 'resp-only'],
      ['messages', 'chat-only'],
    ] as const)('bills a %s stream on %s the same tokens and cost as the same request answered as JSON', async (entry, model) => {
      const prompt = 'Stream or not, same bill please';
      if (entry === 'responses') {
        await openai.responses.create({ model, input: prompt });
        await openai.responses.stream({ model, input: prompt }).finalResponse();
      } else {
        await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: prompt }] });
        await anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: prompt }] }).finalMessage();
      }
      const [wholeId, streamedId] = received.map((headers) => headers.get('x-request-id') ?? '');

      const whole = await gateway.usageRecord(wholeId);
      const streamed = await gateway.usageRecord(streamedId);

      expect(whole).toMatchObject({ interface: entry, translatedTo: UPSTREAM[model].protocol, stream: false });
      expect(streamed).toMatchObject({ interface: entry, translatedTo: UPSTREAM[model].protocol, stream: true });
      const usage = upstreamUsage(gateway.simulator.requests[0]);
      expect(whole?.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
      expect(streamed?.usage).toEqual(whole?.usage);
      expect(whole?.costNano).toBe(costOf(usage, model));
      expect(streamed?.costNano).toBe(whole?.costNano);
    });
  });

  describe('the upstream connection', () => {
    it.each([
      ['responses', 'msg-only'],
      ['responses', 'chat-only'],
      ['messages', 'resp-only'],
      ['messages', 'chat-only'],
    ] as const)('is kept alive and used again after a %s stream on %s ends', async (entry, model) => {
      for (let round = 0; round < 3; round++) {
        if (entry === 'responses') await openai.responses.stream({ model, input: `Round ${round}` }).finalResponse();
        else await anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: `Round ${round}` }] }).finalMessage();
      }

      const ports = gateway.simulator.requests.map((request) => request.clientPort);
      expect(ports).toHaveLength(3);
      expect(new Set(ports).size).toBe(1);
      for (const headers of received) {
        expect(await gateway.usageRecord(headers.get('x-request-id') ?? '')).toMatchObject({ stream: true, status: 200, errorCode: null });
      }
    });
  });

  describe('keep-alive pings', () => {
    it.each([
      ['chat-only', '/v1/chat/completions'],
      ['resp-only', '/v1/responses'],
    ] as const)('sends ping events while a %s upstream stalls in the middle of a translated messages stream', async (model, path) => {
      gateway.simulator.failNext(path, { kind: 'stall-mid-stream', afterEvents: 2 });
      const client = new AbortController();

      const response = await post(
        '/v1/messages',
        { model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Wait for me' }] },
        client.signal,
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const items = await readSseUntil(response, (seen) => seen.filter((item) => item.event === 'ping').length >= 3);
      client.abort();

      const pings = items.filter((item) => item.event === 'ping');
      expect(pings).toHaveLength(3);
      for (const ping of pings) expect(JSON.parse(ping.data)).toEqual({ type: 'ping' });
      expect(items.find((item) => item.event !== 'ping')?.event).toBe('message_start');
      expect(items[items.length - 1].event).toBe('ping');
      expect(items.map((item) => item.event)).not.toContain('message_stop');
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual([path]);
      const record = await recordOnceWritten(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'messages', translatedTo: UPSTREAM[model].protocol, stream: true, status: 499 });
    });
  });

  describe('keep-alive pings and a client that does not read', () => {
    /** Content deltas of 256 KiB: far more than the sockets between the gateway and the client hold. */
    const DELTAS = 128;
    const PIECE = 'x'.repeat(256 * 1024);
    const chatChunk = (delta: Record<string, unknown>) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-full', object: 'chat.completion.chunk', created: 1, model: UPSTREAM['chat-only'].model, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;

    it('does not ping a client whose socket is full: the pings come once it has read what waited', async () => {
      // The upstream sends 32 MiB of text as fast as it is taken, then nothing, holding its
      // connection open. The simulator takes a chunk once the one before is written, so `taken`
      // tells how far the gateway read the upstream.
      let taken = 0;
      function* chunks(): Generator<string> {
        taken++;
        yield chatChunk({ role: 'assistant', content: '' });
        for (let delta = 0; delta < DELTAS; delta++) {
          taken++;
          yield chatChunk({ content: PIECE });
        }
      }
      gateway.simulator.failNext('/v1/chat/completions', { kind: 'raw', status: 200, contentType: 'text/event-stream', chunks: chunks(), keepOpen: true });
      const client = new AbortController();

      const response = await post(
        '/v1/messages',
        { model: 'chat-only', max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Fill my socket' }] },
        client.signal,
      );
      expect(response.status).toBe(200);
      // Ten ping intervals without reading: the gateway's writes fill the socket, and it stops
      // reading the upstream; the silence that follows is the client's own, not the upstream's.
      await new Promise((resolve) => setTimeout(resolve, 10 * PING_INTERVAL_MS));
      // The socket did fill: the gateway stopped reading the upstream part way (else the test proves nothing).
      const takenWhileFull = taken;
      const names = await eventNamesUntil(response, (seen) => {
        const lastDelta = seen.lastIndexOf('content_block_delta');
        return seen.filter((name) => name === 'content_block_delta').length >= DELTAS && seen.slice(lastDelta).filter((name) => name === 'ping').length >= 2;
      });
      client.abort();

      const lastDelta = names.lastIndexOf('content_block_delta');
      expect(takenWhileFull).toBeLessThan(DELTAS + 1);
      expect(names.filter((name) => name === 'content_block_delta')).toHaveLength(DELTAS);
      // Not one ping among the deltas that waited; after them the upstream's silence is pinged as usual.
      expect(names.slice(0, lastDelta).filter((name) => name === 'ping')).toEqual([]);
      expect(names.slice(lastDelta).filter((name) => name === 'ping').length).toBeGreaterThanOrEqual(2);
    });
  });

  describe('keep-alive pings before the first event', () => {
    it.each([
      ['chat-only', '/v1/chat/completions'],
      ['resp-only', '/v1/responses'],
    ] as const)('answers the head and pings while a %s upstream sends nothing at all', async (model, path) => {
      gateway.simulator.failNext(path, { kind: 'stall-mid-stream', afterEvents: 0 });
      const client = new AbortController();

      const response = await post(
        '/v1/messages',
        { model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Say nothing yet' }] },
        client.signal,
      );
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const items = await readSseUntil(response, (seen) => seen.filter((item) => item.event === 'ping').length >= 2);
      client.abort();

      expect(items.map((item) => item.event)).toEqual(['ping', 'ping']);
      const record = await recordOnceWritten(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'messages', translatedTo: UPSTREAM[model].protocol, stream: true, status: 499 });
    });
  });

  describe('an upstream that breaks off mid-stream', () => {
    it.each(RESPONSES_ENTRY_MODELS)('ends a responses stream from %s with an error event and a failed response', async (model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { kind: 'reset-mid-stream', afterEvents: 4 });

      const response = await post('/v1/responses', { model, input: 'Break off please', stream: true });

      expect(response.status).toBe(200);
      const items = parseSse(await response.text());
      const types = typesOf(items);
      expect(types[0]).toBe('response.created');
      expect(types).not.toContain('response.completed');
      expect(types.slice(-2)).toEqual(['error', 'response.failed']);
      const error = JSON.parse(items.find((item) => JSON.parse(item.data).type === 'error')?.data ?? '{}');
      expect(error).toMatchObject({ type: 'error', code: expect.any(String), message: expect.any(String) });
      const failed = JSON.parse(items[items.length - 1].data);
      expect(failed.response).toMatchObject({ status: 'failed', error: { code: expect.any(String), message: expect.any(String) } });
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'responses', translatedTo: UPSTREAM[model].protocol, stream: true });
      expect(record?.errorCode).not.toBeNull();
    });

    it.each(RESPONSES_ENTRY_MODELS)('makes the openai SDK raise the error of a responses stream from %s that broke off', async (model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { kind: 'reset-mid-stream', afterEvents: 4 });
      const stream = openai.responses.stream({ model, input: 'Break off please' });
      const types: string[] = [];

      const failure = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().catch((error: unknown) => error);

      // The SDK raises the stream's `error` event itself, where it reads it.
      expect(failure).toMatchObject({ type: 'error', code: expect.any(String), message: expect.any(String) });
      await expect(stream.finalResponse()).rejects.toMatchObject({ type: 'error', code: expect.any(String), message: expect.any(String) });
      expect(types[0]).toBe('response.created');
      expect(types).not.toContain('response.completed');
    });

    it.each(MESSAGES_ENTRY_MODELS)('ends a messages stream from %s with an error event that the SDK raises', async (model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { kind: 'reset-mid-stream', afterEvents: 4 });

      const response = await post('/v1/messages', { model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Break off please' }] });
      expect(response.status).toBe(200);
      const items = parseSse(await response.text());
      expect(items.find((item) => item.event !== 'ping')?.event).toBe('message_start');
      const last = items[items.length - 1];
      expect(last.event).toBe('error');
      expect(JSON.parse(last.data)).toEqual({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
      expect(items.map((item) => item.event)).not.toContain('message_stop');
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'messages', translatedTo: UPSTREAM[model].protocol, stream: true });
      expect(record?.errorCode).not.toBeNull();

      gateway.simulator.failNext(UPSTREAM[model].path, { kind: 'reset-mid-stream', afterEvents: 4 });
      const stream = anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Break off please' }] });
      await expect(stream.finalMessage()).rejects.toBeInstanceOf(Anthropic.APIError);
    });
  });

  describe('an upstream error status before the stream', () => {
    it.each([
      ['msg-only', 400],
      ['msg-only', 429],
      ['chat-only', 400],
      ['chat-only', 429],
    ] as const)('answers a responses call on %s that the upstream refuses with %i in the responses error shape', async (model, status) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { status, headers: { 'retry-after': '7' } });

      const response = await post('/v1/responses', { model, input: 'Refuse me', stream: true });

      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      if (status === 429) expect(response.headers.get('retry-after')).toBe('7');
      const body = (await response.json()) as Body;
      expect(Object.keys(body)).toEqual(['error']);
      expect(Object.keys(body.error)).toEqual(expect.arrayContaining(['message', 'type', 'code']));
      expect(body.error).toMatchObject({ message: expect.any(String), type: expect.any(String) });
      expect(body.error.message).toContain(`Simulated upstream failure (${status})`);
      expect(response.headers.get('x-gateway-translated')).toBe(UPSTREAM[model].protocol);
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'responses', translatedTo: UPSTREAM[model].protocol, status });
      expect(record?.costNano).toBe(0n);
    });

    it.each([
      ['resp-only', 400],
      ['resp-only', 429],
      ['chat-only', 400],
      ['chat-only', 429],
    ] as const)('answers a messages call on %s that the upstream refuses with %i in the messages error shape', async (model, status) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { status, headers: { 'retry-after': '7' } });

      const response = await post('/v1/messages', { model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Refuse me' }] });

      expect(response.status).toBe(status);
      if (status === 429) expect(response.headers.get('retry-after')).toBe('7');
      const body = await response.json();
      expect(body).toEqual({
        type: 'error',
        error: {
          type: status === 429 ? 'rate_limit_error' : 'invalid_request_error',
          message: expect.stringContaining(`Simulated upstream failure (${status})`),
        },
      });
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'messages', translatedTo: UPSTREAM[model].protocol, status });
      expect(record?.costNano).toBe(0n);
    });

    it.each([
      ['/v1/responses', 'msg-only'],
      ['/v1/responses', 'chat-only'],
      ['/v1/messages', 'resp-only'],
      ['/v1/messages', 'chat-only'],
    ] as const)('re-expresses a non-JSON upstream error page on %s (%s) in the called protocol with its status', async (entry, model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { status: 503, body: '<html><body>Service Unavailable</body></html>' });
      const body = entry === '/v1/responses' ? { model, input: 'Hello' } : { model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] };

      const response = await post(entry, body);

      expect(response.status).toBe(503);
      const answer = (await response.json()) as Body;
      if (entry === '/v1/responses') {
        expect(answer).toEqual({ error: expect.objectContaining({ message: expect.any(String), type: expect.any(String), code: null }) });
      } else {
        expect(answer).toEqual({ type: 'error', error: { type: 'overloaded_error', message: expect.any(String) } });
      }
    });

    it.each([
      ['/v1/responses', 'msg-only'],
      ['/v1/messages', 'resp-only'],
    ] as const)('turns an upstream 401 on %s (%s) into 502 upstream_failed in the called protocol', async (entry, model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { status: 401 });
      const body = entry === '/v1/responses' ? { model, input: 'Hello' } : { model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] };

      const response = await post(entry, body);

      expect(response.status).toBe(502);
      const answer = (await response.json()) as Body;
      if (entry === '/v1/responses') expect(answer).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'upstream_failed' } });
      else expect(answer).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.any(String) } });
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ status: 502, errorCode: 'upstream_failed', translatedTo: UPSTREAM[model].protocol });
    });

    it.each([
      ['/v1/responses', 'msg-only'],
      ['/v1/responses', 'chat-only'],
      ['/v1/messages', 'resp-only'],
      ['/v1/messages', 'chat-only'],
    ] as const)('answers 502 on %s (%s) in the called protocol when the upstream JSON answer breaks off halfway', async (entry, model) => {
      gateway.simulator.failNext(UPSTREAM[model].path, { kind: 'reset-mid-stream', afterEvents: 1 });
      const body = entry === '/v1/responses' ? { model, input: 'Hello' } : { model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] };

      const response = await post(entry, body);

      expect(response.status).toBe(502);
      const answer = (await response.json()) as Body;
      if (entry === '/v1/responses') expect(answer).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'upstream_failed' } });
      else expect(answer).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.any(String) } });
    });

    it('raises RateLimitError in the openai SDK with the upstream Retry-After', async () => {
      gateway.simulator.failNext('/v1/messages', { status: 429, headers: { 'retry-after': '7' } });

      const failure = openai.responses.stream({ model: 'msg-only', input: 'Refuse me' }).finalResponse();

      await expect(failure).rejects.toBeInstanceOf(OpenAI.RateLimitError);
      await expect(failure).rejects.toMatchObject({ status: 429 });
      expect(((await failure.catch((error: unknown) => error)) as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('7');
    });

    it('raises RateLimitError in the anthropic SDK with the upstream Retry-After', async () => {
      gateway.simulator.failNext('/v1/responses', { status: 429, headers: { 'retry-after': '7' } });

      const failure = anthropic.messages.stream({ model: 'resp-only', max_tokens: 256, messages: [{ role: 'user', content: 'Refuse me' }] }).finalMessage();

      await expect(failure).rejects.toBeInstanceOf(Anthropic.RateLimitError);
      const error = (await failure.catch((caught: unknown) => caught)) as InstanceType<typeof Anthropic.APIError>;
      expect(error.status).toBe(429);
      expect(error.headers?.get('retry-after')).toBe('7');
      expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    });
  });
});
