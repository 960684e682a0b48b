import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { parseSse, quarterBytes, rawPost, timeTool, weatherTool, type FunctionDeclaration } from './simulator-test-kit';
import { UpstreamSimulator } from './upstream-simulator';

describe('UpstreamSimulator chat completions', () => {
  const simulator = new UpstreamSimulator({ apiKey: 'sk-chat' });
  let baseUrl: string;
  let client: OpenAI;

  beforeAll(async () => {
    baseUrl = await simulator.start();
    client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-chat', maxRetries: 0 });
  });
  afterAll(() => simulator.stop());

  const asTool = (tool: FunctionDeclaration) => ({ type: 'function' as const, function: tool });
  const userAsks = (content: string): { model: string; messages: ChatCompletionMessageParam[] } => ({
    model: 'text-model-1',
    messages: [{ role: 'user', content }],
  });

  it('answers JSON with the echoed model, a chatcmpl id and usage computed from the messages', async () => {
    const request = userAsks('Say hi');
    const completion = await client.chat.completions.create(request);

    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('text-model-1');
    expect(completion.choices[0].message).toMatchObject({ role: 'assistant', content: 'Hello from text-model-1: Say hi' });
    expect(completion.choices[0].finish_reason).toBe('stop');
    const promptTokens = quarterBytes(request.messages);
    expect(completion.usage).toMatchObject({ prompt_tokens: promptTokens, completion_tokens: 5, total_tokens: promptTokens + 5 });
  });

  it('streams the answer in several deltas and sends the usage chunk only when include_usage is true', async () => {
    const request = userAsks('Stream this please');
    const json = await client.chat.completions.create(request);
    const chunks: ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    for await (const chunk of stream) chunks.push(chunk);

    const usageChunk = chunks[chunks.length - 1];
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual(json.usage);
    const ordinary = chunks.slice(0, -1);
    expect(ordinary.every((chunk) => chunk.usage === null)).toBe(true);
    expect(ordinary[0].choices[0].delta.role).toBe('assistant');
    expect(ordinary[ordinary.length - 1].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    const contentDeltas = ordinary.map((chunk) => chunk.choices[0].delta.content).filter(Boolean);
    expect(contentDeltas.length).toBeGreaterThan(3);
    expect(contentDeltas.join('')).toBe(json.choices[0].message.content);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
  });

  it('omits usage entirely from a stream that did not ask for it', async () => {
    const chunks: ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({ ...userAsks('No usage'), stream: true });
    for await (const chunk of stream) chunks.push(chunk);

    expect(chunks.some((chunk) => 'usage' in chunk)).toBe(false);
    expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true);
  });

  it('frames chunks as bare data lines ending with [DONE]', async () => {
    const outcome = await rawPost(
      `${baseUrl}/v1/chat/completions`,
      { ...userAsks('Raw'), stream: true },
      {
        headers: { authorization: 'Bearer sk-chat' },
      },
    );

    expect(outcome.headers?.['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = parseSse(outcome.text);
    expect(events.every((event) => event.event === undefined)).toBe(true);
    expect(events[events.length - 1].data).toBe('[DONE]');
    expect(outcome.text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('calls the first function tool with arguments built from its schema', async () => {
    const completion = await client.chat.completions.create({
      ...userAsks('What is the weather?'),
      tools: [asTool(weatherTool), asTool(timeTool)],
    });

    const choice = completion.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(call.id).toMatch(/^call_/);
    expect(JSON.parse(call.type === 'function' ? call.function.arguments : '')).toEqual({ city: 'Paris' });
  });

  it('streams two parallel calls with distinct ids that the SDK assembles', async () => {
    const stream = client.chat.completions.stream({
      ...userAsks('Check two cities in parallel'),
      tools: [asTool(weatherTool)],
      stream_options: { include_usage: true },
    });
    const completion = await stream.finalChatCompletion();

    const calls = completion.choices[0].message.tool_calls ?? [];
    expect(calls).toHaveLength(2);
    expect(calls[0].id).not.toBe(calls[1].id);
    for (const call of calls) {
      expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
    }
    expect(completion.choices[0].finish_reason).toBe('tool_calls');
    expect(completion.usage?.completion_tokens).toBe(2);
  });

  it('calls the named tool, and no tool when tool_choice is none', async () => {
    const tools = [asTool(weatherTool), asTool(timeTool)];
    const named = await client.chat.completions.create({
      ...userAsks('Time?'),
      tools,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    const none = await client.chat.completions.create({ ...userAsks('Just talk'), tools, tool_choice: 'none' });

    const namedCall = named.choices[0].message.tool_calls![0];
    expect(namedCall.type === 'function' && namedCall.function).toEqual({ name: 'get_time', arguments: '{"zone":"Paris"}' });
    expect(none.choices[0].message.content).toBe('Hello from text-model-1: Just talk');
  });

  it('answers a tool result with text that mentions it', async () => {
    const completion = await client.chat.completions.create({
      model: 'text-model-1',
      tools: [asTool(weatherTool)],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '22 degrees' },
      ],
    });

    expect(completion.choices[0].message.content).toBe('Hello from text-model-1: the tool said 22 degrees');
    expect(completion.choices[0].finish_reason).toBe('stop');
  });

  it('reports reasoning tokens inside completion tokens when reasoning_effort is set', async () => {
    const plain = await client.chat.completions.create(userAsks('Think'));
    const reasoned = await client.chat.completions.create({ ...userAsks('Think'), reasoning_effort: 'low' });

    const reasoningTokens = reasoned.usage!.completion_tokens_details!.reasoning_tokens!;
    expect(reasoningTokens).toBeGreaterThan(0);
    expect(plain.usage!.completion_tokens_details!.reasoning_tokens).toBe(0);
    expect(reasoned.usage!.completion_tokens).toBe(plain.usage!.completion_tokens + reasoningTokens);
  });

  it('reports half the prompt as cached when the body contains cache-me', async () => {
    const completion = await client.chat.completions.create(userAsks('Please cache-me'));

    const promptTokens = completion.usage!.prompt_tokens;
    expect(completion.usage!.prompt_tokens_details!.cached_tokens).toBe(Math.floor(promptTokens / 2));
    expect(promptTokens).toBeGreaterThan(1);
  });

  it('cuts the answer at max_tokens words with finish_reason length', async () => {
    const completion = await client.chat.completions.create({ ...userAsks('one two three four'), max_tokens: 3 });

    expect(completion.choices[0].message.content).toBe('Hello from text-model-1:');
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBe(3);
  });

  it('rejects a body without messages in the OpenAI error shape', async () => {
    const outcome = await rawPost(
      `${baseUrl}/v1/chat/completions`,
      { model: 'text-model-1' },
      {
        headers: { authorization: 'Bearer sk-chat' },
      },
    );

    expect(outcome.status).toBe(400);
    expect(JSON.parse(outcome.text)).toEqual({
      error: { message: "Missing required parameter: 'messages'.", type: 'invalid_request_error', param: null, code: null },
    });
  });
});
