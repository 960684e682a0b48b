import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeChatResponse, decodeChatUsage, mapChatFinishReason, type ChatFinishReason } from './decode-chat-response';
import type { StopReason } from '../canonical/response';

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(__dirname, '__fixtures__', name), 'utf8'));
}

/** Plain usage of the simulator: no cache hit, no reasoning (reported zeros stay zeros). */
function plainUsage(inputTokens: number, outputTokens: number) {
  return { inputTokens, cachedInputTokens: 0, outputTokens, reasoningTokens: 0 };
}

describe(decodeChatResponse.name, () => {
  it('decodes a text answer (chat-text.json)', () => {
    expect(decodeChatResponse(fixture('chat-text.json'))).toEqual({
      id: 'chatcmpl-VoDYRNw44A5X3XNGDnrc2PglrDBJq',
      model: 'gpt-sim-1',
      output: [{ type: 'text', text: 'Hello from gpt-sim-1: Say hello.' }],
      stopReason: 'end',
      usage: plainUsage(22, 5),
    });
  });

  it('decodes a tool call as a function tool_call part (chat-tool-call.json)', () => {
    expect(decodeChatResponse(fixture('chat-tool-call.json'))).toEqual({
      id: 'chatcmpl-FHDcHpBXBDJdxBBqHUIedqm8pXtMD',
      model: 'gpt-sim-1',
      output: [{ type: 'tool_call', id: 'call_Q7C8FNDylduCG6uQDDrj4yM5', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' }],
      stopReason: 'tool_calls',
      usage: plainUsage(26, 1),
    });
  });

  it('decodes parallel tool calls in order (chat-parallel-tool-calls.json)', () => {
    const response = decodeChatResponse(fixture('chat-parallel-tool-calls.json'));
    expect(response.output).toEqual([
      { type: 'tool_call', id: 'call_Bs9koJDyPpFv3XdSrq0a4udA', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
      { type: 'tool_call', id: 'call_6dYoX6VwZvrXUEJLRSRlqz9z', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
    ]);
    expect(response.stopReason).toBe('tool_calls');
  });

  it('reads reasoning tokens out of completion_tokens_details (chat-reasoning.json)', () => {
    expect(decodeChatResponse(fixture('chat-reasoning.json')).usage).toEqual({
      inputTokens: 25,
      cachedInputTokens: 0,
      outputTokens: 15,
      reasoningTokens: 8,
    });
  });

  it('reads cached tokens out of prompt_tokens_details, keeping them in inputTokens (chat-cached.json)', () => {
    expect(decodeChatResponse(fixture('chat-cached.json')).usage).toEqual({
      inputTokens: 24,
      cachedInputTokens: 12,
      outputTokens: 6,
      reasoningTokens: 0,
    });
  });

  it('maps a length cut to max_tokens and keeps the cut text (chat-length.json)', () => {
    const response = decodeChatResponse(fixture('chat-length.json'));
    expect(response.stopReason).toBe('max_tokens');
    expect(response.output).toEqual([{ type: 'text', text: 'Hello from gpt-sim-1: Tell' }]);
  });

  it('turns a refusal into text with the refusal stop reason (chat-refusal.json)', () => {
    const response = decodeChatResponse(fixture('chat-refusal.json'));
    expect(response.output).toEqual([{ type: 'text', text: "I'm sorry, I can't help with that." }]);
    expect(response.stopReason).toBe('refusal');
  });

  it('puts text before tool calls when a message has both', () => {
    const body = {
      id: 'chatcmpl-1',
      model: 'm',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    };
    expect(decodeChatResponse(body).output).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{}', kind: 'function' },
    ]);
  });

  it('keeps usage unknown when the upstream reports none', () => {
    const body = { id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }] };
    expect(decodeChatResponse(body).usage).toEqual({});
  });

  it('treats an unknown finish reason of a compatible upstream as a natural end', () => {
    const body = { id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'eos' }] };
    expect(decodeChatResponse(body).stopReason).toBe('end');
  });

  it('refuses a body that is not a chat completion', () => {
    expect(() => decodeChatResponse({ object: 'list', data: [] })).toThrow('not a chat completion');
  });
});

describe(mapChatFinishReason.name, () => {
  it.each<[ChatFinishReason, StopReason]>([
    ['stop', 'end'],
    ['length', 'max_tokens'],
    ['tool_calls', 'tool_calls'],
    ['function_call', 'tool_calls'],
    ['content_filter', 'content_filter'],
  ])('maps %s to %s', (reason, expected) => {
    expect(mapChatFinishReason(reason)).toBe(expected);
  });
});

describe(decodeChatUsage.name, () => {
  it('leaves out the figures a compatible upstream does not report', () => {
    expect(decodeChatUsage({ prompt_tokens: 40, completion_tokens: 18, total_tokens: 58 })).toEqual({ inputTokens: 40, outputTokens: 18 });
  });
});
