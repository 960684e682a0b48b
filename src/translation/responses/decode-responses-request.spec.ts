import { sealReasoning } from '../canonical/reasoning-seal';
import { TranslationRejection } from '../canonical/request';
import { decodeResponsesRequest } from './decode-responses-request';
import { CUSTOM_TOOL_PARAMETERS } from './responses-values';

const options = { upstreamModel: 'upstream-model-1', defaultMaxOutputTokens: 64000 };
const decode = (body: Record<string, unknown>) => decodeResponsesRequest({ model: 'gateway-model', input: 'Hi', ...body }, options);
const rejection = (body: Record<string, unknown>) => () => decode(body);
const weather = { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };

describe(decodeResponsesRequest.name, () => {
  it('turns a plain string input into one user message with the upstream model and the default output limit', () => {
    expect(decode({})).toEqual({
      value: {
        model: 'upstream-model-1',
        system: [],
        messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hi' }] }],
        tools: [],
        maxOutputTokens: 64000,
        stream: false,
      },
      dropped: [],
      ignored: [],
    });
  });

  describe('stateful and background requests', () => {
    it.each([
      ['previous_response_id', { previous_response_id: 'resp_1' }],
      ['conversation', { conversation: 'conv_1' }],
      ['store: true', { store: true }],
    ])('rejects %s because the gateway stores no responses', (_, body) => {
      expect(rejection(body)).toThrow(TranslationRejection);
      expect(rejection(body)).toThrow(/stores no responses; send the full context with `store` false/);
    });

    it('rejects background: true', () => {
      expect(rejection({ background: true })).toThrow(/only foreground/);
    });

    it('ignores store: false and background: false, which are what the gateway does anyway', () => {
      expect(decode({ store: false, background: false })).toMatchObject({ dropped: [], ignored: ['store', 'background'] });
    });

    it('treats null stateful fields as absent', () => {
      expect(decode({ previous_response_id: null, conversation: null })).toMatchObject({ dropped: [], ignored: [] });
    });
  });

  describe('max_output_tokens', () => {
    it('uses the given limit', () => {
      expect(decode({ max_output_tokens: 300 }).value.maxOutputTokens).toBe(300);
    });

    it('falls back to the model maximum when absent', () => {
      expect(decodeResponsesRequest({ input: 'Hi' }, { ...options, defaultMaxOutputTokens: 8192 }).value.maxOutputTokens).toBe(8192);
    });

    it('rejects a limit that is not a positive integer', () => {
      expect(rejection({ max_output_tokens: 0 })).toThrow(/positive integer/);
      expect(rejection({ max_output_tokens: '100' })).toThrow(/positive integer/);
    });
  });

  describe('text', () => {
    it.each(['json_schema', 'json_object'])('rejects text.format of type %s: structured output is unsupported', (type) => {
      expect(rejection({ text: { format: { type, name: 'x', schema: {} } } })).toThrow(/structured output is unavailable/);
    });

    it('accepts plain text format without reporting it', () => {
      expect(decode({ text: { format: { type: 'text' } } })).toMatchObject({ dropped: [], ignored: [] });
    });

    it('drops verbosity as text', () => {
      expect(decode({ text: { format: { type: 'text' }, verbosity: 'low' } }).dropped).toEqual(['text']);
    });
  });

  describe('tools', () => {
    it('carries function tools, with strict only when the client set it', () => {
      const tools = [weather, { ...weather, name: 'strict_one', strict: true }];
      expect(decode({ tools }).value.tools).toEqual([
        { name: 'get_weather', description: 'Weather', parameters: weather.parameters, kind: 'function' },
        { name: 'strict_one', description: 'Weather', parameters: weather.parameters, kind: 'function', strict: true },
      ]);
    });

    it('gives a function tool without parameters an empty object schema', () => {
      expect(decode({ tools: [{ type: 'function', name: 'ping' }] }).value.tools).toEqual([
        { name: 'ping', parameters: { type: 'object', properties: {} }, kind: 'function' },
      ]);
    });

    it('turns a custom tool into a function with one string parameter input', () => {
      const result = decode({ tools: [{ type: 'custom', name: 'run_sql', description: 'Runs SQL' }] });
      expect(result.value.tools).toEqual([{ name: 'run_sql', description: 'Runs SQL', parameters: CUSTOM_TOOL_PARAMETERS, kind: 'custom' }]);
      expect(CUSTOM_TOOL_PARAMETERS).toEqual({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'] });
      expect(result.dropped).toEqual([]);
    });

    it('reports tools when a custom tool loses its grammar', () => {
      const grammar = { type: 'grammar', syntax: 'lark', definition: 'start: "a"' };
      expect(decode({ tools: [{ type: 'custom', name: 'letters', format: grammar }] }).dropped).toEqual(['tools']);
    });

    it.each(['web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'computer_use_preview', 'mcp', 'image_generation', 'local_shell'])(
      'drops the hosted %s tool and keeps the function tools',
      (type) => {
        const result = decode({ tools: [{ type }, weather] });
        expect(result.value.tools.map((tool) => tool.name)).toEqual(['get_weather']);
        expect(result.dropped).toEqual(['tools']);
      },
    );

    it('rejects a tool without a name', () => {
      expect(rejection({ tools: [{ type: 'function' }] })).toThrow(/tools\[0\]\.name/);
    });
  });

  describe('tool_choice', () => {
    it.each([
      ['auto', { type: 'auto' }],
      ['none', { type: 'none' }],
      ['required', { type: 'required' }],
      [
        { type: 'function', name: 'get_weather' },
        { type: 'tool', name: 'get_weather' },
      ],
      [
        { type: 'custom', name: 'run_sql' },
        { type: 'tool', name: 'run_sql' },
      ],
    ])('maps %j', (choice, expected) => {
      expect(decode({ tool_choice: choice }).value.toolChoice).toEqual(expected);
    });

    it.each([[{ type: 'allowed_tools', mode: 'auto', tools: [] }], [{ type: 'web_search_preview' }], [{ type: 'mcp', server_label: 'x' }], ['sometimes']])(
      'rejects %j',
      (choice) => {
        expect(rejection({ tool_choice: choice })).toThrow(/`tool_choice` must be auto, none, required, or one named function or custom tool/);
      },
    );

    it.each([['required'], [{ type: 'function', name: 'get_weather' }]])('switches reasoning off for %j and reports it', (choice) => {
      const result = decode({ tool_choice: choice, reasoning: { effort: 'high' }, temperature: 0.2 });
      expect(result.value.reasoning).toBeUndefined();
      expect(result.value.temperature).toBe(0.2);
      expect(result.dropped).toEqual(['reasoning']);
    });
  });

  describe('reasoning', () => {
    it.each(['minimal', 'low', 'medium', 'high'])('carries effort %s', (effort) => {
      expect(decode({ reasoning: { effort } }).value.reasoning).toEqual({ effort });
    });

    it('maps xhigh to high, the strongest canonical level', () => {
      expect(decode({ reasoning: { effort: 'xhigh' } }).value.reasoning).toEqual({ effort: 'high' });
    });

    it('treats effort none as reasoning off', () => {
      expect(decode({ reasoning: { effort: 'none', summary: 'auto' } }).value.reasoning).toBeUndefined();
    });

    it('asks for a summary when reasoning.summary is set, at the default medium effort when none is given', () => {
      expect(decode({ reasoning: { effort: 'low', summary: 'detailed' } }).value.reasoning).toEqual({ effort: 'low', summary: true });
      expect(decode({ reasoning: { summary: 'auto' } }).value.reasoning).toEqual({ effort: 'medium', summary: true });
    });

    it('rejects an unknown effort', () => {
      expect(rejection({ reasoning: { effort: 'extreme' } })).toThrow(/reasoning\.effort/);
    });
  });

  describe('temperature and top_p', () => {
    it('keeps them without reasoning', () => {
      expect(decode({ temperature: 0.5, top_p: 0.9 })).toMatchObject({ value: { temperature: 0.5, topP: 0.9 }, dropped: [] });
    });

    it('drops them while reasoning is on', () => {
      const result = decode({ temperature: 0.5, top_p: 0.9, reasoning: { effort: 'low' } });
      expect(result.value).not.toHaveProperty('temperature');
      expect(result.value).not.toHaveProperty('topP');
      expect(result.dropped).toEqual(['temperature', 'top_p']);
    });
  });

  describe('include, parallel_tool_calls and stream', () => {
    it('reads reasoning.encrypted_content from include without reporting include', () => {
      const result = decode({ include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] });
      expect(result.value.includeOpaqueReasoning).toBe(true);
      expect(result).toMatchObject({ dropped: [], ignored: [] });
    });

    it('carries parallel_tool_calls and stream', () => {
      expect(decode({ parallel_tool_calls: false, stream: true }).value).toMatchObject({ parallelToolCalls: false, stream: true });
    });
  });

  describe('ignored and dropped fields', () => {
    it('ignores fields that never change an answer', () => {
      const body = {
        metadata: { a: '1' },
        user: 'u',
        service_tier: 'auto',
        truncation: 'auto',
        safety_identifier: 's',
        prompt_cache_key: 'k',
        store: false,
        stream_options: {},
      };
      expect(decode(body)).toMatchObject({
        dropped: [],
        ignored: ['metadata', 'user', 'service_tier', 'truncation', 'safety_identifier', 'prompt_cache_key', 'stream_options', 'store'],
      });
    });

    it('drops every other field by its client name', () => {
      expect(decode({ top_logprobs: 3, max_tool_calls: 2, prompt: { id: 'pmpt_1' } }).dropped).toEqual(['top_logprobs', 'max_tool_calls', 'prompt']);
    });
  });

  describe('input items', () => {
    it('puts instructions first, then system and developer items, in order', () => {
      const input = [
        { role: 'developer', content: 'Be brief.' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
        { role: 'system', content: [{ type: 'input_text', text: 'Use French.' }] },
      ];
      expect(decode({ instructions: 'You help.', input }).value).toMatchObject({
        system: ['You help.', 'Be brief.', 'Use French.'],
        messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hi' }] }],
      });
    });

    it('decodes a tool conversation, keeping consecutive items of one role together', () => {
      const input = [
        { role: 'user', content: 'Weather and SQL?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'custom_tool_call', call_id: 'call_2', name: 'run_sql', input: 'SELECT 1' },
        { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
        { type: 'custom_tool_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '1' }] },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
      ];
      expect(decode({ input }).value.messages).toEqual([
        { role: 'user', parts: [{ type: 'text', text: 'Weather and SQL?' }] },
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
            { type: 'tool_result', callId: 'call_1', content: 'Sunny', kind: 'function' },
            { type: 'tool_result', callId: 'call_2', content: [{ type: 'text', text: '1' }], kind: 'custom' },
          ],
        },
        { role: 'assistant', parts: [{ type: 'text', text: 'I cannot.' }] },
      ]);
    });

    it('rejects item_reference items, as nothing is stored', () => {
      expect(rejection({ input: [{ type: 'item_reference', id: 'msg_1' }] })).toThrow(/input\[0\]: item_reference .* the gateway stores nothing/);
    });

    it('rejects item types it cannot translate, naming them', () => {
      expect(rejection({ input: [{ type: 'web_search_call', id: 'ws_1' }] })).toThrow(/input\[0\]: input items of type "web_search_call"/);
    });

    it('rejects a missing input', () => {
      expect(() => decodeResponsesRequest({ model: 'm' }, options)).toThrow(/`input` is required/);
    });
  });

  describe('images and files', () => {
    const user = (part: Record<string, unknown>) => ({ input: [{ role: 'user', content: [part] }] });
    const firstPart = (body: Record<string, unknown>) => decode(body).value.messages[0].parts[0];

    it('takes images by address or data URL', () => {
      expect(firstPart(user({ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'high' }))).toEqual({
        type: 'image',
        url: 'https://example.com/a.png',
        detail: 'high',
      });
      expect(firstPart(user({ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }))).toEqual({ type: 'image', url: 'data:image/png;base64,AAAA' });
    });

    it('rejects an image by file_id', () => {
      expect(rejection(user({ type: 'input_image', file_id: 'file_1' }))).toThrow(/file_id/);
    });

    it('takes a PDF as a data URL or as bare base64 with a .pdf filename', () => {
      expect(firstPart(user({ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }))).toEqual({
        type: 'file',
        mediaType: 'application/pdf',
        data: 'JVBERi0=',
        filename: 'a.pdf',
      });
      expect(firstPart(user({ type: 'input_file', filename: 'b.PDF', file_data: 'JVBERi0=' }))).toEqual({
        type: 'file',
        mediaType: 'application/pdf',
        data: 'JVBERi0=',
        filename: 'b.PDF',
      });
    });

    it.each([
      ['file_id', { type: 'input_file', file_id: 'file_1' }, /file_id/],
      ['file_url', { type: 'input_file', file_url: 'https://example.com/a.pdf' }, /file_url/],
      ['a non-PDF data URL', { type: 'input_file', file_data: 'data:text/plain;base64,aGk=' }, /only PDF/],
      ['bare base64 without a .pdf filename', { type: 'input_file', filename: 'notes.txt', file_data: 'aGk=' }, /only PDF/],
    ])('rejects a file given by %s', (_, part, message) => {
      expect(rejection(user(part))).toThrow(message);
    });

    it('takes images inside function call outputs', () => {
      const input = [{ type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_image', image_url: 'https://example.com/chart.png' }] }];
      expect(decode({ input }).value.messages[0].parts[0]).toEqual({
        type: 'tool_result',
        callId: 'call_1',
        content: [{ type: 'image', url: 'https://example.com/chart.png' }],
        kind: 'function',
      });
    });

    it('rejects images from the assistant', () => {
      expect(rejection({ input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] })).toThrow(
        /only user messages/,
      );
    });
  });

  describe('reasoning items', () => {
    const origin = { protocol: 'messages', upstreamModel: 'upstream-model-1' };

    it('opens a gateway seal into the upstream opaque data, its origin and verbatim text', () => {
      const token = sealReasoning({ origin, kind: 'signature', value: 'sig-1', text: 'Full thinking.' });
      const input = [{ type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Full thinking.' }], encrypted_content: token }];
      expect(decode({ input }).value.messages).toEqual([
        {
          role: 'assistant',
          parts: [{ type: 'reasoning', text: 'Full thinking.', summary: ['Full thinking.'], opaque: { kind: 'signature', value: 'sig-1' }, origin }],
        },
      ]);
    });

    it('keeps a vendor encrypted_content without an origin, so no upstream restores it', () => {
      const input = [{ type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'gAAAA-vendor' }];
      expect(decode({ input }).value.messages[0].parts).toEqual([
        { type: 'reasoning', text: '', opaque: { kind: 'encrypted', value: 'gAAAA-vendor', itemId: 'rs_2' } },
      ]);
    });

    it('joins summary parts with a blank line when there is no seal', () => {
      const input = [
        {
          type: 'reasoning',
          id: 'rs_3',
          summary: [
            { type: 'summary_text', text: 'One.' },
            { type: 'summary_text', text: 'Two.' },
          ],
        },
      ];
      expect(decode({ input }).value.messages[0].parts).toEqual([{ type: 'reasoning', text: 'One.\n\nTwo.', summary: ['One.', 'Two.'] }]);
    });
  });

  it('rejects malformed shapes with the path of the offending value', () => {
    expect(rejection({ input: 42 })).toThrow(/`input` must be a string or a list/);
    expect(rejection({ input: ['text'] })).toThrow(/input\[0\] must be an object/);
    expect(rejection({ input: [{ role: 'tool', content: 'x' }] })).toThrow(/input\[0\]\.role must be/);
    expect(rejection({ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] })).toThrow(/input\[0\]\.call_id must be a string/);
    expect(rejection({ instructions: ['x'] })).toThrow(/`instructions` must be a string/);
  });
});
