import type { CanonicalRequest } from '../canonical/request';
import { encodeMessagesRequest } from './encode-messages-request';

const MODEL = 'claude-upstream-1';
const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

function request(fields: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: MODEL,
    system: [],
    messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hi' }] }],
    tools: [],
    maxOutputTokens: 4096,
    stream: false,
    ...fields,
  };
}

const hi = { role: 'user', content: [{ type: 'text', text: 'Hi' }] };

describe(encodeMessagesRequest.name, () => {
  it('encodes a whole request with tools, history and sampling', () => {
    const result = encodeMessagesRequest(
      request({
        system: ['Be brief.', 'Answer in French.'],
        messages: [
          { role: 'user', parts: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
          {
            role: 'assistant',
            parts: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
            ],
          },
          { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_2', name: 'get_weather', arguments: 'not json', kind: 'function' }] },
          { role: 'user', parts: [{ type: 'tool_result', callId: 'call_1', content: 'Sunny', kind: 'function' }] },
          {
            role: 'user',
            parts: [
              { type: 'text', text: 'And this one?' },
              { type: 'tool_result', callId: 'call_2', content: 'Rain', isError: true, kind: 'function' },
            ],
          },
        ],
        tools: [{ name: 'get_weather', description: 'Current weather', parameters: schema, kind: 'function', strict: true }],
        toolChoice: { type: 'auto' },
        parallelToolCalls: false,
        maxOutputTokens: 1000,
        temperature: 0.3,
        topP: 0.8,
        stop: ['END'],
        stream: true,
      }),
    );
    expect(result).toEqual({
      value: {
        model: MODEL,
        max_tokens: 1000,
        system: 'Be brief.\n\nAnswer in French.',
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: 'Sunny' },
              { type: 'tool_result', tool_use_id: 'call_2', content: 'Rain', is_error: true },
              { type: 'text', text: 'And this one?' },
            ],
          },
        ],
        tools: [{ name: 'get_weather', description: 'Current weather', input_schema: schema, strict: true }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        temperature: 0.3,
        top_p: 0.8,
        stop_sequences: ['END'],
        stream: true,
      },
      dropped: [],
      ignored: [],
    });
  });

  it('leaves system out when there is none and sends only what the request has', () => {
    expect(encodeMessagesRequest(request()).value).toEqual({ model: MODEL, max_tokens: 4096, messages: [hi], stream: false });
    expect(encodeMessagesRequest(request({ system: [''] })).value).not.toHaveProperty('system');
  });

  it('encodes images as base64 or URL sources and PDFs as base64 documents, rich tool results too', () => {
    const { value } = encodeMessagesRequest(
      request({
        messages: [
          {
            role: 'user',
            parts: [
              { type: 'image', url: 'data:image/png;base64,iVBORw0K' },
              { type: 'image', url: 'https://example.com/cat.jpg', detail: 'high' },
              { type: 'file', mediaType: 'application/pdf', data: 'JVBERi0x', filename: 'report.pdf' },
              { type: 'text', text: '' },
              {
                type: 'tool_result',
                callId: 'c',
                content: [
                  { type: 'text', text: 'See' },
                  { type: 'image', url: 'data:image/gif,GIF89a' },
                ],
                kind: 'function',
              },
            ],
          },
        ],
      }),
    );
    expect(value.messages).toEqual([
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'c',
            content: [
              { type: 'text', text: 'See' },
              { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lGODlh' } },
            ],
          },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' }, title: 'report.pdf' },
        ],
      },
    ]);
  });

  it.each([
    [{ type: 'auto' }, { type: 'auto' }],
    [{ type: 'required' }, { type: 'any' }],
    [
      { type: 'tool', name: 'get_weather' },
      { type: 'tool', name: 'get_weather' },
    ],
    [{ type: 'none' }, { type: 'none' }],
  ] as const)('maps tool choice %j to %j', (choice, expected) => {
    const tools = [{ name: 'get_weather', parameters: schema, kind: 'function' as const }];
    expect(encodeMessagesRequest(request({ tools, toolChoice: choice })).value.tool_choice).toEqual(expected);
  });

  it('disables parallel tool use without an explicit choice, and never on none', () => {
    const tools = [{ name: 'get_weather', parameters: schema, kind: 'function' as const }];
    expect(encodeMessagesRequest(request({ tools, parallelToolCalls: false })).value.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(encodeMessagesRequest(request({ tools, toolChoice: { type: 'required' }, parallelToolCalls: false })).value.tool_choice).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    expect(encodeMessagesRequest(request({ tools, toolChoice: { type: 'none' }, parallelToolCalls: false })).value.tool_choice).toEqual({ type: 'none' });
  });

  it('sends no tool choice without tools', () => {
    expect(encodeMessagesRequest(request({ toolChoice: { type: 'auto' }, parallelToolCalls: false })).value).not.toHaveProperty('tool_choice');
  });

  describe('thinking', () => {
    it.each([
      ['minimal', 20000, 1024],
      ['low', 20000, 2048],
      ['medium', 20000, 8192],
      ['high', 30000, 24576],
      ['high', 10000, 9999],
      ['medium', 1025, 1024],
    ] as const)('gives %s reasoning with max_tokens %i a budget of %i', (effort, maxOutputTokens, budget) => {
      const result = encodeMessagesRequest(request({ reasoning: { effort }, maxOutputTokens }));
      expect(result.value.thinking).toEqual({ type: 'enabled', budget_tokens: budget });
      expect(result.dropped).toEqual([]);
    });

    it('sends no thinking when max_tokens is 1024 or less, and reports reasoning dropped', () => {
      const result = encodeMessagesRequest(request({ reasoning: { effort: 'high' }, maxOutputTokens: 1024, temperature: 0.5 }));
      expect(result.value).not.toHaveProperty('thinking');
      expect(result.value.temperature).toBe(0.5);
      expect(result.dropped).toEqual(['reasoning']);
    });

    it('sends no thinking when a tool use is forced', () => {
      const tools = [{ name: 'get_weather', parameters: schema, kind: 'function' as const }];
      const result = encodeMessagesRequest(request({ reasoning: { effort: 'low' }, tools, toolChoice: { type: 'tool', name: 'get_weather' } }));
      expect(result.value).not.toHaveProperty('thinking');
      expect(result.dropped).toEqual(['reasoning']);
    });

    it('drops temperature and top_p that reached it while thinking is on', () => {
      const result = encodeMessagesRequest(request({ reasoning: { effort: 'low' }, temperature: 0.5, topP: 0.9 }));
      expect(result.value).not.toHaveProperty('temperature');
      expect(result.value).not.toHaveProperty('top_p');
      expect(result.dropped).toEqual(['temperature', 'topP']);
    });
  });

  describe('reasoning continuation', () => {
    const mine = { protocol: 'messages', upstreamModel: MODEL };

    function assistantWith(...parts: CanonicalRequest['messages'][number]['parts']) {
      return encodeMessagesRequest(
        request({
          messages: [
            { role: 'user', parts: [{ type: 'text', text: 'Hi' }] },
            { role: 'assistant', parts },
          ],
        }),
      ).value.messages;
    }

    it('restores thinking of the same upstream model first in its assistant message', () => {
      expect(
        assistantWith(
          { type: 'text', text: 'Answer' },
          { type: 'reasoning', text: 'Thought', opaque: { kind: 'signature', value: 'sig' }, origin: mine },
          { type: 'reasoning', text: '', opaque: { kind: 'redacted', value: 'red' }, origin: mine },
        ),
      ).toEqual([
        hi,
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Thought', signature: 'sig' },
            { type: 'redacted_thinking', data: 'red' },
            { type: 'text', text: 'Answer' },
          ],
        },
      ]);
    });

    it.each([
      ['another model', { opaque: { kind: 'signature', value: 'sig' }, origin: { protocol: 'messages', upstreamModel: 'other-model' } }],
      ['another protocol', { opaque: { kind: 'encrypted', value: 'enc' }, origin: { protocol: 'responses', upstreamModel: MODEL } }],
      ['no origin (a vendor signature)', { opaque: { kind: 'signature', value: 'sig' } }],
      ['no opaque data', { origin: mine }],
    ] as const)('leaves out reasoning from %s', (_case, fields) => {
      expect(assistantWith({ type: 'reasoning', text: 'Thought', ...fields }, { type: 'text', text: 'Answer' })).toEqual([
        hi,
        { role: 'assistant', content: [{ type: 'text', text: 'Answer' }] },
      ]);
    });

    it('merges away the turn of reasoning that was left out, keeping alternation', () => {
      const { value } = encodeMessagesRequest(
        request({
          messages: [
            { role: 'user', parts: [{ type: 'text', text: 'One' }] },
            {
              role: 'assistant',
              parts: [{ type: 'reasoning', text: 'x', opaque: { kind: 'encrypted', value: 'e' }, origin: { protocol: 'responses', upstreamModel: 'g' } }],
            },
            { role: 'user', parts: [{ type: 'text', text: 'Two' }] },
          ],
        }),
      );
      expect(value.messages).toEqual([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'One' },
            { type: 'text', text: 'Two' },
          ],
        },
      ]);
    });
  });
});
