import OpenAI from 'openai';
import type { ResponseCreateAndStreamParams } from 'openai/lib/responses/ResponseStream';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { parseSse, quarterBytes, rawPost, weatherTool } from './simulator-test-kit';
import { UpstreamSimulator } from './upstream-simulator';

describe('UpstreamSimulator responses', () => {
  const simulator = new UpstreamSimulator();
  let baseUrl: string;
  let client: OpenAI;

  beforeAll(async () => {
    baseUrl = await simulator.start();
    client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-any', maxRetries: 0 });
  });
  afterAll(() => simulator.stop());

  const functionTool = { type: 'function' as const, strict: false, ...weatherTool };
  const ask = (input: string) => ({ model: 'text-model-2', input });

  /** Streams through the SDK helper and keeps every event it parsed. */
  async function streamed(params: ResponseCreateAndStreamParams) {
    const events: ResponseStreamEvent[] = [];
    const textSnapshots: string[] = [];
    const stream = client.responses.stream(params);
    stream.on('event', (event) => events.push(event));
    // The helper's own accumulation of deltas, independent of the final response.completed.
    stream.on('response.output_text.delta', (event) => textSnapshots.push(event.snapshot));
    const response = await stream.finalResponse();
    return { events, types: events.map((event) => event.type), response, textSnapshots };
  }

  it('answers JSON with a resp id, a message output item and usage from instructions and input', async () => {
    const request = { ...ask('Say hi'), instructions: 'Be brief' };
    const response = await client.responses.create(request);

    expect(response.id).toMatch(/^resp_/);
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'text-model-2' });
    expect(response.output_text).toBe('Hello from text-model-2: Say hi');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(response.output[0].id).toMatch(/^msg_/);
    const inputTokens = quarterBytes({ instructions: 'Be brief', input: 'Say hi' });
    expect(response.usage).toEqual({
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + 5,
    });
  });

  it('streams the documented event sequence with increasing sequence numbers and the JSON usage', async () => {
    const json = await client.responses.create(ask('Stream this'));
    const { events, types, response, textSnapshots } = await streamed(ask('Stream this'));

    const deltas = types.filter((type) => type === 'response.output_text.delta').length;
    expect(deltas).toBe(5);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array<string>(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(response.output_text).toBe(json.output_text);
    expect(textSnapshots[textSnapshots.length - 1]).toBe(json.output_text);
    expect(response.usage).toEqual(json.usage);
    expect(events[0].type === 'response.created' && events[0].response.status).toBe('in_progress');
  });

  it('names every SSE event after its type and sends no [DONE]', async () => {
    const outcome = await rawPost(`${baseUrl}/v1/responses`, { ...ask('Raw'), stream: true });

    const events = parseSse(outcome.text);
    expect(events.length).toBeGreaterThan(5);
    for (const event of events) expect(event.event).toBe(JSON.parse(event.data).type);
    expect(outcome.text).not.toContain('[DONE]');
  });

  it('streams parallel function calls as separate items with distinct call ids', async () => {
    const { types, response } = await streamed({ ...ask('Weather in parallel please'), tools: [functionTool] });

    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(2);
    expect(new Set(calls.map((call) => call.call_id)).size).toBe(2);
    for (const call of calls) {
      expect(call.id).toMatch(/^fc_/);
      expect(call.call_id).toMatch(/^call_/);
      expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    }
    expect(types.slice(2, 5)).toEqual(['response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta']);
    expect(types.filter((type) => type === 'response.function_call_arguments.done')).toHaveLength(2);
    expect(response.output_text).toBe('');
  });

  it('answers a function_call_output with text that mentions it', async () => {
    const response = await client.responses.create({
      model: 'text-model-2',
      tools: [functionTool],
      input: [
        { role: 'user', content: 'Weather?' },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: '22 degrees' },
      ],
    });

    expect(response.output_text).toBe('Hello from text-model-2: the tool said 22 degrees');
  });

  it('streams a reasoning item with summary and encrypted content when asked, counting reasoning tokens', async () => {
    const { types, response } = await streamed({
      ...ask('Think first'),
      reasoning: { effort: 'low', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
    });

    const reasoning = response.output[0];
    expect(reasoning.type).toBe('reasoning');
    if (reasoning.type !== 'reasoning') return;
    expect(reasoning.id).toMatch(/^rs_/);
    expect(reasoning.summary).toEqual([{ type: 'summary_text', text: 'Thinking about "Think first" before answering.' }]);
    expect(reasoning.encrypted_content).toMatch(/^gAAAAAB/);
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBe(6);
    expect(response.usage?.output_tokens).toBe(6 + 5);
    expect(types.slice(2, 5)).toEqual(['response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta']);
    expect(types).toContain('response.reasoning_summary_text.done');
    expect(types).toContain('response.reasoning_summary_part.done');
    expect(response.output_text).toBe('Hello from text-model-2: Think first');
  });

  it('leaves out the summary and the encrypted content unless asked for', async () => {
    const response = await client.responses.create({ ...ask('Think'), reasoning: { effort: 'medium' } });

    const reasoning = response.output[0];
    expect(reasoning).toMatchObject({ type: 'reasoning', summary: [] });
    expect(reasoning).not.toHaveProperty('encrypted_content');
    expect(response.usage?.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it('reports cached input tokens when the body contains cache-me', async () => {
    const response = await client.responses.create(ask('cache-me please'));

    expect(response.usage?.input_tokens_details.cached_tokens).toBe(Math.floor(response.usage!.input_tokens / 2));
  });

  it('ends a truncated answer with response.incomplete', async () => {
    const { types, response } = await streamed({ ...ask('a b c d e'), max_output_tokens: 2 });

    expect(types[types.length - 1]).toBe('response.incomplete');
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.output_text).toBe('Hello from');
  });
});
