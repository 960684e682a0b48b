import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS, VENDOR_KEY } from './support/test-config';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * The official SDKs pointed at the gateway as SPEC.md tells users to (base address
 * `{base_url}/v1` for chat, responses and embeddings, `{base_url}` for messages), on models
 * that offer the called protocol natively: what users parse comes through, and the upstream
 * sees its own model name and the line's key.
 */

const CHAT_UPSTREAM_MODEL = 'vendor-chat-2025-01';
const MESSAGES_UPSTREAM_MODEL = 'vendor-messages-2025-02';

const WEATHER_PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string', description: 'City name' } },
  required: ['city'],
  additionalProperties: false,
};

const CHAT_WEATHER_TOOL: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'Current weather of a city', parameters: WEATHER_PARAMETERS },
};

const RESPONSES_WEATHER_TOOL: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: WEATHER_PARAMETERS,
  strict: true,
};

const MESSAGES_WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: { type: 'object', properties: WEATHER_PARAMETERS.properties, required: WEATHER_PARAMETERS.required },
};

function bodyOf(request: RecordedRequest): Record<string, unknown> {
  return request.json as Record<string, unknown>;
}

describe('native forwarding through the official SDKs', () => {
  let gateway: GatewayHarness;
  let openai: OpenAI;
  let anthropic: Anthropic;
  /** Headers of every request the messages SDK sent, to compare with what the upstream got. */
  const anthropicSent: Headers[] = [];

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
    openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000 });
    anthropic = new Anthropic({
      baseURL: gateway.url,
      apiKey: KEYS.all,
      maxRetries: 0,
      timeout: 10_000,
      fetch: (input, init) => {
        anthropicSent.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
    anthropicSent.length = 0;
  });

  /** The single upstream call, checked for the upstream model name and the line's key. */
  function upstreamCall(path: string, upstreamModel: string): RecordedRequest {
    const calls = gateway.simulator.requests;
    expect(calls.map((call) => call.path)).toEqual([path]);
    expect(bodyOf(calls[0]).model).toBe(upstreamModel);
    expect(JSON.stringify(calls[0].headers)).not.toContain(KEYS.all);
    expect(Object.keys(calls[0].headers).filter((name) => name.startsWith('x-stainless'))).toEqual([]);
    return calls[0];
  }

  describe('openai chat completions', () => {
    it('returns a chat completion whose request id names a usage record', async () => {
      const completion = await openai.chat.completions.create({
        model: 'chat-model',
        messages: [{ role: 'user', content: 'Hello SDK' }],
      });

      expect(completion.choices[0].message.content).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: Hello SDK`);
      expect(completion.choices[0].finish_reason).toBe('stop');
      expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
      const upstream = upstreamCall('/v1/chat/completions', CHAT_UPSTREAM_MODEL);
      expect(upstream.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
      expect(await gateway.usageRecord(completion._request_id as string)).toMatchObject({ model: 'chat-model', status: 200 });
    });

    it('streams chunks that assemble into the answer and carry no usage chunk the client did not ask for', async () => {
      const stream = await openai.chat.completions.create({
        model: 'chat-model',
        messages: [{ role: 'user', content: 'Stream to the SDK' }],
        stream: true,
      });

      let text = '';
      const finishReasons: string[] = [];
      for await (const chunk of stream) {
        expect(chunk.choices).toHaveLength(1);
        text += chunk.choices[0].delta.content ?? '';
        if (chunk.choices[0].finish_reason) finishReasons.push(chunk.choices[0].finish_reason);
      }

      expect(text).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: Stream to the SDK`);
      expect(finishReasons).toEqual(['stop']);
      upstreamCall('/v1/chat/completions', CHAT_UPSTREAM_MODEL);
    });

    it('returns a tool call with arguments that fit the declared function', async () => {
      const completion = await openai.chat.completions.create({
        model: 'chat-model',
        messages: [{ role: 'user', content: 'What is the weather?' }],
        tools: [CHAT_WEATHER_TOOL],
      });

      const choice = completion.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.tool_calls).toHaveLength(1);
      expect(choice.message.tool_calls?.[0]).toMatchObject({
        type: 'function',
        id: expect.any(String),
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      });
      expect(bodyOf(upstreamCall('/v1/chat/completions', CHAT_UPSTREAM_MODEL)).tools).toEqual([CHAT_WEATHER_TOOL]);
    });

    it('assembles two parallel tool calls from a stream', async () => {
      const completion = await openai.chat.completions
        .stream({
          model: 'chat-model',
          messages: [{ role: 'user', content: 'Check the weather in parallel please' }],
          tools: [CHAT_WEATHER_TOOL],
        })
        .finalChatCompletion();

      const calls = completion.choices[0].message.tool_calls ?? [];
      expect(calls).toHaveLength(2);
      for (const call of calls) {
        expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
      }
      expect(calls[0].id).not.toBe(calls[1].id);
      upstreamCall('/v1/chat/completions', CHAT_UPSTREAM_MODEL);
    });

    it('finishes a tool loop: the tool result sent back gets the final text', async () => {
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await openai.chat.completions.create({ model: 'chat-model', messages, tools: [CHAT_WEATHER_TOOL] });
      const call = first.choices[0].message.tool_calls?.[0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      messages.push(first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '18 degrees and sunny' });

      const second = await openai.chat.completions.create({ model: 'chat-model', messages, tools: [CHAT_WEATHER_TOOL] });

      expect(second.choices[0].finish_reason).toBe('stop');
      expect(second.choices[0].message.content).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: the tool said 18 degrees and sunny`);
      const sentBack = bodyOf(gateway.simulator.requests[1]).messages as Array<Record<string, unknown>>;
      expect(sentBack.at(-1)).toEqual({ role: 'tool', tool_call_id: call.id, content: '18 degrees and sunny' });
      expect(gateway.simulator.requests.map((request) => bodyOf(request).model)).toEqual([CHAT_UPSTREAM_MODEL, CHAT_UPSTREAM_MODEL]);
    });
  });

  describe('openai responses', () => {
    it('creates a response on a model that offers responses natively', async () => {
      const response = await openai.responses.create({ model: 'chat-model', input: 'Hello responses', instructions: 'Be brief.' });

      expect(response.status).toBe('completed');
      expect(response.output_text).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: Hello responses`);
      const upstream = upstreamCall('/v1/responses', CHAT_UPSTREAM_MODEL);
      expect(bodyOf(upstream)).toMatchObject({ input: 'Hello responses', instructions: 'Be brief.' });
      expect(await gateway.usageRecord(response._request_id as string)).toMatchObject({ interface: 'responses', translatedTo: null });
    });

    it('streams a response whose final response holds the text', async () => {
      const stream = openai.responses.stream({ model: 'chat-model', input: 'Stream a response' });
      const eventTypes: string[] = [];
      stream.on('event', (event) => eventTypes.push(event.type));

      const response = await stream.finalResponse();

      expect(response.output_text).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: Stream a response`);
      expect(eventTypes).toContain('response.output_text.delta');
      expect(eventTypes.at(-1)).toBe('response.completed');
      expect(bodyOf(upstreamCall('/v1/responses', CHAT_UPSTREAM_MODEL)).stream).toBe(true);
    });

    it('streams a function call and finishes the loop with its output', async () => {
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'What is the weather?' }];
      const first = await openai.responses.stream({ model: 'chat-model', input, tools: [RESPONSES_WEATHER_TOOL] }).finalResponse();
      const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}', call_id: expect.any(String) });
      input.push(call, { type: 'function_call_output', call_id: call.call_id, output: 'rainy' });

      const second = await openai.responses.create({ model: 'chat-model', input, tools: [RESPONSES_WEATHER_TOOL] });

      expect(second.output_text).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: the tool said rainy`);
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual(['/v1/responses', '/v1/responses']);
    });
  });

  describe('openai embeddings', () => {
    it('returns one vector per input', async () => {
      const result = await openai.embeddings.create({ model: 'embed-model', input: ['first text', 'second text'] });

      expect(result.data.map((item) => item.index)).toEqual([0, 1]);
      for (const item of result.data) {
        expect(item.embedding).toHaveLength(8);
        expect(item.embedding.every((value) => Number.isFinite(value))).toBe(true);
      }
      expect(result.data[0].embedding).not.toEqual(result.data[1].embedding);
      expect(result.usage.prompt_tokens).toBeGreaterThan(0);
      upstreamCall('/v1/embeddings', 'vendor-embed-3');
    });
  });

  describe('anthropic messages', () => {
    it('creates a message, sending the line key as x-api-key and the SDK version header unchanged upstream', async () => {
      const message = await anthropic.messages.create({
        model: 'messages-model',
        max_tokens: 256,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Hello messages' }],
      });

      expect(message.content).toEqual([{ type: 'text', text: `Hello from ${MESSAGES_UPSTREAM_MODEL}: Hello messages` }]);
      expect(message.stop_reason).toBe('end_turn');
      expect(message.usage.output_tokens).toBeGreaterThan(0);
      const upstream = upstreamCall('/v1/messages', MESSAGES_UPSTREAM_MODEL);
      expect(upstream.headers['x-api-key']).toBe(VENDOR_KEY);
      const sdkVersion = anthropicSent[0].get('anthropic-version');
      expect(sdkVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(upstream.headers['anthropic-version']).toBe(sdkVersion);
    });

    it('streams a message whose final message holds the text', async () => {
      const message = await anthropic.messages
        .stream({ model: 'messages-model', max_tokens: 256, messages: [{ role: 'user', content: 'Stream a message' }] })
        .finalMessage();

      expect(message.content).toHaveLength(1);
      expect(message.content[0]).toMatchObject({ type: 'text', text: `Hello from ${MESSAGES_UPSTREAM_MODEL}: Stream a message` });
      expect(message.stop_reason).toBe('end_turn');
      expect(bodyOf(upstreamCall('/v1/messages', MESSAGES_UPSTREAM_MODEL)).stream).toBe(true);
    });

    it('streams a tool_use block with its parsed input', async () => {
      const message = await anthropic.messages
        .stream({
          model: 'messages-model',
          max_tokens: 256,
          messages: [{ role: 'user', content: 'What is the weather?' }],
          tools: [MESSAGES_WEATHER_TOOL],
        })
        .finalMessage();

      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([{ type: 'tool_use', id: expect.any(String), name: 'get_weather', input: { city: 'Paris' } }]);
      upstreamCall('/v1/messages', MESSAGES_UPSTREAM_MODEL);
    });

    it('streams thinking with its signature before the text', async () => {
      const message = await anthropic.messages
        .stream({
          model: 'messages-model',
          max_tokens: 4096,
          thinking: { type: 'enabled', budget_tokens: 2048 },
          messages: [{ role: 'user', content: 'Think first' }],
        })
        .finalMessage();

      expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
      expect(message.content[0]).toMatchObject({ thinking: 'Thinking about "Think first" before answering.', signature: expect.stringMatching(/.+/) });
      expect(message.content[1]).toMatchObject({ text: `Hello from ${MESSAGES_UPSTREAM_MODEL}: Think first` });
      expect(bodyOf(upstreamCall('/v1/messages', MESSAGES_UPSTREAM_MODEL)).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    });

    it('counts tokens without billing them', async () => {
      const { data: counted, response } = await anthropic.messages
        .countTokens({ model: 'messages-model', messages: [{ role: 'user', content: 'How many tokens?' }] })
        .withResponse();

      expect(counted.input_tokens).toBeGreaterThan(0);
      upstreamCall('/v1/messages/count_tokens', MESSAGES_UPSTREAM_MODEL);
      const record = await gateway.usageRecord(response.headers.get('x-request-id') ?? '');
      expect(record).toMatchObject({ interface: 'count_tokens', status: 200 });
      expect(record?.costNano).toBe(0n);
    });
  });
});
