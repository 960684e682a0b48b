import Anthropic from '@anthropic-ai/sdk';
import type { CacheCreation, MessageCreateParamsNonStreaming, MessageDeltaUsage, MessageStreamEvent, Usage } from '@anthropic-ai/sdk/resources/messages';
import { parseSse, quarterBytes, rawPost, weatherTool } from './simulator-test-kit';
import { UpstreamSimulator } from './upstream-simulator';

/**
 * The members the SDK's usage types declare, as far as the simulator sends them: tsc refuses a
 * name here that the SDK does not know, and the specs refuse a member sent that is not here.
 */
const USAGE_MEMBERS = {
  input_tokens: true,
  cache_creation_input_tokens: true,
  cache_read_input_tokens: true,
  cache_creation: true,
  output_tokens: true,
  output_tokens_details: true,
  service_tier: true,
} satisfies Partial<Record<keyof Usage, true>>;
const DELTA_USAGE_MEMBERS = {
  input_tokens: true,
  cache_creation_input_tokens: true,
  cache_read_input_tokens: true,
  output_tokens: true,
  output_tokens_details: true,
} satisfies Partial<Record<keyof MessageDeltaUsage, true>>;
const CACHE_CREATION_MEMBERS = { ephemeral_5m_input_tokens: true, ephemeral_1h_input_tokens: true } satisfies Record<keyof CacheCreation, true>;

/** Members of a usage object that the SDK type does not declare (the lists above). */
function undeclared(usage: object, declared: object): string[] {
  return Object.keys(usage).filter((name) => !Object.hasOwn(declared, name));
}

describe('UpstreamSimulator messages', () => {
  const simulator = new UpstreamSimulator({ apiKey: 'sk-ant-test' });
  let baseUrl: string;
  let client: Anthropic;

  beforeAll(async () => {
    baseUrl = await simulator.start();
    client = new Anthropic({ baseURL: baseUrl, apiKey: 'sk-ant-test', maxRetries: 0 });
  });
  afterAll(() => simulator.stop());

  const tool = { name: weatherTool.name, description: weatherTool.description, input_schema: weatherTool.parameters };
  const ask = (content: string): MessageCreateParamsNonStreaming => ({
    model: 'text-model-3',
    max_tokens: 1024,
    messages: [{ role: 'user', content }],
  });

  /** Streams through the SDK helper and keeps every event it parsed. */
  async function streamed(params: MessageCreateParamsNonStreaming) {
    const events: MessageStreamEvent[] = [];
    const stream = client.messages.stream(params);
    stream.on('streamEvent', (event) => events.push(event));
    const message = await stream.finalMessage();
    return { events, types: events.map((event) => event.type), message };
  }

  it('answers JSON with a msg id, a text block and usage from system and messages', async () => {
    const request = { ...ask('Say hi'), system: 'Be brief' };
    const message = await client.messages.create(request);

    expect(message.id).toMatch(/^msg_/);
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'text-model-3', stop_reason: 'end_turn' });
    expect(message.content).toEqual([{ type: 'text', text: 'Hello from text-model-3: Say hi' }]);
    expect(message.usage).toMatchObject({
      input_tokens: quarterBytes({ system: 'Be brief', messages: request.messages }),
      output_tokens: 5,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  it('streams the documented event sequence and ends with the JSON usage', async () => {
    const json = await client.messages.create(ask('Stream this'));
    const { types, message } = await streamed(ask('Stream this'));

    expect(types).toEqual([
      'message_start',
      'content_block_start',
      ...Array<string>(5).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(message.content).toEqual(json.content);
    expect(message.usage.output_tokens).toBe(json.usage.output_tokens);
    expect(message.usage.input_tokens).toBe(json.usage.input_tokens);
    expect(message.stop_reason).toBe('end_turn');
  });

  it('names every SSE event after its type and pings after the first block starts', async () => {
    const outcome = await rawPost(
      `${baseUrl}/v1/messages`,
      { ...ask('Raw'), stream: true },
      {
        headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' },
      },
    );

    const events = parseSse(outcome.text);
    for (const event of events) expect(event.event).toBe(JSON.parse(event.data).type);
    expect(events.slice(0, 3).map((event) => event.event)).toEqual(['message_start', 'content_block_start', 'ping']);
    const start = JSON.parse(events[0].data);
    expect(start.message).toMatchObject({ content: [], stop_reason: null, usage: { output_tokens: 1 } });
  });

  it('streams parallel tool_use blocks with toolu ids and input built from the schema', async () => {
    const { types, message } = await streamed({ ...ask('Two cities in parallel'), tools: [tool] });

    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toHaveLength(2);
    const [first, second] = message.content;
    expect(first).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(second).toMatchObject({ type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } });
    expect(first.type === 'tool_use' && first.id).toMatch(/^toolu_/);
    expect(first.type === 'tool_use' && second.type === 'tool_use' && first.id !== second.id).toBe(true);
    expect(types.filter((type) => type === 'content_block_start')).toHaveLength(2);
  });

  it('makes a single call when parallel tool use is disabled', async () => {
    const message = await client.messages.create({
      ...ask('Two cities in parallel'),
      tools: [tool],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });

    expect(message.content.map((block) => block.type)).toEqual(['tool_use']);
  });

  it('answers a tool_result with text that mentions it', async () => {
    const message = await client.messages.create({
      model: 'text-model-3',
      max_tokens: 1024,
      tools: [tool],
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '22 degrees' }] },
      ],
    });

    expect(message.content).toEqual([{ type: 'text', text: 'Hello from text-model-3: the tool said 22 degrees' }]);
  });

  it('streams a signed thinking block first: thinking deltas, then the signature', async () => {
    const params = { ...ask('Think first'), thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
    const json = await client.messages.create(params);
    const { events, message } = await streamed(params);

    const thinking = message.content[0];
    expect(thinking).toEqual(json.content[0]);
    expect(thinking).toMatchObject({ type: 'thinking', thinking: 'Thinking about "Think first" before answering.' });
    expect(thinking.type === 'thinking' && thinking.signature.length).toBeGreaterThan(10);
    expect(message.content[1]).toEqual({ type: 'text', text: 'Hello from text-model-3: Think first' });
    const blockZeroDeltas = events.flatMap((event) => (event.type === 'content_block_delta' && event.index === 0 ? [event.delta.type] : []));
    expect(blockZeroDeltas).toEqual([...Array<string>(6).fill('thinking_delta'), 'signature_delta']);
    expect(message.usage.output_tokens).toBe(6 + 5);
  });

  it('reports cache reads apart from input tokens, both adding up to count_tokens', async () => {
    const request = ask('cache-me please');
    const message = await client.messages.create(request);
    const counted = await client.messages.countTokens({ model: request.model, messages: request.messages });

    expect(message.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(message.usage.input_tokens + message.usage.cache_read_input_tokens!).toBe(counted.input_tokens);
  });

  describe('cache writes by duration and thinking tokens', () => {
    const request = ask('cache-write-5m and cache-write-1h, cache-me too');
    const quarter = Math.floor(quarterBytes({ messages: request.messages }) / 4);

    it('answers JSON with the writes split by duration beside their total, in the shape the SDK declares', async () => {
      const message = await client.messages.create(request);
      const counted = await client.messages.countTokens({ model: request.model, messages: request.messages });
      const usage: Usage = message.usage;

      expect(usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: quarter, ephemeral_1h_input_tokens: quarter });
      expect(usage.cache_creation_input_tokens).toBe(2 * quarter);
      expect(usage.input_tokens + usage.cache_read_input_tokens! + usage.cache_creation_input_tokens!).toBe(counted.input_tokens);
      expect(usage.input_tokens).toBeGreaterThanOrEqual(0);
      expect(undeclared(usage, USAGE_MEMBERS)).toEqual([]);
      expect(undeclared(usage.cache_creation!, CACHE_CREATION_MEMBERS)).toEqual([]);
    });

    it('reports zeros for both durations without cache writes, as the API does', async () => {
      const message = await client.messages.create(ask('No cache'));

      expect(message.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 } });
    });

    it('streams the split in message_start and cumulative totals without it in message_delta, which the SDK keeps', async () => {
      const json = await client.messages.create(request);
      const outcome = await rawPost(
        `${baseUrl}/v1/messages`,
        { ...request, stream: true },
        { headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' } },
      );
      const events = parseSse(outcome.text).map((event) => JSON.parse(event.data));
      const startUsage = events.find((event) => event.type === 'message_start').message.usage;
      const deltaUsage = events.find((event) => event.type === 'message_delta').usage;
      const { message } = await streamed(request);

      expect(startUsage).toMatchObject({ cache_creation: json.usage.cache_creation, cache_creation_input_tokens: 2 * quarter, output_tokens: 1 });
      expect(deltaUsage).toEqual({
        input_tokens: json.usage.input_tokens,
        cache_creation_input_tokens: 2 * quarter,
        cache_read_input_tokens: json.usage.cache_read_input_tokens,
        output_tokens: json.usage.output_tokens,
      });
      expect(undeclared(startUsage, USAGE_MEMBERS)).toEqual([]);
      expect(undeclared(deltaUsage, DELTA_USAGE_MEMBERS)).toEqual([]);
      expect(message.usage).toMatchObject({
        input_tokens: json.usage.input_tokens,
        cache_creation_input_tokens: 2 * quarter,
        cache_creation: json.usage.cache_creation,
        output_tokens: json.usage.output_tokens,
      });
    });

    it('details the thinking tokens of a model that thought, in the JSON usage and in message_delta', async () => {
      const params = { ...ask('Think first'), thinking: { type: 'enabled' as const, budget_tokens: 2048 } };
      const json = await client.messages.create(params);
      const { message } = await streamed(params);
      // Read raw: the SDK builds its final message on the message_start event's own objects.
      const outcome = await rawPost(
        `${baseUrl}/v1/messages`,
        { ...params, stream: true },
        { headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' } },
      );
      const events = parseSse(outcome.text).map((event) => JSON.parse(event.data));

      expect(json.usage.output_tokens_details).toEqual({ thinking_tokens: 6 });
      expect(events.find((event) => event.type === 'message_start').message.usage).not.toHaveProperty('output_tokens_details');
      expect(events.find((event) => event.type === 'message_delta').usage.output_tokens_details).toEqual({ thinking_tokens: 6 });
      expect(message.usage.output_tokens_details).toEqual({ thinking_tokens: 6 });
      expect((await client.messages.create(ask('No thinking'))).usage).not.toHaveProperty('output_tokens_details');
    });
  });

  it('counts tokens of system and messages', async () => {
    const messages = [{ role: 'user' as const, content: 'How many tokens?' }];
    const counted = await client.messages.countTokens({ model: 'text-model-3', system: 'Be brief', messages });

    expect(counted).toEqual({ input_tokens: quarterBytes({ system: 'Be brief', messages }) });
  });

  it('requires the version header, answering in the Anthropic error shape', async () => {
    const outcome = await rawPost(`${baseUrl}/v1/messages`, ask('No version'), { headers: { 'x-api-key': 'sk-ant-test' } });

    expect(outcome.status).toBe(400);
    expect(JSON.parse(outcome.text)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' },
    });
  });

  it('accepts the neutral messages-version header instead', async () => {
    const outcome = await rawPost(`${baseUrl}/v1/messages`, ask('Neutral'), {
      headers: { 'x-api-key': 'sk-ant-test', 'messages-version': '2023-06-01' },
    });

    expect(outcome.status).toBe(200);
  });

  it('rejects a wrong key with an authentication_error the SDK recognises', async () => {
    const intruder = new Anthropic({ baseURL: baseUrl, apiKey: 'sk-ant-wrong', maxRetries: 0 });

    const failure = await intruder.messages.create(ask('Hi')).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((failure as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });
  });
});
