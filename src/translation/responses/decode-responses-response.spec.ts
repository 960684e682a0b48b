import { decodeResponsesResponse, mapResponsesEnding } from './decode-responses-response';
import { fixtureJson } from './responses-test-kit';

const origin = { protocol: 'responses', upstreamModel: 'gpt-sim-1' };
const decode = (name: string) => decodeResponsesResponse(fixtureJson(name), origin);

describe(decodeResponsesResponse.name, () => {
  it('decodes a text answer', () => {
    expect(decode('responses-text.json')).toEqual({
      id: 'resp_rzoVrQMBbHTcfoW2laeYTBRU23ltiP6Gw0ehriNWpEGdWmKA',
      model: 'gpt-sim-1',
      output: [{ type: 'text', text: 'Hello from gpt-sim-1: Say hello.' }],
      stopReason: 'end',
      usage: { inputTokens: 33, cachedInputTokens: 0, outputTokens: 5, reasoningTokens: 0 },
    });
  });

  it('decodes a function call as tool_calls', () => {
    expect(decode('responses-function-call.json')).toEqual({
      id: 'resp_mges1yzHgmAYPY6W89kQ2sGQsrNxHrEDgH6hAwBgAghGaJws',
      model: 'gpt-sim-1',
      output: [{ type: 'tool_call', id: 'call_VSVYQ3gL7G1hzjJoBz11jUET', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' }],
      stopReason: 'tool_calls',
      usage: { inputTokens: 38, cachedInputTokens: 0, outputTokens: 1, reasoningTokens: 0 },
    });
  });

  it('decodes parallel calls in output order', () => {
    expect(decode('responses-parallel-calls.json').output).toEqual([
      { type: 'tool_call', id: 'call_fFFq2il0at1wyIuIXCY5GEhI', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
      { type: 'tool_call', id: 'call_5BY5GuxmX4atPDad7r0ksXN1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
    ]);
  });

  it('decodes reasoning with its summary, its encrypted content and item id as opaque data, and the origin', () => {
    expect(decode('responses-reasoning.json')).toEqual({
      id: 'resp_rKXAAIKF408xJUwvEOIZcoLLkhSYLVM22OfFN0wGihZrGon7',
      model: 'gpt-sim-1',
      output: [
        {
          type: 'reasoning',
          text: 'Thinking about "Think, then say hello." before answering.',
          summary: ['Thinking about "Think, then say hello." before answering.'],
          opaque: {
            kind: 'encrypted',
            value: 'gAAAAABPEysS1JB9255V5F+e11eCzUZy6Hx3zs7DqkF2+B8+b8=',
            itemId: 'rs_DU50t1X1RvsysHxA6sFxbDj0LJOmOXUdKLB6lq1IVQMv5gAO',
          },
          origin,
        },
        { type: 'text', text: 'Hello from gpt-sim-1: Think, then say hello.' },
      ],
      stopReason: 'end',
      usage: { inputTokens: 36, cachedInputTokens: 0, outputTokens: 15, reasoningTokens: 8 },
    });
  });

  it('decodes an incomplete answer cut by max_output_tokens as max_tokens', () => {
    expect(decode('responses-incomplete.json')).toMatchObject({ output: [{ type: 'text', text: 'Hello from gpt-sim-1: Tell' }], stopReason: 'max_tokens' });
  });

  it('keeps cached input tokens inside the input count', () => {
    expect(decode('responses-cached.json').usage).toEqual({ inputTokens: 35, cachedInputTokens: 17, outputTokens: 6, reasoningTokens: 0 });
  });

  it('decodes a custom tool call with its input wrapped as {"input": …} arguments', () => {
    const body = {
      object: 'response',
      status: 'completed',
      output: [{ type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_1', name: 'run_sql', input: 'SELECT "a"' }],
    };
    expect(decodeResponsesResponse(body, origin)).toMatchObject({
      output: [{ type: 'tool_call', id: 'call_1', name: 'run_sql', arguments: '{"input":"SELECT \\"a\\""}', kind: 'custom' }],
      stopReason: 'tool_calls',
    });
  });

  it('decodes a content filter stop, a refusal, and leaves unreported usage undefined', () => {
    const filtered = { object: 'response', status: 'incomplete', incomplete_details: { reason: 'content_filter' }, output: [] };
    expect(decodeResponsesResponse(filtered, origin)).toMatchObject({ stopReason: 'content_filter', usage: {} });
    const refused = { object: 'response', status: 'completed', output: [{ type: 'message', content: [{ type: 'refusal', refusal: 'No.' }] }] };
    expect(decodeResponsesResponse(refused, origin)).toMatchObject({ output: [{ type: 'text', text: 'No.' }], stopReason: 'refusal' });
  });

  it('throws on a failed response and on a body that is not a Response', () => {
    expect(() => decodeResponsesResponse({ object: 'response', status: 'failed', error: { message: 'boom' }, output: [] }, origin)).toThrow(/failed: boom/);
    expect(() => decodeResponsesResponse({ choices: [] }, origin)).toThrow(/not a Response object/);
  });
});

describe(mapResponsesEnding.name, () => {
  it.each([
    ['completed', { calledTools: false, refused: false }, 'end'],
    ['completed', { calledTools: true, refused: false }, 'tool_calls'],
    ['completed', { calledTools: false, refused: true }, 'refusal'],
    ['max_output_tokens', { calledTools: true, refused: false }, 'max_tokens'],
    ['content_filter', { calledTools: false, refused: false }, 'content_filter'],
  ] as const)('maps %s with %j to %s', (ending, context, expected) => {
    expect(mapResponsesEnding(ending, context)).toBe(expected);
  });
});
