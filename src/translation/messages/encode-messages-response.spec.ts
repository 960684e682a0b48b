import type { TranslationContext } from '../canonical/ids';
import { openReasoning, sealReasoning } from '../canonical/reasoning-seal';
import type { CanonicalResponse, StopReason } from '../canonical/response';
import { encodeMessagesResponse } from './encode-messages-response';

const context: TranslationContext = { newId: (prefix) => `${prefix}_gateway1`, now: () => 1_700_000_000 };
const fromResponses = { protocol: 'responses', upstreamModel: 'gpt-up' };

function response(fields: Partial<CanonicalResponse>): CanonicalResponse {
  return { id: 'resp_up', model: 'gpt-up', output: [], stopReason: 'end', usage: {}, ...fields };
}

describe(encodeMessagesResponse.name, () => {
  it('encodes a whole message with the gateway id, sealed thinking, text and tool use', () => {
    const encoded = encodeMessagesResponse(
      response({
        output: [
          { type: 'reasoning', text: 'Plan', summary: ['Plan'], opaque: { kind: 'encrypted', value: 'gAAAA', itemId: 'rs_1' }, origin: fromResponses },
          { type: 'text', text: 'Checking the weather.' },
          { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
        ],
        stopReason: 'tool_calls',
        usage: { inputTokens: 40, cachedInputTokens: 13, cacheWriteInputTokens: 7, outputTokens: 9, reasoningTokens: 4 },
      }),
      context,
    );
    expect(encoded).toEqual({
      id: 'msg_gateway1',
      type: 'message',
      role: 'assistant',
      model: 'gpt-up',
      content: [
        {
          type: 'thinking',
          thinking: 'Plan',
          signature: sealReasoning({ origin: fromResponses, kind: 'encrypted', value: 'gAAAA', text: 'Plan', itemId: 'rs_1' }),
        },
        { type: 'text', text: 'Checking the weather.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      // input_tokens is the uncached part: 40 − 13 read − 7 written.
      usage: { input_tokens: 20, output_tokens: 9, cache_read_input_tokens: 13, cache_creation_input_tokens: 7 },
    });
  });

  it('writes unknown input and output figures as 0 (the SDK wants numbers) and unknown cache figures as null', () => {
    expect(encodeMessagesResponse(response({ usage: {} }), context).usage).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      cache_read_input_tokens: null,
      cache_creation_input_tokens: null,
    });
  });

  it('gives reasoning without opaque data an empty signature, which no upstream will restore', () => {
    const encoded = encodeMessagesResponse(response({ output: [{ type: 'reasoning', text: 'Thinking aloud' }] }), context);
    expect(encoded.content).toEqual([{ type: 'thinking', thinking: 'Thinking aloud', signature: '' }]);
  });

  it('shows the summaries when a reasoning part has no text of its own', () => {
    const encoded = encodeMessagesResponse(
      response({ output: [{ type: 'reasoning', text: '', summary: ['First.', 'Second.'], opaque: { kind: 'encrypted', value: 'e' }, origin: fromResponses }] }),
      context,
    );
    const [block] = encoded.content as Array<{ thinking: string; signature: string }>;
    expect(block.thinking).toBe('First.\n\nSecond.');
    expect(openReasoning(block.signature)).toEqual({ origin: fromResponses, kind: 'encrypted', value: 'e', text: 'First.\n\nSecond.', itemId: undefined });
  });

  it('keeps redacted reasoning redacted, its data sealed', () => {
    const origin = { protocol: 'messages', upstreamModel: 'claude-up' };
    const encoded = encodeMessagesResponse(
      response({ output: [{ type: 'reasoning', text: '', opaque: { kind: 'redacted', value: 'EmwK' }, origin }] }),
      context,
    );
    expect(encoded.content).toEqual([{ type: 'redacted_thinking', data: sealReasoning({ origin, kind: 'redacted', value: 'EmwK', text: '' }) }]);
  });

  it('emits a custom tool call as a tool_use with its input object, and unparsable arguments as {}', () => {
    const encoded = encodeMessagesResponse(
      response({
        output: [
          { type: 'tool_call', id: 'call_1', name: 'patch', arguments: '{"input":"*** Begin"}', kind: 'custom' },
          { type: 'tool_call', id: 'call_2', name: 'f', arguments: '{"cut', kind: 'function' },
        ],
      }),
      context,
    );
    expect(encoded.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'patch', input: { input: '*** Begin' } },
      { type: 'tool_use', id: 'call_2', name: 'f', input: {} },
    ]);
  });

  it.each<[StopReason, string]>([
    ['end', 'end_turn'],
    ['max_tokens', 'max_tokens'],
    ['tool_calls', 'tool_use'],
    ['stop_sequence', 'stop_sequence'],
    ['content_filter', 'refusal'],
    ['refusal', 'refusal'],
    ['pause', 'pause_turn'],
  ])('maps the stop reason %s to %s', (stopReason, expected) => {
    expect(encodeMessagesResponse(response({ stopReason }), context).stop_reason).toBe(expected);
  });

  it('carries the matched stop sequence', () => {
    expect(encodeMessagesResponse(response({ stopReason: 'stop_sequence', stopSequence: 'END' }), context).stop_sequence).toBe('END');
  });
});
