import type { CanonicalMessage, CanonicalRequest, CanonicalTool, CanonicalToolChoice } from '../canonical/request';
import { encodeChatRequest } from './encode-chat-request';

function request(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return {
    model: 'gpt-sim-1',
    system: [],
    messages: [{ role: 'user', parts: [{ type: 'text', text: 'Hello.' }] }],
    tools: [],
    maxOutputTokens: 1000,
    stream: false,
    ...overrides,
  };
}

/** The messages of the encoded body. */
function messagesOf(messages: CanonicalMessage[]): unknown {
  return encodeChatRequest(request({ messages })).value.messages;
}

const weather: CanonicalTool = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  kind: 'function',
};

const PDF_BASE64 = 'JVBERi0xLjQK';
const PNG_DATA_URL = 'data:image/png;base64,iVBORw0KGgo=';

describe(encodeChatRequest.name, () => {
  it('encodes a plain request with one system message per system string, first', () => {
    const mapped = encodeChatRequest(request({ system: ['Be terse.', 'Answer in French.'] }));
    expect(mapped).toEqual({
      value: {
        model: 'gpt-sim-1',
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'Hello.' },
        ],
        max_completion_tokens: 1000,
        stream: false,
      },
      dropped: [],
      ignored: [],
    });
  });

  it('asks for the usage chunk when streaming', () => {
    expect(encodeChatRequest(request({ stream: true })).value).toEqual({
      model: 'gpt-sim-1',
      messages: [{ role: 'user', content: 'Hello.' }],
      max_completion_tokens: 1000,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('carries temperature, top_p, stop and the reasoning effort, dropping nothing', () => {
    const mapped = encodeChatRequest(request({ temperature: 0.2, topP: 0.9, stop: ['END', '###'], reasoning: { effort: 'minimal', summary: true } }));
    expect(mapped).toEqual({
      value: {
        model: 'gpt-sim-1',
        messages: [{ role: 'user', content: 'Hello.' }],
        max_completion_tokens: 1000,
        temperature: 0.2,
        top_p: 0.9,
        stop: ['END', '###'],
        reasoning_effort: 'minimal',
        stream: false,
      },
      dropped: [],
      ignored: [],
    });
  });

  it.each(['low', 'medium', 'high'] as const)('sends reasoning effort %s as is', (effort) => {
    expect(encodeChatRequest(request({ reasoning: { effort } })).value.reasoning_effort).toBe(effort);
  });

  it('sends user text, images and PDF files as content parts, naming a PDF that has no filename', () => {
    const messages = messagesOf([
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image', url: 'https://example.com/cat.png', detail: 'high' },
          { type: 'image', url: PNG_DATA_URL },
          { type: 'file', mediaType: 'application/pdf', data: PDF_BASE64, filename: 'report.pdf' },
          { type: 'file', mediaType: 'application/pdf', data: PDF_BASE64 },
        ],
      },
    ]);
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Compare these.' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } },
          { type: 'image_url', image_url: { url: PNG_DATA_URL } },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'report.pdf' } },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'document.pdf' } },
        ],
      },
    ]);
  });

  it('keeps several user text parts apart as content parts', () => {
    const messages = messagesOf([
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'One.' },
          { type: 'text', text: 'Two.' },
        ],
      },
    ]);
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'One.' },
          { type: 'text', text: 'Two.' },
        ],
      },
    ]);
  });

  it('sends consecutive user messages as separate messages', () => {
    const messages = messagesOf([
      { role: 'user', parts: [{ type: 'text', text: 'One.' }] },
      { role: 'user', parts: [{ type: 'text', text: 'Two.' }] },
    ]);
    expect(messages).toEqual([
      { role: 'user', content: 'One.' },
      { role: 'user', content: 'Two.' },
    ]);
  });

  it('sends assistant text and tool calls in one message, joining text parts', () => {
    const messages = messagesOf([
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
          { type: 'text', text: 'And Rome.' },
          { type: 'tool_call', id: 'call_2', name: 'shell', arguments: '{"input":"ls"}', kind: 'custom' },
        ],
      },
    ]);
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: 'Let me check.\nAnd Rome.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'shell', arguments: '{"input":"ls"}' } },
        ],
      },
    ]);
  });

  it('sends null content for an assistant message holding only tool calls', () => {
    const messages = messagesOf([{ role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{}', kind: 'function' }] }]);
    expect(messages).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
    ]);
  });

  it('leaves reasoning out, and an assistant message holding only reasoning', () => {
    const origin = { protocol: 'chat_completions', upstreamModel: 'gpt-sim-1' };
    const messages = messagesOf([
      { role: 'user', parts: [{ type: 'text', text: 'Hi.' }] },
      { role: 'assistant', parts: [{ type: 'reasoning', text: 'Hmm.', opaque: { kind: 'encrypted', value: 'x' }, origin }] },
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'Hmm.' },
          { type: 'text', text: 'Hello!' },
        ],
      },
    ]);
    expect(messages).toEqual([
      { role: 'user', content: 'Hi.' },
      { role: 'assistant', content: 'Hello!' },
    ]);
  });

  it('sends tool results as tool messages, joining the text parts of rich results', () => {
    const messages = messagesOf([
      {
        role: 'user',
        parts: [
          { type: 'tool_result', callId: 'call_1', content: '18°C', kind: 'function' },
          {
            type: 'tool_result',
            callId: 'call_2',
            content: [
              { type: 'text', text: 'Rome:' },
              { type: 'text', text: '24°C' },
            ],
            kind: 'function',
          },
          { type: 'tool_result', callId: 'call_3', content: 'city not found', isError: true, kind: 'function' },
        ],
      },
    ]);
    expect(messages).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
      { role: 'tool', tool_call_id: 'call_2', content: 'Rome:\n24°C' },
      { role: 'tool', tool_call_id: 'call_3', content: 'city not found' },
    ]);
  });

  it('carries images and files of tool results in a user message after all the tool messages', () => {
    const messages = messagesOf([
      {
        role: 'user',
        parts: [
          {
            type: 'tool_result',
            callId: 'call_1',
            content: [
              { type: 'text', text: 'Screenshot taken.' },
              { type: 'image', url: PNG_DATA_URL },
            ],
            kind: 'function',
          },
        ],
      },
      {
        role: 'user',
        parts: [
          {
            type: 'tool_result',
            callId: 'call_2',
            content: [{ type: 'file', mediaType: 'application/pdf', data: PDF_BASE64, filename: 'a.pdf' }],
            kind: 'function',
          },
          { type: 'text', text: 'Go on.' },
        ],
      },
      { role: 'user', parts: [{ type: 'text', text: 'Thanks.' }] },
    ]);
    expect(messages).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'Screenshot taken.' },
      { role: 'tool', tool_call_id: 'call_2', content: '' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: PNG_DATA_URL } },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF_BASE64}`, filename: 'a.pdf' } },
          { type: 'text', text: 'Go on.' },
        ],
      },
      { role: 'user', content: 'Thanks.' },
    ]);
  });

  it('sends a whole tool round trip in chat order', () => {
    const messages = messagesOf([
      { role: 'user', parts: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' }] },
      { role: 'user', parts: [{ type: 'tool_result', callId: 'call_1', content: '18°C', kind: 'function' }] },
      { role: 'assistant', parts: [{ type: 'text', text: 'It is 18°C.' }] },
    ]);
    expect(messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
      { role: 'assistant', content: 'It is 18°C.' },
    ]);
  });

  it('declares function and custom tools as chat functions, with strict when set', () => {
    const shell: CanonicalTool = {
      name: 'shell',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
      kind: 'custom',
      strict: true,
    };
    const body = encodeChatRequest(request({ tools: [weather, shell], toolChoice: { type: 'auto' }, parallelToolCalls: false })).value;
    expect(body).toEqual({
      model: 'gpt-sim-1',
      messages: [{ role: 'user', content: 'Hello.' }],
      tools: [
        { type: 'function', function: { name: 'get_weather', description: 'Current weather for a city.', parameters: weather.parameters } },
        { type: 'function', function: { name: 'shell', parameters: shell.parameters, strict: true } },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      max_completion_tokens: 1000,
      stream: false,
    });
  });

  it.each<[CanonicalToolChoice, unknown]>([
    [{ type: 'auto' }, 'auto'],
    [{ type: 'none' }, 'none'],
    [{ type: 'required' }, 'required'],
    [
      { type: 'tool', name: 'get_weather' },
      { type: 'function', function: { name: 'get_weather' } },
    ],
  ])('maps tool choice %j to %j', (toolChoice, expected) => {
    expect(encodeChatRequest(request({ tools: [weather], toolChoice })).value.tool_choice).toEqual(expected);
  });

  it('leaves parallel_tool_calls out when not set', () => {
    expect(encodeChatRequest(request({ tools: [weather] })).value).not.toHaveProperty('parallel_tool_calls');
  });

  it('leaves tools, tool_choice and parallel_tool_calls out without tools, which OpenAI would refuse', () => {
    const body = encodeChatRequest(request({ toolChoice: { type: 'none' }, parallelToolCalls: true })).value;
    expect(body).toEqual({
      model: 'gpt-sim-1',
      messages: [{ role: 'user', content: 'Hello.' }],
      max_completion_tokens: 1000,
      stream: false,
    });
  });
});
