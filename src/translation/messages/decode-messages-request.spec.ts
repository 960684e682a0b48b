import { TranslationRejection, type CanonicalRequest } from '../canonical/request';
import { decodeMessagesRequest } from './decode-messages-request';

const UPSTREAM = 'upstream-model-1';
const weatherSchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

function decode(fields: Record<string, unknown>) {
  return decodeMessagesRequest(
    { model: 'gateway-model', max_tokens: 1024, messages: [{ role: 'user', content: 'Hi' }], ...fields },
    { upstreamModel: UPSTREAM },
  );
}

function rejection(fields: Record<string, unknown>): string {
  try {
    decode(fields);
  } catch (error) {
    if (error instanceof TranslationRejection) return error.message;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe(decodeMessagesRequest.name, () => {
  it('converts a whole request into the canonical form with the upstream model', () => {
    const result = decodeMessagesRequest(
      {
        model: 'gateway-model',
        max_tokens: 2000,
        system: [
          { type: 'text', text: 'Be brief.' },
          { type: 'text', text: 'Answer in French.' },
        ],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny', is_error: false }] },
        ],
        tools: [{ name: 'get_weather', description: 'Current weather', input_schema: weatherSchema, cache_control: { type: 'ephemeral' } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        temperature: 0.2,
        top_p: 0.9,
        stop_sequences: ['END'],
        stream: true,
      },
      { upstreamModel: UPSTREAM },
    );
    const expected: CanonicalRequest = {
      model: UPSTREAM,
      system: ['Be brief.', 'Answer in French.'],
      messages: [
        { role: 'user', parts: [{ type: 'text', text: 'Weather in Paris?' }] },
        { role: 'assistant', parts: [{ type: 'tool_call', id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' }] },
        { role: 'user', parts: [{ type: 'tool_result', callId: 'toolu_1', content: 'Sunny', kind: 'function' }] },
      ],
      tools: [{ name: 'get_weather', description: 'Current weather', parameters: weatherSchema, kind: 'function' }],
      toolChoice: { type: 'auto' },
      parallelToolCalls: false,
      maxOutputTokens: 2000,
      temperature: 0.2,
      topP: 0.9,
      stop: ['END'],
      stream: true,
    };
    expect(result).toEqual({ value: expected, dropped: [], ignored: [] });
  });

  it('takes a system string as one entry and leaves an empty one out', () => {
    expect(decode({ system: 'Be brief.' }).value.system).toEqual(['Be brief.']);
    expect(decode({ system: '' }).value.system).toEqual([]);
  });

  describe('rejections (400)', () => {
    it.each([
      ['max_tokens is missing', { max_tokens: undefined }, /^max_tokens: Field required/],
      ['max_tokens is not a number', { max_tokens: '100' }, /^max_tokens: Field required/],
      ['max_tokens is zero', { max_tokens: 0 }, /^max_tokens: Field required/],
      ['max_tokens is fractional', { max_tokens: 10.5 }, /^max_tokens: Field required/],
      ['messages is missing', { messages: undefined }, /^messages: Field required/],
      ['messages is not a list', { messages: 'Hi' }, /^messages: Field required/],
      ['a role is unknown', { messages: [{ role: 'system', content: 'x' }] }, /^messages\.0\.role: must be "user" or "assistant"/],
      ['content is neither string nor list', { messages: [{ role: 'user', content: 5 }] }, /^messages\.0\.content: must be a string/],
    ])('rejects a request when %s', (_case, fields, message) => {
      expect(rejection(fields)).toMatch(message);
    });

    it('rejects an image from an uploaded file', () => {
      const image = { type: 'image', source: { type: 'file', file_id: 'file_1' } };
      expect(rejection({ messages: [{ role: 'user', content: [image] }] })).toMatch(/^messages\.0\.content\.0\.source: uploaded files cannot be referenced/);
    });

    it('rejects a document from an uploaded file', () => {
      const document = { type: 'document', source: { type: 'file', file_id: 'file_1' } };
      expect(rejection({ messages: [{ role: 'user', content: [document] }] })).toMatch(/^messages\.0\.content\.0\.source: uploaded files cannot be referenced/);
    });

    it('rejects a document by URL', () => {
      const document = { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } };
      expect(rejection({ messages: [{ role: 'user', content: [document] }] })).toMatch(/^messages\.0\.content\.0\.source: documents are not fetched by URL/);
    });

    it('rejects an uploaded file inside a tool result', () => {
      const result = { type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] };
      expect(rejection({ messages: [{ role: 'user', content: [result] }] })).toMatch(/^messages\.0\.content\.0\.content\.0\.source: uploaded files/);
    });

    it('rejects a base64 document that is not a PDF', () => {
      const document = { type: 'document', source: { type: 'base64', media_type: 'text/csv', data: 'YQ==' } };
      expect(rejection({ messages: [{ role: 'user', content: [document] }] })).toMatch(/media_type: base64 documents must be "application\/pdf"/);
    });

    it('rejects content blocks the translation path cannot carry', () => {
      const block = { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: {} };
      expect(rejection({ messages: [{ role: 'assistant', content: [block] }] })).toMatch(
        /^messages\.0\.content\.0\.type: content blocks of type "server_tool_use"/,
      );
    });

    it.each([
      ['an unknown tool_choice', { tool_choice: { type: 'sometimes' } }, /^tool_choice\.type/],
      ['a named tool_choice without name', { tool_choice: { type: 'tool' } }, /^tool_choice\.name/],
      ['enabled thinking without budget', { thinking: { type: 'enabled' } }, /^thinking\.budget_tokens/],
      ['an unknown effort', { output_config: { effort: 'extreme' } }, /^output_config\.effort/],
      ['a tool without input_schema', { tools: [{ name: 'f' }] }, /^tools\.0\.input_schema/],
      ['a non-numeric temperature', { temperature: 'warm' }, /^temperature: must be a number/],
      ['stop_sequences that are not strings', { stop_sequences: [1] }, /^stop_sequences/],
    ])('rejects %s', (_case, fields, message) => {
      expect(rejection(fields)).toMatch(message);
    });
  });

  describe('dropped and ignored fields', () => {
    it('ignores metadata and service_tier', () => {
      const result = decode({ metadata: { user_id: 'u1' }, service_tier: 'auto' });
      expect(result.ignored).toEqual(['metadata', 'service_tier']);
      expect(result.dropped).toEqual([]);
    });

    it('drops top_k and other fields without counterpart, in the client order', () => {
      const result = decode({ top_k: 5, container: 'c1', mcp_servers: [], context_management: {} });
      expect(result.dropped).toEqual(['top_k', 'container', 'mcp_servers', 'context_management']);
    });

    it('does not report fields sent as null', () => {
      expect(decode({ top_k: null, metadata: null, temperature: null })).toMatchObject({ dropped: [], ignored: [] });
    });

    it('drops typed tools other than custom and keeps the client ones', () => {
      const result = decode({
        tools: [
          { type: 'web_search_20250305', name: 'web_search' },
          { type: 'custom', name: 'a', input_schema: weatherSchema },
          { name: 'b', input_schema: weatherSchema, strict: true },
          { type: 'bash_20250124', name: 'bash' },
        ],
      });
      expect(result.dropped).toEqual(['tools']);
      expect(result.value.tools).toEqual([
        { name: 'a', parameters: weatherSchema, kind: 'function' },
        { name: 'b', parameters: weatherSchema, kind: 'function', strict: true },
      ]);
    });

    it('drops output_config keys other than effort', () => {
      const result = decode({ output_config: { effort: 'low', format: { type: 'json_schema', schema: {} } } });
      expect(result.dropped).toEqual(['output_config']);
      expect(result.value.reasoning).toEqual({ effort: 'low', summary: true });
    });

    it('keeps temperature, top_p and stop_sequences even with thinking on', () => {
      const result = decode({ thinking: { type: 'enabled', budget_tokens: 5000 }, temperature: 1, top_p: 0.5, stop_sequences: ['x'] });
      expect(result.value).toMatchObject({ temperature: 1, topP: 0.5, stop: ['x'] });
      expect(result.dropped).toEqual([]);
    });
  });

  describe('reasoning strength', () => {
    it.each([
      [1024, 'low'],
      [4095, 'low'],
      [4096, 'medium'],
      [16383, 'medium'],
      [16384, 'high'],
      [32000, 'high'],
    ])('maps a thinking budget of %i tokens to %s', (budget, effort) => {
      expect(decode({ thinking: { type: 'enabled', budget_tokens: budget } }).value.reasoning).toEqual({ effort, summary: true });
    });

    it('maps adaptive thinking to medium', () => {
      expect(decode({ thinking: { type: 'adaptive' } }).value.reasoning).toEqual({ effort: 'medium', summary: true });
    });

    it('asks for no reasoning when thinking is disabled or absent', () => {
      expect(decode({ thinking: { type: 'disabled' } }).value.reasoning).toBeUndefined();
      expect(decode({}).value.reasoning).toBeUndefined();
      expect(decode({}).value.includeOpaqueReasoning).toBeUndefined();
    });

    it('asks for the opaque reasoning whenever reasoning is on, as messages clients always get signatures', () => {
      expect(decode({ thinking: { type: 'adaptive' } }).value.includeOpaqueReasoning).toBe(true);
    });

    it.each([
      ['low', 'low'],
      ['medium', 'medium'],
      ['high', 'high'],
      ['max', 'high'],
      ['xhigh', 'high'],
    ])('maps output_config.effort %s to %s', (given, effort) => {
      expect(decode({ output_config: { effort: given } }).value.reasoning).toEqual({ effort, summary: true });
    });

    it('lets output_config.effort take precedence over the thinking budget', () => {
      const result = decode({ thinking: { type: 'enabled', budget_tokens: 30000 }, output_config: { effort: 'low' } });
      expect(result.value.reasoning).toEqual({ effort: 'low', summary: true });
      expect(result.dropped).toEqual([]);
    });

    it('lets output_config.effort take precedence over disabled thinking', () => {
      expect(decode({ thinking: { type: 'disabled' }, output_config: { effort: 'medium' } }).value.reasoning).toEqual({ effort: 'medium', summary: true });
    });

    it('falls back to the thinking budget when output_config has no effort', () => {
      expect(decode({ thinking: { type: 'enabled', budget_tokens: 20000 }, output_config: {} }).value.reasoning?.effort).toBe('high');
    });

    it('drops a thinking mode it does not know rather than guessing', () => {
      const result = decode({ thinking: { type: 'between_tools' } });
      expect(result.value.reasoning).toBeUndefined();
      expect(result.dropped).toEqual(['thinking']);
    });

    it.each([
      [{ type: 'any' }, { type: 'required' }],
      [
        { type: 'tool', name: 'get_weather' },
        { type: 'tool', name: 'get_weather' },
      ],
    ])('switches reasoning off when tool_choice is %j and reports thinking as dropped', (choice, canonical) => {
      const result = decode({ thinking: { type: 'enabled', budget_tokens: 8000 }, tool_choice: choice });
      expect(result.value.reasoning).toBeUndefined();
      expect(result.value.toolChoice).toEqual(canonical);
      expect(result.dropped).toEqual(['thinking']);
    });

    it('reports output_config as dropped when forced tool use switches its effort off', () => {
      expect(decode({ output_config: { effort: 'high' }, tool_choice: { type: 'any' } }).dropped).toEqual(['output_config']);
    });

    it('keeps reasoning with tool_choice auto and none', () => {
      expect(decode({ thinking: { type: 'adaptive' }, tool_choice: { type: 'auto' } }).value.reasoning).toBeDefined();
      const none = decode({ thinking: { type: 'adaptive' }, tool_choice: { type: 'none' } });
      expect(none.value.toolChoice).toEqual({ type: 'none' });
      expect(none.value.reasoning).toBeDefined();
    });
  });
});
