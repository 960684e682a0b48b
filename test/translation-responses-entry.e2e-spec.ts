import OpenAI from 'openai';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';
import { decodeChatTurn } from './simulator/chat-route';
import { decodeMessagesTurn } from './simulator/messages-route';
import { decodeResponsesTurn } from './simulator/responses-route';
import { opaqueToken, planReply, type ReplyUsage } from './simulator/scripted-model';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * The responses entry (`POST /v1/responses`) on models without a responses interface
 * (SPEC.md "Translation", responses entry table), called through the official `openai` SDK as
 * users call it: the request reaches a messages or chat-completions upstream, the answer comes
 * back as a Response, and the gateway says what it translated and what it dropped.
 */

const OWNER = 'team-translation';

/** Prices of the YAML below in nano-units per 1M tokens, restated so the tests compute costs themselves. */
const PRICES = {
  'msg-only': { input: 3_000_000_000n, cached: 300_000_000n, cacheWrite: 3_750_000_000n, output: 15_000_000_000n },
  'chat-only': { input: 2_500_000_000n, cached: 1_250_000_000n, cacheWrite: 2_500_000_000n, output: 10_000_000_000n },
  'msg-and-chat': { input: 1_000_000_000n, cached: 1_000_000_000n, cacheWrite: 1_000_000_000n, output: 2_000_000_000n },
} as const;

/**
 * One simulator line. `msg-only-next` speaks the same protocol as `msg-only` under another
 * upstream model; `chat-only` has no `max_tokens`, so the 64000 default applies to it.
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
    capabilities: { image_input: true }
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: msg-only-next
    upstream_model: vendor-msg-2
    interfaces: [messages]
    lines: [line-sim]
    max_tokens: 8192
    prices: { input_tokens: 3, output_tokens: 15 }
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

const UPSTREAM_MODEL = {
  'msg-only': 'vendor-msg-1',
  'msg-only-next': 'vendor-msg-2',
  'chat-only': 'vendor-chat-1',
  'msg-and-chat': 'vendor-msg-chat-1',
} as const;

const WEATHER_PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
  additionalProperties: false,
};

const WEATHER_TOOL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: WEATHER_PARAMETERS,
  strict: true,
};

const TIME_TOOL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_time',
  description: 'Current time in a timezone',
  parameters: { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] },
  strict: false,
};

const SQL_TOOL: OpenAI.Responses.CustomTool = { type: 'custom', name: 'run_sql', description: 'Runs one SQL statement' };

/** The one string parameter a custom tool becomes upstream. */
const CUSTOM_TOOL_SCHEMA = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] };

const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_DATA_URL = `data:image/png;base64,${PNG_BASE64}`;
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

function reasoningItemOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseReasoningItem {
  const item = response.output.find((entry) => entry.type === 'reasoning');
  expect(item).toBeDefined();
  return item as OpenAI.Responses.ResponseReasoningItem;
}

function functionCallsOf(response: OpenAI.Responses.Response): OpenAI.Responses.ResponseFunctionToolCall[] {
  return response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
}

/** The reasoning text the simulator produces for a question (its signature is `opaqueToken('thinking:<model>', text)`). */
function simulatedThinking(question: string): string {
  return `Thinking about "${question}" before answering.`;
}

describe('responses entry translated to messages and chat-completions upstreams', () => {
  let gateway: GatewayHarness;
  let openai: OpenAI;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: translationConfigYaml });
    openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000 });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
  });

  /** The single upstream call, checked for its path and the upstream model name. */
  function onlyUpstreamCall(path: string, upstreamModel: string): RecordedRequest {
    const calls = gateway.simulator.requests;
    expect(calls.map((call) => call.path)).toEqual([path]);
    expect(bodyOf(calls[0]).model).toBe(upstreamModel);
    return calls[0];
  }

  /** The last upstream call (tool loops and continuations send several). */
  function lastUpstreamBody(): Body {
    const calls = gateway.simulator.requests;
    expect(calls.length).toBeGreaterThan(0);
    return bodyOf(calls[calls.length - 1]);
  }

  /** A raw call, for the exact wire shape of answers and errors. */
  async function post(body: unknown): Promise<{ status: number; headers: Headers; json: any; requestId: string }> {
    const response = await fetch(`${gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: JSON.parse(text), requestId: response.headers.get('x-request-id') ?? '' };
  }

  describe('answers, headers and billing', () => {
    it('answers a responses call on a messages-only model with the upstream text, saying it translated to messages', async () => {
      const {
        data: response,
        response: raw,
        request_id,
      } = await openai.responses.create({ model: 'msg-only', input: 'Hello translation', instructions: 'Be brief.' }).withResponse();

      expect(response.object).toBe('response');
      expect(response.status).toBe('completed');
      expect(response.output_text).toBe('Hello from vendor-msg-1: Hello translation');
      expect(raw.headers.get('x-gateway-translated')).toBe('messages');
      expect(raw.headers.get('x-gateway-dropped')).toBeNull();
      const upstream = onlyUpstreamCall('/v1/messages', 'vendor-msg-1');
      expect(bodyOf(upstream)).toEqual({
        model: 'vendor-msg-1',
        max_tokens: 8192,
        system: 'Be brief.',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello translation' }] }],
        stream: false,
      });
      expect(upstream.headers['anthropic-version']).toBe('2023-06-01');
      const usage = upstreamUsage(upstream);
      expect(response.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
      const record = await gateway.usageRecord(request_id as string);
      expect(record).toMatchObject({
        model: 'msg-only',
        ownerId: OWNER,
        interface: 'responses',
        translatedTo: 'messages',
        status: 200,
        stream: false,
        usage: { input_tokens: usage.inputTokens, cached_input_tokens: 0, output_tokens: usage.outputTokens },
      });
      expect(record?.costNano).toBe(costOf(usage, 'msg-only'));
    });

    it('answers a responses call on a chat-only model with the upstream text, saying it translated to chat_completions', async () => {
      const {
        data: response,
        response: raw,
        request_id,
      } = await openai.responses.create({ model: 'chat-only', input: 'Hello translation', instructions: 'Be brief.' }).withResponse();

      expect(response.status).toBe('completed');
      expect(response.output_text).toBe('Hello from vendor-chat-1: Hello translation');
      expect(raw.headers.get('x-gateway-translated')).toBe('chat_completions');
      expect(raw.headers.get('x-gateway-dropped')).toBeNull();
      const upstream = onlyUpstreamCall('/v1/chat/completions', 'vendor-chat-1');
      expect(bodyOf(upstream)).toEqual({
        model: 'vendor-chat-1',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hello translation' },
        ],
        max_completion_tokens: 64000,
        stream: false,
      });
      const usage = upstreamUsage(upstream);
      expect(response.usage).toMatchObject({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
      const record = await gateway.usageRecord(request_id as string);
      expect(record).toMatchObject({
        model: 'chat-only',
        interface: 'responses',
        translatedTo: 'chat_completions',
        status: 200,
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      });
      expect(record?.costNano).toBe(costOf(usage, 'chat-only'));
    });

    it('picks the messages interface first when the model offers messages and chat-completions', async () => {
      const { data: response, response: raw } = await openai.responses.create({ model: 'msg-and-chat', input: 'Which one?' }).withResponse();

      expect(response.output_text).toBe('Hello from vendor-msg-chat-1: Which one?');
      expect(raw.headers.get('x-gateway-translated')).toBe('messages');
      onlyUpstreamCall('/v1/messages', 'vendor-msg-chat-1');
    });

    it('forwards natively, without translation headers, when the model offers responses itself', async () => {
      const { response: raw } = await openai.responses.create({ model: 'resp-and-chat', input: 'Native please' }).withResponse();

      expect(raw.headers.get('x-gateway-translated')).toBeNull();
      onlyUpstreamCall('/v1/responses', 'vendor-resp-chat-1');
    });

    it.each([
      ['msg-only', '/v1/messages', 'max_tokens'],
      ['chat-only', '/v1/chat/completions', 'max_completion_tokens'],
    ] as const)('reports an answer %s cut at max_output_tokens as incomplete', async (model, path, limitField) => {
      const response = await openai.responses.create({ model, input: 'Please tell me a rather long story', max_output_tokens: 3 });

      expect(response.status).toBe('incomplete');
      expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
      expect(response.output_text).toBe(`Hello from ${UPSTREAM_MODEL[model]}:`);
      expect(bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]))[limitField]).toBe(3);
    });

    it('does not translate the chat-completions entry: a messages-only model refuses it with 400', async () => {
      await expect(openai.chat.completions.create({ model: 'msg-only', messages: [{ role: 'user', content: 'Hello' }] })).rejects.toMatchObject({
        status: 400,
        error: { type: 'invalid_request_error', code: null },
      });
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('reports cached input tokens of a messages upstream and bills them at the cached price', async () => {
      const { data: response, request_id } = await openai.responses
        .create({ model: 'msg-only', input: 'cache-me: a long shared prefix the upstream has cached' })
        .withResponse();

      const usage = upstreamUsage(onlyUpstreamCall('/v1/messages', 'vendor-msg-1'));
      expect(usage.cachedTokens).toBeGreaterThan(0);
      expect(response.usage).toMatchObject({
        input_tokens: usage.inputTokens,
        input_tokens_details: { cached_tokens: usage.cachedTokens },
        output_tokens: usage.outputTokens,
      });
      const record = await gateway.usageRecord(request_id as string);
      expect(record?.usage).toMatchObject({ input_tokens: usage.inputTokens, cached_input_tokens: usage.cachedTokens });
      expect(record?.costNano).toBe(costOf(usage, 'msg-only'));
    });
  });

  describe('function tools', () => {
    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('returns a function call from %s whose arguments fit the declared function', async (model, path) => {
      const response = await openai.responses.create({ model, input: 'What is the weather?', tools: [WEATHER_TOOL] });

      const calls = functionCallsOf(response);
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}', call_id: expect.any(String) });
      expect(response.output_text).toBe('');
      const upstream = bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]));
      if (path === '/v1/messages') {
        expect(upstream.tools).toEqual([{ name: 'get_weather', description: 'Current weather of a city', input_schema: WEATHER_PARAMETERS, strict: true }]);
      } else {
        expect(upstream.tools).toEqual([
          {
            type: 'function',
            function: { name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_PARAMETERS, strict: true },
          },
        ]);
      }
    });

    it('finishes a tool loop through a messages upstream: call, function output, final text', async () => {
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await openai.responses.create({ model: 'msg-only', input, tools: [WEATHER_TOOL] });
      const [call] = functionCallsOf(first);
      input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), {
        type: 'function_call_output',
        call_id: call.call_id,
        output: '18 degrees and sunny',
      });

      const second = await openai.responses.create({ model: 'msg-only', input, tools: [WEATHER_TOOL] });

      expect(second.status).toBe('completed');
      expect(second.output_text).toBe('Hello from vendor-msg-1: the tool said 18 degrees and sunny');
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual(['/v1/messages', '/v1/messages']);
      expect(lastUpstreamBody().messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: '18 degrees and sunny' }] },
      ]);
    });

    it('finishes a tool loop through a chat-completions upstream: call, function output, final text', async () => {
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await openai.responses.create({ model: 'chat-only', input, tools: [WEATHER_TOOL] });
      const [call] = functionCallsOf(first);
      input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), {
        type: 'function_call_output',
        call_id: call.call_id,
        output: '18 degrees and sunny',
      });

      const second = await openai.responses.create({ model: 'chat-only', input, tools: [WEATHER_TOOL] });

      expect(second.output_text).toBe('Hello from vendor-chat-1: the tool said 18 degrees and sunny');
      expect(lastUpstreamBody().messages).toEqual([
        { role: 'user', content: 'What is the weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: call.call_id, content: '18 degrees and sunny' },
      ]);
    });

    it.each(['msg-only', 'chat-only'] as const)('returns two parallel function calls with distinct call ids from %s', async (model) => {
      const response = await openai.responses.create({ model, input: 'Check the weather in parallel please', tools: [WEATHER_TOOL] });

      const calls = functionCallsOf(response);
      expect(calls).toHaveLength(2);
      for (const call of calls) expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
      expect(calls[0].call_id).not.toBe(calls[1].call_id);
    });

    it('asks a messages upstream for one call at a time when parallel_tool_calls is false', async () => {
      const response = await openai.responses.create({
        model: 'msg-only',
        input: 'Check the weather in parallel please',
        tools: [WEATHER_TOOL],
        parallel_tool_calls: false,
      });

      expect(functionCallsOf(response)).toHaveLength(1);
      expect(lastUpstreamBody().tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    });

    it.each([
      ['auto', { type: 'auto' }, ['get_weather']],
      ['none', { type: 'none' }, []],
      ['required', { type: 'any' }, ['get_weather']],
      [{ type: 'function', name: 'get_time' }, { type: 'tool', name: 'get_time' }, ['get_time']],
    ] as const)('maps tool_choice %j to the messages tool_choice %j', async (toolChoice, upstreamChoice, calledTools) => {
      const response = await openai.responses.create({
        model: 'msg-only',
        input: 'What is the weather?',
        tools: [WEATHER_TOOL, TIME_TOOL],
        tool_choice: toolChoice as OpenAI.Responses.ResponseCreateParams['tool_choice'],
      });

      expect(lastUpstreamBody().tool_choice).toEqual(upstreamChoice);
      expect(functionCallsOf(response).map((call) => call.name)).toEqual(calledTools);
    });

    it.each([
      ['auto', 'auto', ['get_weather']],
      ['none', 'none', []],
      ['required', 'required', ['get_weather']],
      [{ type: 'function', name: 'get_time' }, { type: 'function', function: { name: 'get_time' } }, ['get_time']],
    ] as const)('maps tool_choice %j to the chat-completions tool_choice %j', async (toolChoice, upstreamChoice, calledTools) => {
      const response = await openai.responses.create({
        model: 'chat-only',
        input: 'What is the weather?',
        tools: [WEATHER_TOOL, TIME_TOOL],
        tool_choice: toolChoice as OpenAI.Responses.ResponseCreateParams['tool_choice'],
      });

      expect(lastUpstreamBody().tool_choice).toEqual(upstreamChoice);
      expect(functionCallsOf(response).map((call) => call.name)).toEqual(calledTools);
    });
  });

  describe('custom and hosted tools', () => {
    it('declares a custom tool to a messages upstream as a function with one string parameter input', async () => {
      const response = await openai.responses.create({ model: 'msg-only', input: 'Count the users', tools: [SQL_TOOL] });

      expect(lastUpstreamBody().tools).toEqual([{ name: 'run_sql', description: 'Runs one SQL statement', input_schema: CUSTOM_TOOL_SCHEMA }]);
      expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', name: 'run_sql', input: 'Paris', call_id: expect.any(String) })]);
    });

    it('declares a custom tool to a chat-completions upstream as a function with one string parameter input', async () => {
      const response = await openai.responses.create({ model: 'chat-only', input: 'Count the users', tools: [SQL_TOOL] });

      expect(lastUpstreamBody().tools).toEqual([
        { type: 'function', function: { name: 'run_sql', description: 'Runs one SQL statement', parameters: CUSTOM_TOOL_SCHEMA } },
      ]);
      expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', name: 'run_sql', input: 'Paris', call_id: expect.any(String) })]);
    });

    it.each([
      ['msg-only', { type: 'tool', name: 'run_sql' }],
      ['chat-only', { type: 'function', function: { name: 'run_sql' } }],
    ] as const)('forces a named custom tool on %s as the upstream tool_choice %j', async (model, upstreamChoice) => {
      const response = await openai.responses.create({
        model,
        input: 'Count the users',
        tools: [WEATHER_TOOL, SQL_TOOL],
        tool_choice: { type: 'custom', name: 'run_sql' },
      });

      expect(lastUpstreamBody().tool_choice).toEqual(upstreamChoice);
      expect(response.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', name: 'run_sql', input: 'Paris' })]);
    });

    it.each([
      ['msg-only', 'vendor-msg-1'],
      ['chat-only', 'vendor-chat-1'],
    ] as const)('finishes a custom tool loop on %s: custom call, custom output, final text', async (model, upstreamModel) => {
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'Count the users' }];
      const first = await openai.responses.create({ model, input, tools: [SQL_TOOL] });
      const call = first.output.find((item) => item.type === 'custom_tool_call') as OpenAI.Responses.ResponseCustomToolCall;
      input.push(call, { type: 'custom_tool_call_output', call_id: call.call_id, output: '42 users' });

      const second = await openai.responses.create({ model, input, tools: [SQL_TOOL] });

      expect(call).toMatchObject({ name: 'run_sql', input: 'Paris' });
      expect(second.output_text).toBe(`Hello from ${upstreamModel}: the tool said 42 users`);
      const sentBack = lastUpstreamBody().messages.slice(1);
      if (model === 'msg-only') {
        expect(sentBack).toEqual([
          { role: 'assistant', content: [{ type: 'tool_use', id: call.call_id, name: 'run_sql', input: { input: 'Paris' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: '42 users' }] },
        ]);
      } else {
        expect(sentBack).toEqual([
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'run_sql', arguments: '{"input":"Paris"}' } }],
          },
          { role: 'tool', tool_call_id: call.call_id, content: '42 users' },
        ]);
      }
    });

    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('drops hosted tools on %s and lists tools in X-Gateway-Dropped', async (model, path) => {
      const hostedTools = [
        { type: 'web_search' },
        { type: 'file_search', vector_store_ids: ['vs_123'] },
        { type: 'code_interpreter', container: { type: 'auto' } },
        { type: 'mcp', server_label: 'docs', server_url: 'https://mcp.example.com/sse', require_approval: 'never' },
        { type: 'image_generation' },
      ] as OpenAI.Responses.Tool[];

      const { data: response, response: raw } = await openai.responses
        .create({ model, input: 'What is the weather?', tools: [WEATHER_TOOL, ...hostedTools] })
        .withResponse();

      expect(droppedFields(raw.headers)).toEqual(['tools']);
      const upstreamTools = bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model])).tools as Body[];
      expect(upstreamTools).toHaveLength(1);
      expect(JSON.stringify(upstreamTools)).toContain('get_weather');
      expect(functionCallsOf(response).map((call) => call.name)).toEqual(['get_weather']);
    });
  });

  describe('requests the translation path refuses', () => {
    const USER_TEXT = [{ role: 'user', content: 'Hello' }];
    const cases: Array<[string, Body]> = [
      ['previous_response_id', { input: 'Hello', previous_response_id: 'resp_abc123' }],
      ['conversation', { input: 'Hello', conversation: 'conv_abc123' }],
      ['store: true', { input: 'Hello', store: true }],
      ['background: true', { input: 'Hello', background: true }],
      [
        'text.format json_schema',
        {
          input: 'Hello',
          text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: {} }, strict: true } },
        },
      ],
      ['text.format json_object', { input: 'Hello', text: { format: { type: 'json_object' } } }],
      [
        'tool_choice allowed_tools',
        {
          input: USER_TEXT,
          tools: [WEATHER_TOOL],
          tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_weather' }] },
        },
      ],
      ['tool_choice of a hosted tool', { input: USER_TEXT, tools: [WEATHER_TOOL], tool_choice: { type: 'web_search_preview' } }],
      ['input_image with file_id', { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-abc123', detail: 'auto' }] }] }],
      ['input_file with file_id', { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-abc123' }] }] }],
    ];
    const models = ['msg-only', 'chat-only'] as const;

    it.each(cases.flatMap(([name, body]) => models.map((model) => [name, model, body] as const)))(
      'refuses %s on %s with 400 in the responses error shape, sending nothing upstream and keeping no record',
      async (_name, model, body) => {
        const answer = await post({ model, ...body });

        expect(answer.status).toBe(400);
        expect(answer.json).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: null } });
        expect(answer.json.error.message.length).toBeGreaterThan(0);
        expect(gateway.simulator.requests).toHaveLength(0);
        expect(answer.requestId).not.toBe('');
        expect(await gateway.usageRecord(answer.requestId)).toBeNull();
      },
    );

    it('raises a BadRequestError in the SDK for a stored conversation', async () => {
      await expect(openai.responses.create({ model: 'msg-only', input: 'Hello', previous_response_id: 'resp_abc123' })).rejects.toMatchObject({
        status: 400,
        error: { type: 'invalid_request_error' },
      });
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('accepts store: false, background: false and plain text output, which change nothing', async () => {
      const answer = await post({ model: 'msg-only', input: 'Hello', store: false, background: false, text: { format: { type: 'text' } } });

      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-gateway-dropped')).toBeNull();
    });
  });

  describe('dropped and ignored fields', () => {
    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('lists top_logprobs as dropped on %s and does not send it upstream', async (model, path) => {
      const { response: raw } = await openai.responses.create({ model, input: 'Hello', top_logprobs: 3 }).withResponse();

      expect(raw.headers.get('x-gateway-dropped')).toBe('top_logprobs');
      expect(bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]))).not.toHaveProperty('top_logprobs');
    });

    it('lists several dropped fields comma-separated', async () => {
      const { response: raw } = await openai.responses
        .create({ model: 'msg-only', input: 'Hello', top_logprobs: 3, text: { verbosity: 'low' } })
        .withResponse();

      expect(raw.headers.get('x-gateway-dropped')).toMatch(/^[a-z_]+(,[a-z_]+)*$/);
      expect(droppedFields(raw.headers)).toEqual(['text', 'top_logprobs']);
    });

    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('never lists ignored fields (metadata, user, service_tier, truncation) on %s', async (model, path) => {
      const { data: response, response: raw } = await openai.responses
        .create({
          model,
          input: 'Hello',
          metadata: { ticket: 'T-1' },
          user: 'user-1234',
          service_tier: 'auto',
          truncation: 'auto',
        })
        .withResponse();

      expect(response.status).toBe('completed');
      expect(raw.headers.has('x-gateway-dropped')).toBe(false);
      const upstream = bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]));
      for (const field of ['metadata', 'user', 'service_tier', 'truncation']) expect(upstream).not.toHaveProperty(field);
    });

    it('lists only the dropped field when ignored ones come along', async () => {
      const { response: raw } = await openai.responses
        .create({ model: 'msg-only', input: 'Hello', metadata: { ticket: 'T-1' }, user: 'user-1234', top_logprobs: 2 })
        .withResponse();

      expect(droppedFields(raw.headers)).toEqual(['top_logprobs']);
    });

    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('drops temperature and top_p on %s while reasoning is on', async (model, path) => {
      const { response: raw } = await openai.responses
        .create({ model, input: 'Hello', reasoning: { effort: 'low' }, temperature: 0.4, top_p: 0.9 })
        .withResponse();

      expect(droppedFields(raw.headers)).toEqual(['temperature', 'top_p']);
      const upstream = bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]));
      expect(upstream).not.toHaveProperty('temperature');
      expect(upstream).not.toHaveProperty('top_p');
    });

    it.each([
      ['msg-only', '/v1/messages'],
      ['chat-only', '/v1/chat/completions'],
    ] as const)('keeps temperature and top_p on %s when reasoning is off', async (model, path) => {
      const { response: raw } = await openai.responses.create({ model, input: 'Hello', temperature: 0.4, top_p: 0.9 }).withResponse();

      expect(raw.headers.has('x-gateway-dropped')).toBe(false);
      expect(bodyOf(onlyUpstreamCall(path, UPSTREAM_MODEL[model]))).toMatchObject({ temperature: 0.4, top_p: 0.9 });
    });
  });

  describe('reasoning', () => {
    it.each([
      ['low', 2048],
      ['medium', 8192],
      ['high', 24576],
    ] as const)('maps reasoning.effort %s to a messages thinking budget of %i tokens', async (effort, budget) => {
      await openai.responses.create({ model: 'msg-only', input: 'Think first', reasoning: { effort }, max_output_tokens: 30000 });

      expect(lastUpstreamBody()).toMatchObject({ max_tokens: 30000, thinking: { type: 'enabled', budget_tokens: budget } });
    });

    it('keeps the messages thinking budget below the upstream max_tokens', async () => {
      await openai.responses.create({ model: 'msg-only', input: 'Think hard', reasoning: { effort: 'high' } });

      const upstream = lastUpstreamBody();
      expect(upstream.max_tokens).toBe(8192);
      expect(upstream.thinking.type).toBe('enabled');
      expect(upstream.thinking.budget_tokens).toBeLessThan(8192);
      expect(upstream.thinking.budget_tokens).toBeGreaterThanOrEqual(1024);
    });

    it.each(['low', 'medium', 'high'] as const)('maps reasoning.effort %s to the chat reasoning_effort', async (effort) => {
      const { data: response, request_id } = await openai.responses.create({ model: 'chat-only', input: 'Think first', reasoning: { effort } }).withResponse();

      const upstream = onlyUpstreamCall('/v1/chat/completions', 'vendor-chat-1');
      expect(bodyOf(upstream).reasoning_effort).toBe(effort);
      const usage = upstreamUsage(upstream);
      expect(usage.reasoningTokens).toBeGreaterThan(0);
      expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(usage.reasoningTokens);
      expect((await gateway.usageRecord(request_id as string))?.usage).toMatchObject({ reasoning_tokens: usage.reasoningTokens });
    });

    it('sends no reasoning upstream when reasoning is not asked for', async () => {
      await openai.responses.create({ model: 'msg-only', input: 'Hello' });
      expect(lastUpstreamBody()).not.toHaveProperty('thinking');

      await openai.responses.create({ model: 'chat-only', input: 'Hello' });
      expect(lastUpstreamBody()).not.toHaveProperty('reasoning_effort');
    });

    it.each([
      ['required', 'msg-only'],
      ['required', 'chat-only'],
      ['named', 'msg-only'],
      ['named', 'chat-only'],
    ] as const)('switches reasoning off when tool_choice is %s (%s)', async (kind, model) => {
      const toolChoice: OpenAI.Responses.ResponseCreateParams['tool_choice'] = kind === 'required' ? 'required' : { type: 'function', name: 'get_weather' };

      const response = await openai.responses.create({
        model,
        input: 'What is the weather?',
        tools: [WEATHER_TOOL],
        tool_choice: toolChoice,
        reasoning: { effort: 'high' },
      });

      const upstream = lastUpstreamBody();
      expect(upstream).not.toHaveProperty('thinking');
      expect(upstream).not.toHaveProperty('reasoning_effort');
      expect(response.output.some((item) => item.type === 'reasoning')).toBe(false);
      expect(functionCallsOf(response)).toHaveLength(1);
    });

    it('returns no encrypted_content unless include asks for it', async () => {
      const response = await openai.responses.create({ model: 'msg-only', input: 'Plan a trip', reasoning: { effort: 'low' } });

      expect(reasoningItemOf(response).encrypted_content ?? undefined).toBeUndefined();
      expect(response.output_text).toBe('Hello from vendor-msg-1: Plan a trip');
    });

    it('returns reasoning with encrypted_content when include asks for it', async () => {
      const response = await openai.responses.create({
        model: 'msg-only',
        input: 'Plan a trip',
        reasoning: { effort: 'low', summary: 'auto' },
        include: ['reasoning.encrypted_content'],
      });

      const reasoning = reasoningItemOf(response);
      expect(reasoning.encrypted_content).toEqual(expect.any(String));
      expect(reasoning.encrypted_content?.length).toBeGreaterThan(0);
      expect(reasoning.summary).toEqual([{ type: 'summary_text', text: simulatedThinking('Plan a trip') }]);
      expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    });

    describe('continuation', () => {
      const QUESTION = 'Plan a trip';
      const FOLLOW_UP = 'And then?';

      /** A first turn on msg-only whose output items the client sends back. */
      async function firstTurn(): Promise<OpenAI.Responses.Response> {
        const first = await openai.responses.create({
          model: 'msg-only',
          input: [{ role: 'user', content: QUESTION }],
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        });
        expect(reasoningItemOf(first).encrypted_content).toEqual(expect.any(String));
        gateway.simulator.reset();
        return first;
      }

      function nextInput(first: OpenAI.Responses.Response): OpenAI.Responses.ResponseInputItem[] {
        return [{ role: 'user', content: QUESTION }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: FOLLOW_UP }];
      }

      it('restores the thinking block with its original signature on the same messages upstream model', async () => {
        const first = await firstTurn();

        const second = await openai.responses.create({
          model: 'msg-only',
          input: nextInput(first),
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        });

        expect(second.output_text).toBe(`Hello from vendor-msg-1: ${FOLLOW_UP}`);
        const upstream = bodyOf(onlyUpstreamCall('/v1/messages', 'vendor-msg-1'));
        const thinking = simulatedThinking(QUESTION);
        expect(upstream.messages).toEqual([
          { role: 'user', content: [{ type: 'text', text: QUESTION }] },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking, signature: opaqueToken('thinking:vendor-msg-1', thinking) },
              { type: 'text', text: `Hello from vendor-msg-1: ${QUESTION}` },
            ],
          },
          { role: 'user', content: [{ type: 'text', text: FOLLOW_UP }] },
        ]);
      });

      it('restores the thinking block ahead of the tool call when a tool loop continues', async () => {
        const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
        const first = await openai.responses.create({
          model: 'msg-only',
          input,
          tools: [WEATHER_TOOL],
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        });
        expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
        const [call] = functionCallsOf(first);
        input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: 'rainy' });
        gateway.simulator.reset();

        const second = await openai.responses.create({
          model: 'msg-only',
          input,
          tools: [WEATHER_TOOL],
          reasoning: { effort: 'low' },
          include: ['reasoning.encrypted_content'],
        });

        expect(second.output_text).toBe('Hello from vendor-msg-1: the tool said rainy');
        const thinking = simulatedThinking('What is the weather in Paris?');
        expect(bodyOf(onlyUpstreamCall('/v1/messages', 'vendor-msg-1')).messages.slice(1)).toEqual([
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking, signature: opaqueToken('thinking:vendor-msg-1', thinking) },
              { type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: 'rainy' }] },
        ]);
      });

      it('does not restore the reasoning on another upstream model', async () => {
        const first = await firstTurn();

        const second = await openai.responses.create({ model: 'msg-only-next', input: nextInput(first), reasoning: { effort: 'low' } });

        expect(second.output_text).toBe(`Hello from vendor-msg-2: ${FOLLOW_UP}`);
        const upstream = bodyOf(onlyUpstreamCall('/v1/messages', 'vendor-msg-2'));
        expect(upstream.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: `Hello from vendor-msg-1: ${QUESTION}` }] });
        expect(JSON.stringify(upstream)).not.toContain(opaqueToken('thinking:vendor-msg-1', simulatedThinking(QUESTION)));
      });

      it('carries no reasoning toward a chat-completions upstream', async () => {
        const first = await firstTurn();

        const second = await openai.responses.create({ model: 'chat-only', input: nextInput(first), reasoning: { effort: 'low' } });

        expect(second.output_text).toBe(`Hello from vendor-chat-1: ${FOLLOW_UP}`);
        const upstream = bodyOf(onlyUpstreamCall('/v1/chat/completions', 'vendor-chat-1'));
        expect(upstream.messages).toEqual([
          { role: 'user', content: QUESTION },
          { role: 'assistant', content: `Hello from vendor-msg-1: ${QUESTION}` },
          { role: 'user', content: FOLLOW_UP },
        ]);
        expect(JSON.stringify(upstream)).not.toContain(opaqueToken('thinking:vendor-msg-1', simulatedThinking(QUESTION)));
      });
    });
  });

  describe('output token defaults', () => {
    it("sends the model's max_tokens as the messages max_tokens when max_output_tokens is absent", async () => {
      await openai.responses.create({ model: 'msg-only', input: 'Hello' });
      expect(bodyOf(onlyUpstreamCall('/v1/messages', 'vendor-msg-1')).max_tokens).toBe(8192);
    });

    it("sends the model's own max_tokens on a model with messages and chat-completions", async () => {
      await openai.responses.create({ model: 'msg-and-chat', input: 'Hello' });
      expect(bodyOf(onlyUpstreamCall('/v1/messages', 'vendor-msg-chat-1')).max_tokens).toBe(4096);
    });

    it('sends 64000 as max_completion_tokens when the catalog gives the model no maximum', async () => {
      await openai.responses.create({ model: 'chat-only', input: 'Hello' });
      expect(bodyOf(onlyUpstreamCall('/v1/chat/completions', 'vendor-chat-1')).max_completion_tokens).toBe(64000);
    });

    it.each([
      ['msg-only', 'max_tokens'],
      ['chat-only', 'max_completion_tokens'],
    ] as const)('sends the client max_output_tokens to %s as %s', async (model, field) => {
      await openai.responses.create({ model, input: 'Hello', max_output_tokens: 300 });
      expect(lastUpstreamBody()[field]).toBe(300);
    });
  });

  describe('images and files', () => {
    const imageInput = (imageUrl: string): OpenAI.Responses.ResponseInput => [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in this image?' },
          { type: 'input_image', image_url: imageUrl, detail: 'auto' },
        ],
      },
    ];

    it('sends a data-URL image to a messages upstream as a base64 image source', async () => {
      const response = await openai.responses.create({ model: 'msg-only', input: imageInput(PNG_DATA_URL) });

      expect(response.output_text).toBe('Hello from vendor-msg-1: What is in this image?');
      expect(lastUpstreamBody().messages[0].content).toEqual([
        { type: 'text', text: 'What is in this image?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
      ]);
    });

    it('sends an https image to a messages upstream as a url image source', async () => {
      await openai.responses.create({ model: 'msg-only', input: imageInput(IMAGE_ADDRESS) });

      expect(lastUpstreamBody().messages[0].content[1]).toEqual({ type: 'image', source: { type: 'url', url: IMAGE_ADDRESS } });
    });

    it.each([
      ['a data URL', PNG_DATA_URL],
      ['an https address', IMAGE_ADDRESS],
    ])('sends an image given as %s to a chat-completions upstream as image_url', async (_form, imageUrl) => {
      const response = await openai.responses.create({ model: 'chat-only', input: imageInput(imageUrl) });

      expect(response.output_text).toBe('Hello from vendor-chat-1: What is in this image?');
      expect(lastUpstreamBody().messages[0].content).toEqual([
        { type: 'text', text: 'What is in this image?' },
        { type: 'image_url', image_url: { url: imageUrl, detail: 'auto' } },
      ]);
    });

    it('sends an inline PDF input_file to a messages upstream as a base64 document', async () => {
      await openai.responses.create({
        model: 'msg-only',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Summarise the report' },
              { type: 'input_file', filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` },
            ],
          },
        ],
      });

      expect(lastUpstreamBody().messages[0].content[1]).toMatchObject({
        type: 'document',
        source: { type: 'base64', media_type: 'application/pdf', data: PDF_BASE64 },
      });
    });

    it('sends an inline PDF input_file to a chat-completions upstream as a file part', async () => {
      await openai.responses.create({
        model: 'chat-only',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Summarise the report' },
              { type: 'input_file', filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF_BASE64}` },
            ],
          },
        ],
      });

      expect(lastUpstreamBody().messages[0].content[1]).toEqual({
        type: 'file',
        file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'report.pdf' },
      });
    });
  });
});
