import Anthropic from '@anthropic-ai/sdk';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';
import { decodeChatTurn } from './simulator/chat-route';
import { decodeMessagesTurn } from './simulator/messages-route';
import { decodeResponsesTurn } from './simulator/responses-route';
import { opaqueToken, planReply, type ReplyUsage } from './simulator/scripted-model';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * The messages entry (`POST /v1/messages`) on models without a messages interface
 * (SPEC.md "Translation", messages entry table), called through the official
 * `@anthropic-ai/sdk` as users call it: the request reaches a responses or chat-completions
 * upstream, the answer comes back as a Message, and the gateway says what it translated and
 * what it dropped.
 */

const OWNER = 'team-translation';

/** Prices of the YAML below in nano-units per 1M tokens, restated so the tests compute costs themselves. */
const PRICES = {
  'resp-only': { input: 2_000_000_000n, cached: 500_000_000n, output: 8_000_000_000n },
  'chat-only': { input: 2_500_000_000n, cached: 1_250_000_000n, output: 10_000_000_000n },
} as const;

/**
 * One simulator line. `resp-only-next` speaks the same protocol as `resp-only` under another
 * upstream model; `chat-only` has no `max_tokens` in the catalog.
 */
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
    capabilities: { image_input: true }
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: resp-only
    upstream_model: vendor-resp-1
    interfaces: [responses]
    lines: [line-sim]
    capabilities: { image_input: true }
    max_tokens: 32000
    prices: { input_tokens: 2, cached_input_tokens: 0.5, output_tokens: 8 }
  - id: resp-only-next
    upstream_model: vendor-resp-2
    interfaces: [responses]
    lines: [line-sim]
    max_tokens: 32000
    prices: { input_tokens: 2, output_tokens: 8 }
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
  'resp-only': { path: '/v1/responses', model: 'vendor-resp-1' },
  'chat-only': { path: '/v1/chat/completions', model: 'vendor-chat-1' },
} as const;
const BOTH = ['resp-only', 'chat-only'] as const;

const WEATHER_SCHEMA = {
  type: 'object' as const,
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
};

const WEATHER_TOOL: Anthropic.Tool = { name: 'get_weather', description: 'Current weather of a city', input_schema: WEATHER_SCHEMA };

const TIME_TOOL: Anthropic.Tool = {
  name: 'get_time',
  description: 'Current time in a timezone',
  input_schema: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] },
};

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const IMAGE_ADDRESS = 'https://images.example.com/cat.png';
const PDF_BASE64 = 'JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCnRyYWlsZXIKPDwvUm9vdCAxIDAgUj4+CiUlRU9GCg==';

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
function costOf(usage: ReplyUsage, model: keyof typeof PRICES): bigint {
  const prices = PRICES[model];
  const total =
    BigInt(usage.inputTokens - usage.cachedTokens) * prices.input + BigInt(usage.cachedTokens) * prices.cached + BigInt(usage.outputTokens) * prices.output;
  return (total + 500_000n) / 1_000_000n;
}

/** The dropped fields the gateway named, in any order. */
function droppedFields(headers: Headers): string[] {
  const value = headers.get('x-gateway-dropped');
  return value === null
    ? []
    : value
        .split(',')
        .map((field) => field.trim())
        .sort();
}

/**
 * Sampling fields the messages API takes and older SDK versions declared; this SDK version no
 * longer types them, so requests that carry them are built through this.
 */
type LegacySampling = { temperature?: number; top_p?: number; top_k?: number };
function withSampling(params: Anthropic.MessageCreateParamsNonStreaming & LegacySampling): Anthropic.MessageCreateParamsNonStreaming {
  return params;
}

function toolUsesOf(message: Anthropic.Message): Anthropic.ToolUseBlock[] {
  return message.content.filter((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
}

function textOf(message: Anthropic.Message): string {
  return message.content
    .filter((block): block is Anthropic.TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('');
}

/** The reasoning text the simulator produces for a question. */
function simulatedThinking(question: string): string {
  return `Thinking about "${question}" before answering.`;
}

/** The encrypted reasoning a responses upstream of the simulator returns for that text. */
function simulatedEncryptedReasoning(question: string): string {
  return `gAAAAAB${opaqueToken('reasoning', simulatedThinking(question))}`;
}

describe('messages entry translated to responses and chat-completions upstreams', () => {
  let gateway: GatewayHarness;
  let anthropic: Anthropic;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: translationConfigYaml });
    anthropic = new Anthropic({ baseURL: gateway.url, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000 });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
  });

  /** The single upstream call, checked for its path and the upstream model name. */
  function onlyUpstreamCall(model: keyof typeof UPSTREAM): RecordedRequest {
    const calls = gateway.simulator.requests;
    expect(calls.map((call) => call.path)).toEqual([UPSTREAM[model].path]);
    expect(bodyOf(calls[0]).model).toBe(UPSTREAM[model].model);
    return calls[0];
  }

  function lastUpstreamBody(): Body {
    const calls = gateway.simulator.requests;
    expect(calls.length).toBeGreaterThan(0);
    return bodyOf(calls[calls.length - 1]);
  }

  /** A raw call, for the exact wire shape of errors. */
  async function post(body: unknown): Promise<{ status: number; headers: Headers; json: any; requestId: string }> {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: JSON.parse(text), requestId: response.headers.get('x-request-id') ?? '' };
  }

  describe('answers, headers and billing', () => {
    it('answers a messages call on a responses-only model with the upstream text, saying it translated to responses', async () => {
      const { data: message, response: raw } = await anthropic.messages
        .create({ model: 'resp-only', max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello translation' }] })
        .withResponse();

      expect(message.type).toBe('message');
      expect(message.role).toBe('assistant');
      expect(message.content).toEqual([{ type: 'text', text: 'Hello from vendor-resp-1: Hello translation' }]);
      expect(message.stop_reason).toBe('end_turn');
      expect(raw.headers.get('x-gateway-translated')).toBe('responses');
      expect(raw.headers.get('x-gateway-dropped')).toBeNull();
      const upstream = onlyUpstreamCall('resp-only');
      expect(bodyOf(upstream)).toMatchObject({
        model: 'vendor-resp-1',
        instructions: 'Be brief.',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello translation' }] }],
        max_output_tokens: 256,
        store: false,
        stream: false,
      });
      expect(bodyOf(upstream)).not.toHaveProperty('reasoning');
      const usage = upstreamUsage(upstream);
      expect(message.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
      const record = await gateway.usageRecord(raw.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({
        model: 'resp-only',
        ownerId: OWNER,
        interface: 'messages',
        translatedTo: 'responses',
        status: 200,
        stream: false,
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      });
      expect(record?.costNano).toBe(costOf(usage, 'resp-only'));
    });

    it('answers a messages call on a chat-only model with the upstream text, saying it translated to chat_completions', async () => {
      const { data: message, response: raw } = await anthropic.messages
        .create({ model: 'chat-only', max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello translation' }] })
        .withResponse();

      expect(message.content).toEqual([{ type: 'text', text: 'Hello from vendor-chat-1: Hello translation' }]);
      expect(message.stop_reason).toBe('end_turn');
      expect(raw.headers.get('x-gateway-translated')).toBe('chat_completions');
      expect(raw.headers.get('x-gateway-dropped')).toBeNull();
      const upstream = onlyUpstreamCall('chat-only');
      expect(bodyOf(upstream)).toEqual({
        model: 'vendor-chat-1',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hello translation' },
        ],
        max_completion_tokens: 256,
        stream: false,
      });
      const usage = upstreamUsage(upstream);
      expect(message.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
      const record = await gateway.usageRecord(raw.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({
        model: 'chat-only',
        interface: 'messages',
        translatedTo: 'chat_completions',
        status: 200,
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      });
      expect(record?.costNano).toBe(costOf(usage, 'chat-only'));
    });

    it('picks the responses interface first when the model offers responses and chat-completions', async () => {
      const { data: message, response: raw } = await anthropic.messages
        .create({ model: 'resp-and-chat', max_tokens: 128, messages: [{ role: 'user', content: 'Which one?' }] })
        .withResponse();

      expect(textOf(message)).toBe('Hello from vendor-resp-chat-1: Which one?');
      expect(raw.headers.get('x-gateway-translated')).toBe('responses');
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual(['/v1/responses']);
      expect(lastUpstreamBody().model).toBe('vendor-resp-chat-1');
    });

    it.each(BOTH)('reports an answer from %s cut at max_tokens with stop_reason max_tokens', async (model) => {
      const message = await anthropic.messages.create({ model, max_tokens: 3, messages: [{ role: 'user', content: 'Please tell me a rather long story' }] });

      expect(message.stop_reason).toBe('max_tokens');
      expect(message.content).toEqual([{ type: 'text', text: `Hello from ${UPSTREAM[model].model}:` }]);
    });

    it('does not translate count_tokens: a responses-only model refuses it with 400 in the messages error shape', async () => {
      const request = anthropic.messages.countTokens({ model: 'resp-only', messages: [{ role: 'user', content: 'How many tokens?' }] });

      await expect(request).rejects.toBeInstanceOf(Anthropic.BadRequestError);
      await expect(request).rejects.toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('forwards natively, without translation headers, when the model offers messages itself', async () => {
      const { response: raw } = await anthropic.messages
        .create({ model: 'msg-and-chat', max_tokens: 128, messages: [{ role: 'user', content: 'Native please' }] })
        .withResponse();

      expect(raw.headers.get('x-gateway-translated')).toBeNull();
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual(['/v1/messages']);
    });

    it.each(BOTH)('reports cached input tokens of %s apart, as messages usage does, and bills them at the cached price', async (model) => {
      const { data: message, response: raw } = await anthropic.messages
        .create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'cache-me: a long shared prefix the upstream has cached' }] })
        .withResponse();

      const usage = upstreamUsage(onlyUpstreamCall(model));
      expect(usage.cachedTokens).toBeGreaterThan(0);
      expect(message.usage).toMatchObject({
        input_tokens: usage.inputTokens - usage.cachedTokens,
        cache_read_input_tokens: usage.cachedTokens,
        output_tokens: usage.outputTokens,
      });
      const record = await gateway.usageRecord(raw.headers.get('x-request-id') ?? '');
      expect(record?.usage).toMatchObject({ input_tokens: usage.inputTokens, cached_input_tokens: usage.cachedTokens });
      expect(record?.costNano).toBe(costOf(usage, model));
    });
  });

  describe('tools', () => {
    it('declares client tools to a responses upstream as function tools', async () => {
      const message = await anthropic.messages.create({
        model: 'resp-only',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'What is the weather?' }],
        tools: [WEATHER_TOOL],
      });

      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'Paris' } }]);
      expect(bodyOf(onlyUpstreamCall('resp-only')).tools).toEqual([
        { type: 'function', name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_SCHEMA, strict: false },
      ]);
    });

    it('declares client tools to a chat-completions upstream as function tools', async () => {
      const message = await anthropic.messages.create({
        model: 'chat-only',
        max_tokens: 256,
        messages: [{ role: 'user', content: 'What is the weather?' }],
        tools: [WEATHER_TOOL],
      });

      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'Paris' } }]);
      expect(bodyOf(onlyUpstreamCall('chat-only')).tools).toEqual([
        { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_SCHEMA } },
      ]);
    });

    it('finishes a tool loop through a responses upstream: tool_use, tool_result, final text', async () => {
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await anthropic.messages.create({ model: 'resp-only', max_tokens: 256, messages, tools: [WEATHER_TOOL] });
      const [toolUse] = toolUsesOf(first);
      messages.push(
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18 degrees and sunny' }] },
      );

      const second = await anthropic.messages.create({ model: 'resp-only', max_tokens: 256, messages, tools: [WEATHER_TOOL] });

      expect(second.stop_reason).toBe('end_turn');
      expect(second.content).toEqual([{ type: 'text', text: 'Hello from vendor-resp-1: the tool said 18 degrees and sunny' }]);
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/responses']);
      expect(lastUpstreamBody().input).toEqual([
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What is the weather in Paris?' }] },
        { type: 'function_call', call_id: toolUse.id, name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: toolUse.id, output: '18 degrees and sunny' },
      ]);
    });

    it('finishes a tool loop through a chat-completions upstream: tool_use, tool_result, final text', async () => {
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await anthropic.messages.create({ model: 'chat-only', max_tokens: 256, messages, tools: [WEATHER_TOOL] });
      const [toolUse] = toolUsesOf(first);
      messages.push(
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18 degrees and sunny' }] },
      );

      const second = await anthropic.messages.create({ model: 'chat-only', max_tokens: 256, messages, tools: [WEATHER_TOOL] });

      expect(second.content).toEqual([{ type: 'text', text: 'Hello from vendor-chat-1: the tool said 18 degrees and sunny' }]);
      expect(lastUpstreamBody().messages).toEqual([
        { role: 'user', content: 'What is the weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: toolUse.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: toolUse.id, content: '18 degrees and sunny' },
      ]);
    });

    it.each(BOTH)('returns two parallel tool_use blocks with distinct ids from %s', async (model) => {
      const message = await anthropic.messages.create({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Check the weather in parallel please' }],
        tools: [WEATHER_TOOL],
      });

      const toolUses = toolUsesOf(message);
      expect(toolUses).toHaveLength(2);
      for (const toolUse of toolUses) expect(toolUse).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } });
      expect(toolUses[0].id).not.toBe(toolUses[1].id);
    });

    it.each(BOTH)('asks %s for one call at a time when disable_parallel_tool_use is set', async (model) => {
      const message = await anthropic.messages.create({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Check the weather in parallel please' }],
        tools: [WEATHER_TOOL],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      });

      expect(toolUsesOf(message)).toHaveLength(1);
      expect(lastUpstreamBody().parallel_tool_calls).toBe(false);
    });

    it.each([
      [{ type: 'auto' }, 'auto', 'auto', ['get_weather']],
      [{ type: 'none' }, 'none', 'none', []],
      [{ type: 'any' }, 'required', 'required', ['get_weather']],
      [{ type: 'tool', name: 'get_time' }, { type: 'function', name: 'get_time' }, { type: 'function', function: { name: 'get_time' } }, ['get_time']],
    ] as const)('maps tool_choice %j to responses %j and chat %j', async (toolChoice, responsesChoice, chatChoice, calledTools) => {
      for (const model of BOTH) {
        gateway.simulator.reset();
        const message = await anthropic.messages.create({
          model,
          max_tokens: 256,
          messages: [{ role: 'user', content: 'What is the weather?' }],
          tools: [WEATHER_TOOL, TIME_TOOL],
          tool_choice: toolChoice as Anthropic.ToolChoice,
        });

        expect(bodyOf(onlyUpstreamCall(model)).tool_choice).toEqual(model === 'resp-only' ? responsesChoice : chatChoice);
        expect(toolUsesOf(message).map((toolUse) => toolUse.name)).toEqual(calledTools);
      }
    });

    it.each(BOTH)('drops typed server tools such as web_search_20250305 on %s and lists tools in X-Gateway-Dropped', async (model) => {
      const { data: message, response: raw } = await anthropic.messages
        .create({
          model,
          max_tokens: 256,
          messages: [{ role: 'user', content: 'What is the weather?' }],
          tools: [WEATHER_TOOL, { type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
        })
        .withResponse();

      expect(droppedFields(raw.headers)).toEqual(['tools']);
      const upstreamTools = bodyOf(onlyUpstreamCall(model)).tools as Body[];
      expect(upstreamTools).toHaveLength(1);
      expect(JSON.stringify(upstreamTools)).toContain('get_weather');
      expect(JSON.stringify(upstreamTools)).not.toContain('web_search');
      expect(toolUsesOf(message).map((toolUse) => toolUse.name)).toEqual(['get_weather']);
    });
  });

  describe('requests the translation path refuses', () => {
    const cases: Array<[string, Body]> = [
      [
        'an image with source.type file',
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is in this image?' },
                { type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } },
              ],
            },
          ],
        },
      ],
      [
        'a document with source.type file',
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Summarise the report' },
                { type: 'document', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } },
              ],
            },
          ],
        },
      ],
    ];

    it.each(cases.flatMap(([name, body]) => BOTH.map((model) => [name, model, body] as const)))(
      'refuses %s on %s with 400 in the messages error shape, sending nothing upstream and keeping no record',
      async (_name, model, body) => {
        const answer = await post({ model, max_tokens: 256, ...body });

        expect(answer.status).toBe(400);
        expect(answer.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
        expect(answer.json.error.message.length).toBeGreaterThan(0);
        expect(gateway.simulator.requests).toHaveLength(0);
        expect(answer.requestId).not.toBe('');
        expect(await gateway.usageRecord(answer.requestId)).toBeNull();
      },
    );

    it.each(BOTH)('refuses a call without max_tokens on %s with 400 in the messages error shape', async (model) => {
      const answer = await post({ model, messages: [{ role: 'user', content: 'Hello' }] });

      expect(answer.status).toBe(400);
      expect(answer.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('raises a BadRequestError in the SDK for an uploaded file reference', async () => {
      const request = anthropic.messages.create({
        model: 'resp-only',
        max_tokens: 256,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' } }] }],
      });

      await expect(request).rejects.toBeInstanceOf(Anthropic.BadRequestError);
      await expect(request).rejects.toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  describe('dropped and ignored fields', () => {
    it.each(BOTH)('lists top_k as dropped on %s and does not send it upstream', async (model) => {
      const { response: raw } = await anthropic.messages
        .create(withSampling({ model, max_tokens: 256, top_k: 40, messages: [{ role: 'user', content: 'Hello' }] }))
        .withResponse();

      expect(raw.headers.get('x-gateway-dropped')).toBe('top_k');
      expect(bodyOf(onlyUpstreamCall(model))).not.toHaveProperty('top_k');
    });

    it.each(BOTH)('never lists ignored fields (metadata, service_tier) on %s', async (model) => {
      const { data: message, response: raw } = await anthropic.messages
        .create({
          model,
          max_tokens: 256,
          metadata: { user_id: 'user-1234' },
          service_tier: 'auto',
          messages: [{ role: 'user', content: 'Hello' }],
        })
        .withResponse();

      expect(message.stop_reason).toBe('end_turn');
      expect(raw.headers.has('x-gateway-dropped')).toBe(false);
      const upstream = bodyOf(onlyUpstreamCall(model));
      expect(upstream).not.toHaveProperty('metadata');
      expect(upstream).not.toHaveProperty('service_tier');
    });

    it('lists only the dropped field when ignored ones come along', async () => {
      const { response: raw } = await anthropic.messages
        .create(
          withSampling({ model: 'chat-only', max_tokens: 256, top_k: 40, metadata: { user_id: 'user-1234' }, messages: [{ role: 'user', content: 'Hello' }] }),
        )
        .withResponse();

      expect(droppedFields(raw.headers)).toEqual(['top_k']);
    });

    it('drops temperature, top_p and stop_sequences toward a responses upstream and lists them comma-separated', async () => {
      const { response: raw } = await anthropic.messages
        .create(
          withSampling({
            model: 'resp-only',
            max_tokens: 256,
            temperature: 0.3,
            top_p: 0.9,
            stop_sequences: ['END'],
            messages: [{ role: 'user', content: 'Hello' }],
          }),
        )
        .withResponse();

      expect(raw.headers.get('x-gateway-dropped')).toMatch(/^[a-z_]+(,[a-z_]+)*$/);
      expect(droppedFields(raw.headers)).toEqual(['stop_sequences', 'temperature', 'top_p']);
      const upstream = bodyOf(onlyUpstreamCall('resp-only'));
      for (const field of ['temperature', 'top_p', 'stop', 'stop_sequences']) expect(upstream).not.toHaveProperty(field);
    });

    it('keeps temperature and top_p toward a chat-completions upstream and sends stop_sequences as stop', async () => {
      const { response: raw } = await anthropic.messages
        .create(
          withSampling({
            model: 'chat-only',
            max_tokens: 256,
            temperature: 0.3,
            top_p: 0.9,
            stop_sequences: ['END', 'STOP'],
            messages: [{ role: 'user', content: 'Hello' }],
          }),
        )
        .withResponse();

      expect(raw.headers.has('x-gateway-dropped')).toBe(false);
      const upstream = bodyOf(onlyUpstreamCall('chat-only'));
      expect(upstream).toMatchObject({ temperature: 0.3, top_p: 0.9, stop: ['END', 'STOP'] });
      expect(upstream).not.toHaveProperty('stop_sequences');
    });
  });

  describe('reasoning', () => {
    it('keeps temperature, top_p and stop_sequences toward a chat-completions upstream even with thinking on', async () => {
      const { response: raw } = await anthropic.messages
        .create(
          withSampling({
            model: 'chat-only',
            max_tokens: 16000,
            thinking: { type: 'enabled', budget_tokens: 8000 },
            temperature: 0.3,
            top_p: 0.9,
            stop_sequences: ['END'],
            messages: [{ role: 'user', content: 'Hello' }],
          }),
        )
        .withResponse();

      expect(raw.headers.has('x-gateway-dropped')).toBe(false);
      expect(bodyOf(onlyUpstreamCall('chat-only'))).toMatchObject({ reasoning_effort: 'medium', temperature: 0.3, top_p: 0.9, stop: ['END'] });
    });

    it.each([
      [1024, 'low'],
      [4095, 'low'],
      [4096, 'medium'],
      [16383, 'medium'],
      [16384, 'high'],
      [24000, 'high'],
    ] as const)('maps thinking.budget_tokens %i to the reasoning strength %s', async (budget, effort) => {
      for (const model of BOTH) {
        gateway.simulator.reset();
        await anthropic.messages.create({
          model,
          max_tokens: 32000,
          thinking: { type: 'enabled', budget_tokens: budget },
          messages: [{ role: 'user', content: 'Think first' }],
        });

        const upstream = bodyOf(onlyUpstreamCall(model));
        if (model === 'resp-only') expect(upstream.reasoning).toMatchObject({ effort });
        else expect(upstream.reasoning_effort).toBe(effort);
      }
    });

    it.each([
      [{ type: 'enabled', budget_tokens: 2048 }, 'high', 'high'],
      [{ type: 'enabled', budget_tokens: 20000 }, 'low', 'low'],
      [{ type: 'enabled', budget_tokens: 8000 }, 'max', 'high'],
    ] as const)('lets output_config.effort take precedence over thinking %j (effort %s gives %s)', async (thinking, given, effort) => {
      for (const model of BOTH) {
        gateway.simulator.reset();
        await anthropic.messages.create({
          model,
          max_tokens: 32000,
          thinking,
          output_config: { effort: given },
          messages: [{ role: 'user', content: 'Think first' }],
        });

        const upstream = bodyOf(onlyUpstreamCall(model));
        if (model === 'resp-only') expect(upstream.reasoning).toMatchObject({ effort });
        else expect(upstream.reasoning_effort).toBe(effort);
      }
    });

    it.each(BOTH)('maps adaptive thinking on %s to medium', async (model) => {
      await anthropic.messages.create({ model, max_tokens: 16000, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'Think' }] });

      const upstream = bodyOf(onlyUpstreamCall(model));
      if (model === 'resp-only') expect(upstream.reasoning).toMatchObject({ effort: 'medium' });
      else expect(upstream.reasoning_effort).toBe('medium');
    });

    it.each(BOTH)('sends no reasoning to %s when thinking is disabled or absent', async (model) => {
      await anthropic.messages.create({ model, max_tokens: 256, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'Hi' }] });
      await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }] });

      for (const request of gateway.simulator.requests) {
        expect(bodyOf(request)).not.toHaveProperty('reasoning');
        expect(bodyOf(request)).not.toHaveProperty('reasoning_effort');
      }
    });

    it.each([
      [{ type: 'any' }, 'resp-only'],
      [{ type: 'any' }, 'chat-only'],
      [{ type: 'tool', name: 'get_weather' }, 'resp-only'],
      [{ type: 'tool', name: 'get_weather' }, 'chat-only'],
    ] as const)('switches reasoning off when tool_choice is %j (%s)', async (toolChoice, model) => {
      const message = await anthropic.messages.create({
        model,
        max_tokens: 32000,
        thinking: { type: 'enabled', budget_tokens: 8000 },
        tools: [WEATHER_TOOL],
        tool_choice: toolChoice,
        messages: [{ role: 'user', content: 'What is the weather?' }],
      });

      const upstream = bodyOf(onlyUpstreamCall(model));
      expect(upstream).not.toHaveProperty('reasoning');
      expect(upstream).not.toHaveProperty('reasoning_effort');
      expect(message.content.map((block) => block.type)).toEqual(['tool_use']);
    });

    it('returns a thinking block with a signature, then the text, from a responses upstream', async () => {
      const message = await anthropic.messages.create({
        model: 'resp-only',
        max_tokens: 16000,
        thinking: { type: 'enabled', budget_tokens: 8000 },
        messages: [{ role: 'user', content: 'Plan a trip' }],
      });

      expect(message.content).toEqual([
        { type: 'thinking', thinking: simulatedThinking('Plan a trip'), signature: expect.stringMatching(/.+/) },
        { type: 'text', text: 'Hello from vendor-resp-1: Plan a trip' },
      ]);
      expect(bodyOf(onlyUpstreamCall('resp-only'))).toMatchObject({
        reasoning: { effort: 'medium' },
        include: ['reasoning.encrypted_content'],
        store: false,
      });
    });

    it('bills the reasoning tokens a chat-completions upstream reports as output', async () => {
      const { data: message, response: raw } = await anthropic.messages
        .create({
          model: 'chat-only',
          max_tokens: 16000,
          thinking: { type: 'enabled', budget_tokens: 8000 },
          messages: [{ role: 'user', content: 'Plan a trip' }],
        })
        .withResponse();

      expect(message.content).toEqual([{ type: 'text', text: 'Hello from vendor-chat-1: Plan a trip' }]);
      const usage = upstreamUsage(onlyUpstreamCall('chat-only'));
      expect(usage.reasoningTokens).toBeGreaterThan(0);
      expect(message.usage.output_tokens).toBe(usage.outputTokens);
      const record = await gateway.usageRecord(raw.headers.get('x-request-id') ?? '');
      expect(record?.usage).toMatchObject({ output_tokens: usage.outputTokens, reasoning_tokens: usage.reasoningTokens });
      expect(record?.costNano).toBe(costOf(usage, 'chat-only'));
    });

    describe('continuation', () => {
      const QUESTION = 'Plan a trip';
      const FOLLOW_UP = 'And then?';
      const THINKING = { type: 'enabled', budget_tokens: 8000 } as const;

      /** A first turn on resp-only whose content the client sends back. */
      async function firstTurn(): Promise<Anthropic.Message> {
        const first = await anthropic.messages.create({
          model: 'resp-only',
          max_tokens: 16000,
          thinking: THINKING,
          messages: [{ role: 'user', content: QUESTION }],
        });
        expect(first.content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/.+/) });
        gateway.simulator.reset();
        return first;
      }

      function nextMessages(first: Anthropic.Message): Anthropic.MessageParam[] {
        return [
          { role: 'user', content: QUESTION },
          { role: 'assistant', content: first.content },
          { role: 'user', content: FOLLOW_UP },
        ];
      }

      it('restores the reasoning item with its encrypted_content on the same responses upstream model', async () => {
        const first = await firstTurn();

        const second = await anthropic.messages.create({ model: 'resp-only', max_tokens: 16000, thinking: THINKING, messages: nextMessages(first) });

        expect(textOf(second)).toBe(`Hello from vendor-resp-1: ${FOLLOW_UP}`);
        const input = bodyOf(onlyUpstreamCall('resp-only')).input as Body[];
        expect(input.map((item) => item.type)).toEqual(['message', 'reasoning', 'message', 'message']);
        expect(input[1]).toMatchObject({
          type: 'reasoning',
          summary: [{ type: 'summary_text', text: simulatedThinking(QUESTION) }],
          encrypted_content: simulatedEncryptedReasoning(QUESTION),
        });
        expect(input[2]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: `Hello from vendor-resp-1: ${QUESTION}` }] });
      });

      it('restores the reasoning item ahead of the function call when a tool loop continues', async () => {
        const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
        const first = await anthropic.messages.create({ model: 'resp-only', max_tokens: 16000, thinking: THINKING, messages, tools: [WEATHER_TOOL] });
        expect(first.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
        const [toolUse] = toolUsesOf(first);
        messages.push(
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'rainy' }] },
        );
        gateway.simulator.reset();

        const second = await anthropic.messages.create({ model: 'resp-only', max_tokens: 16000, thinking: THINKING, messages, tools: [WEATHER_TOOL] });

        expect(textOf(second)).toBe('Hello from vendor-resp-1: the tool said rainy');
        const input = bodyOf(onlyUpstreamCall('resp-only')).input as Body[];
        expect(input.map((item) => item.type)).toEqual(['message', 'reasoning', 'function_call', 'function_call_output']);
        expect(input[1].encrypted_content).toBe(simulatedEncryptedReasoning('What is the weather in Paris?'));
        expect(input[2]).toMatchObject({ call_id: toolUse.id, name: 'get_weather', arguments: '{"city":"Paris"}' });
      });

      it('does not restore the reasoning on another upstream model', async () => {
        const first = await firstTurn();

        const second = await anthropic.messages.create({
          model: 'resp-only-next',
          max_tokens: 16000,
          thinking: THINKING,
          messages: nextMessages(first),
        });

        expect(textOf(second)).toBe(`Hello from vendor-resp-2: ${FOLLOW_UP}`);
        const upstream = bodyOf(gateway.simulator.requests[0]);
        expect(upstream.model).toBe('vendor-resp-2');
        expect((upstream.input as Body[]).map((item) => item.type)).toEqual(['message', 'message', 'message']);
        expect(JSON.stringify(upstream)).not.toContain(simulatedEncryptedReasoning(QUESTION));
      });

      it('carries no reasoning toward a chat-completions upstream', async () => {
        const first = await firstTurn();

        const second = await anthropic.messages.create({ model: 'chat-only', max_tokens: 16000, thinking: THINKING, messages: nextMessages(first) });

        expect(textOf(second)).toBe(`Hello from vendor-chat-1: ${FOLLOW_UP}`);
        const upstream = bodyOf(onlyUpstreamCall('chat-only'));
        expect(upstream.messages).toEqual([
          { role: 'user', content: QUESTION },
          { role: 'assistant', content: `Hello from vendor-resp-1: ${QUESTION}` },
          { role: 'user', content: FOLLOW_UP },
        ]);
        expect(JSON.stringify(upstream)).not.toContain(simulatedEncryptedReasoning(QUESTION));
      });
    });
  });

  describe('images and documents', () => {
    it('sends a base64 image and an image address to a responses upstream as input_image', async () => {
      await anthropic.messages.create({
        model: 'resp-only',
        max_tokens: 256,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare these images' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
              { type: 'image', source: { type: 'url', url: IMAGE_ADDRESS } },
            ],
          },
        ],
      });

      expect(lastUpstreamBody().input[0].content).toEqual([
        { type: 'input_text', text: 'Compare these images' },
        expect.objectContaining({ type: 'input_image', image_url: `data:image/png;base64,${PNG_BASE64}` }),
        expect.objectContaining({ type: 'input_image', image_url: IMAGE_ADDRESS }),
      ]);
    });

    it('sends a base64 image and an image address to a chat-completions upstream as image_url', async () => {
      await anthropic.messages.create({
        model: 'chat-only',
        max_tokens: 256,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare these images' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
              { type: 'image', source: { type: 'url', url: IMAGE_ADDRESS } },
            ],
          },
        ],
      });

      expect(lastUpstreamBody().messages[0].content).toEqual([
        { type: 'text', text: 'Compare these images' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
        { type: 'image_url', image_url: { url: IMAGE_ADDRESS } },
      ]);
    });

    it('sends an inline PDF document to a responses upstream as input_file with file_data', async () => {
      await anthropic.messages.create({
        model: 'resp-only',
        max_tokens: 256,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Summarise the report' },
              { type: 'document', title: 'report.pdf', source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 } },
            ],
          },
        ],
      });

      expect(lastUpstreamBody().input[0].content[1]).toEqual({
        type: 'input_file',
        filename: 'report.pdf',
        file_data: `data:application/pdf;base64,${PDF_BASE64}`,
      });
    });
  });
});
