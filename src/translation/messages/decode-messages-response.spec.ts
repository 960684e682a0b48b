import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalResponse } from '../canonical/response';
import { decodeMessagesResponse } from './decode-messages-response';
import { mapMessagesStopReason, type MessagesStopReason } from './messages-stop-reason';

const origin = { protocol: 'messages', upstreamModel: 'claude-sim-1' };

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(__dirname, '__fixtures__', `messages-${name}.json`), 'utf8'));
}

/** The captures report no cache writes, and so zeros for both durations (`cache_creation`). */
const noWrites = { cacheWriteInputTokens: 0, cacheWrite5mInputTokens: 0, cacheWrite1hInputTokens: 0 };
const plainUsage = (input: number, output: number) => ({ inputTokens: input, cachedInputTokens: 0, ...noWrites, outputTokens: output });

describe(decodeMessagesResponse.name, () => {
  it.each<[string, CanonicalResponse]>([
    [
      'text',
      {
        id: 'msg_01XKEAnJIxooHINq6rAH3QD0XJ',
        model: 'claude-sim-1',
        output: [{ type: 'text', text: 'Hello from claude-sim-1: Hello there' }],
        stopReason: 'end',
        usage: plainUsage(14, 5),
      },
    ],
    [
      'tool-use',
      {
        id: 'msg_01qn6ax92VLTEfVOEqeiWEcfV8',
        model: 'claude-sim-1',
        output: [{ type: 'tool_call', id: 'toolu_01enPF3lZ9wAgZ7xvCIECNUixH', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' }],
        stopReason: 'tool_calls',
        usage: plainUsage(18, 1),
      },
    ],
    [
      'parallel-tool-use',
      {
        id: 'msg_017tAk72QGGbl0k73iv7Uo5UBU',
        model: 'claude-sim-1',
        output: [
          { type: 'tool_call', id: 'toolu_01FUu6qAWTTQnwZPdNhUSXaj7o', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
          { type: 'tool_call', id: 'toolu_01WA2eRhgNdDXmi5Whq7FjG6f1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
        ],
        stopReason: 'tool_calls',
        usage: plainUsage(22, 2),
      },
    ],
    [
      'thinking',
      {
        id: 'msg_01mHksO5OoaAIv3rq16c3YcOeI',
        model: 'claude-sim-1',
        output: [
          {
            type: 'reasoning',
            text: 'Thinking about "Why is the sky blue?" before answering.',
            opaque: { kind: 'signature', value: 'f02qVaE0G3fUwcqPYsBLX4JSgh/aDFKEjozs23WDPFI=' },
            origin,
          },
          { type: 'text', text: 'Hello from claude-sim-1: Why is the sky blue?' },
        ],
        stopReason: 'end',
        usage: plainUsage(16, 17),
      },
    ],
    [
      'max-tokens',
      {
        id: 'msg_01qc5vbDSOIZZpR30vMBXQO2W2',
        model: 'claude-sim-1',
        output: [{ type: 'text', text: 'Hello from claude-sim-1:' }],
        stopReason: 'max_tokens',
        usage: plainUsage(20, 3),
      },
    ],
    [
      'cached',
      {
        id: 'msg_01ILVp0bmav85JJTnVLHIFMpps',
        model: 'claude-sim-1',
        output: [{ type: 'text', text: 'Hello from claude-sim-1: Hello again' }],
        stopReason: 'end',
        // Input counts every token: 13 uncached plus 13 read from the cache.
        usage: { inputTokens: 26, cachedInputTokens: 13, ...noWrites, outputTokens: 5 },
      },
    ],
  ])('decodes the %s capture', (name, expected) => {
    expect(decodeMessagesResponse(fixture(name), origin)).toStrictEqual(expected);
  });

  it('decodes redacted thinking, a stop sequence, cache writes and thinking tokens, and skips server tool blocks', () => {
    const body = {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [
        { type: 'redacted_thinking', data: 'EmwKAhgB' },
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'x' } },
        { type: 'text', text: 'Done' },
      ],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      usage: { input_tokens: 10, cache_creation_input_tokens: 30, cache_read_input_tokens: 5, output_tokens: 7, output_tokens_details: { thinking_tokens: 4 } },
    };
    expect(decodeMessagesResponse(body, origin)).toStrictEqual({
      id: 'msg_1',
      model: 'm',
      output: [
        { type: 'reasoning', text: '', opaque: { kind: 'redacted', value: 'EmwKAhgB' }, origin },
        { type: 'text', text: 'Done' },
      ],
      stopReason: 'stop_sequence',
      stopSequence: 'END',
      usage: { inputTokens: 45, cachedInputTokens: 5, cacheWriteInputTokens: 30, outputTokens: 7, reasoningTokens: 4 },
    });
  });

  it('keeps unknown usage figures undefined, not zero', () => {
    const body = { id: 'm', type: 'message', model: 'm', content: [], stop_reason: 'end_turn', usage: { output_tokens: 3 } };
    expect(decodeMessagesResponse(body, origin).usage).toStrictEqual({ outputTokens: 3 });
  });

  it('refuses a body that is not a message', () => {
    expect(() => decodeMessagesResponse({ type: 'error', error: {} }, origin)).toThrow('not a message');
  });
});

describe(mapMessagesStopReason.name, () => {
  it.each<[MessagesStopReason, string]>([
    ['end_turn', 'end'],
    ['max_tokens', 'max_tokens'],
    ['model_context_window_exceeded', 'max_tokens'],
    ['stop_sequence', 'stop_sequence'],
    ['tool_use', 'tool_calls'],
    ['pause_turn', 'pause'],
    ['refusal', 'refusal'],
  ])('maps %s to %s', (reason, expected) => {
    expect(mapMessagesStopReason(reason)).toBe(expected);
  });

  it('reads a stop reason newer than this code as a natural end', () => {
    const body = { id: 'm', type: 'message', model: 'm', content: [], stop_reason: 'brand_new_reason', usage: {} };
    expect(decodeMessagesResponse(body, origin).stopReason).toBe('end');
  });
});
