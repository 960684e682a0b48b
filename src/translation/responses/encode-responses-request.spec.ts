import { sealReasoning } from '../canonical/reasoning-seal';
import type { CanonicalRequest } from '../canonical/request';
import { decodeResponsesRequest } from './decode-responses-request';
import { decodeResponsesResponse } from './decode-responses-response';
import { encodeResponsesRequest } from './encode-responses-request';
import { encodeResponsesResponse } from './encode-responses-response';
import { fixtureJson, testContext } from './responses-test-kit';
import { CUSTOM_TOOL_PARAMETERS } from './responses-values';

const MODEL = 'gpt-sim-1';

function request(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: MODEL,
    system: [],
    messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hi' }] }],
    tools: [],
    maxOutputTokens: 1000,
    stream: false,
    ...overrides,
  };
}

const weather = {
  name: 'get_weather',
  description: 'Weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  kind: 'function' as const,
};

describe(encodeResponsesRequest.name, () => {
  it('encodes a plain request, never storing and always asking for encrypted reasoning', () => {
    expect(encodeResponsesRequest(request({ system: ['Be brief.', 'Use French.'] }))).toEqual({
      value: {
        model: MODEL,
        instructions: 'Be brief.\n\nUse French.',
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }],
        max_output_tokens: 1000,
        include: ['reasoning.encrypted_content'],
        store: false,
        stream: false,
      },
      dropped: [],
      ignored: [],
    });
  });

  it('encodes tools, tool choice, parallel calls and reasoning with a summary', () => {
    const body = encodeResponsesRequest(
      request({
        tools: [weather, { name: 'run_sql', parameters: CUSTOM_TOOL_PARAMETERS, kind: 'custom' }, { ...weather, name: 'strict_weather', strict: true }],
        toolChoice: { type: 'tool', name: 'get_weather' },
        parallelToolCalls: false,
        reasoning: { effort: 'high' },
        stream: true,
      }),
    ).value;
    expect(body).toEqual({
      model: MODEL,
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }],
      tools: [
        { type: 'function', name: 'get_weather', description: 'Weather', parameters: weather.parameters, strict: false },
        { type: 'function', name: 'run_sql', parameters: CUSTOM_TOOL_PARAMETERS, strict: false },
        { type: 'function', name: 'strict_weather', description: 'Weather', parameters: weather.parameters, strict: true },
      ],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      max_output_tokens: 1000,
      reasoning: { effort: 'high', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
      stream: true,
    });
  });

  it.each([
    [{ type: 'auto' as const }, 'auto'],
    [{ type: 'none' as const }, 'none'],
    [{ type: 'required' as const }, 'required'],
  ])('encodes tool choice %j', (toolChoice, expected) => {
    expect(encodeResponsesRequest(request({ tools: [weather], toolChoice })).value.tool_choice).toBe(expected);
  });

  it('does not send temperature, topP and stop, and reports them as dropped', () => {
    const result = encodeResponsesRequest(request({ temperature: 0.3, topP: 0.8, stop: ['END'] }));
    expect(result.value).not.toHaveProperty('temperature');
    expect(result.value).not.toHaveProperty('top_p');
    expect(result.value).not.toHaveProperty('stop');
    expect(result.dropped).toEqual(['temperature', 'topP', 'stop']);
  });

  it('encodes a tool conversation with images, files and rich tool results as items in order', () => {
    const messages: CanonicalRequest['messages'] = [
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'Look:' },
          { type: 'image', url: 'data:image/png;base64,AAAA' },
          { type: 'file', mediaType: 'application/pdf', data: 'JVBERi0=' },
        ],
      },
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
          { type: 'tool_call', id: 'call_2', name: 'run_sql', arguments: '{"input":"SELECT 1"}', kind: 'custom' },
        ],
      },
      {
        role: 'user',
        parts: [
          { type: 'tool_result', callId: 'call_1', content: 'Sunny', kind: 'function', isError: false },
          {
            type: 'tool_result',
            callId: 'call_2',
            content: [
              { type: 'text', text: '1' },
              { type: 'image', url: 'https://example.com/a.png', detail: 'low' },
            ],
            kind: 'custom',
          },
          { type: 'text', text: 'Thanks.' },
        ],
      },
    ];
    expect(encodeResponsesRequest(request({ messages })).value.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Look:' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' },
          { type: 'input_file', filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_2', name: 'run_sql', arguments: '{"input":"SELECT 1"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
      {
        type: 'function_call_output',
        call_id: 'call_2',
        output: [
          { type: 'input_text', text: '1' },
          { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
        ],
      },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Thanks.' }] },
    ]);
  });

  describe('reasoning restore', () => {
    const reasoningPart = (origin: { protocol: string; upstreamModel: string } | undefined) => ({
      type: 'reasoning' as const,
      text: 'Thought.',
      opaque: { kind: 'encrypted' as const, value: 'gAAAA-1', itemId: 'rs_1' },
      ...(origin === undefined ? {} : { origin }),
    });
    const inputOf = (part: ReturnType<typeof reasoningPart>) =>
      encodeResponsesRequest(request({ messages: [{ role: 'assistant', parts: [part, { type: 'text', text: 'Hello.' }] }] })).value.input;
    const answer = { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello.', annotations: [] }] };

    it('restores reasoning from this protocol and the same upstream model', () => {
      expect(inputOf(reasoningPart({ protocol: 'responses', upstreamModel: MODEL }))).toEqual([
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thought.' }], encrypted_content: 'gAAAA-1' },
        answer,
      ]);
    });

    it.each([
      ['another upstream model', { protocol: 'responses', upstreamModel: 'gpt-sim-2' }],
      ['another protocol', { protocol: 'messages', upstreamModel: MODEL }],
      ['no origin (unsealed vendor data)', undefined],
    ])('leaves out reasoning from %s, without reporting it', (_, origin) => {
      const result = encodeResponsesRequest(request({ messages: [{ role: 'assistant', parts: [reasoningPart(origin)] }] }));
      expect(result.value.input).toEqual([]);
      expect(result.dropped).toEqual([]);
    });

    it('round-trips the upstream encrypted content through the client seal', () => {
      const origin = { protocol: 'responses', upstreamModel: MODEL };
      const upstream = fixtureJson('responses-reasoning.json');
      const upstreamReasoning = (upstream.output as Array<Record<string, unknown>>)[0];
      const answer = encodeResponsesResponse(
        decodeResponsesResponse(upstream, origin),
        { echo: { reasoning: { summary: 'auto' } }, includeOpaqueReasoning: true },
        testContext(),
      );
      const clientItems = answer.output as Array<Record<string, unknown>>;
      expect(String(clientItems[0].encrypted_content)).toMatch(/^gwr1\./);

      const next = decodeResponsesRequest(
        { model: 'gateway-model', input: [{ role: 'user', content: 'Hi' }, ...clientItems, { role: 'user', content: 'Again' }] },
        { upstreamModel: MODEL, defaultMaxOutputTokens: 64000 },
      );
      const input = encodeResponsesRequest(next.value).value.input as Array<Record<string, unknown>>;
      expect(input[1]).toEqual({
        type: 'reasoning',
        id: upstreamReasoning.id,
        summary: upstreamReasoning.summary,
        encrypted_content: upstreamReasoning.encrypted_content,
      });
    });

    it('restores a seal made for a messages upstream nowhere on a responses upstream', () => {
      const token = sealReasoning({ origin: { protocol: 'messages', upstreamModel: MODEL }, kind: 'signature', value: 'sig', text: 'T' });
      const next = decodeResponsesRequest(
        {
          input: [
            { type: 'reasoning', id: 'rs_9', summary: [], encrypted_content: token },
            { role: 'user', content: 'Hi' },
          ],
        },
        { upstreamModel: MODEL, defaultMaxOutputTokens: 1 },
      );
      expect(encodeResponsesRequest(next.value).value.input).toEqual([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }]);
    });
  });
});
