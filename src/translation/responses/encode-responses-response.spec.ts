import { openReasoning } from '../canonical/reasoning-seal';
import type { CanonicalResponse } from '../canonical/response';
import { encodeResponsesResponse } from './encode-responses-response';
import { testContext } from './responses-test-kit';

const origin = { protocol: 'messages', upstreamModel: 'claude-sim-1' };
const plain = { echo: {}, includeOpaqueReasoning: false };

function answer(overrides: Partial<CanonicalResponse> = {}): CanonicalResponse {
  return {
    id: 'msg_upstream',
    model: 'claude-sim-1',
    output: [{ type: 'text', text: 'Hello.' }],
    stopReason: 'end',
    usage: { inputTokens: 20, cachedInputTokens: 5, outputTokens: 7, reasoningTokens: 3 },
    ...overrides,
  };
}

const thinking = { type: 'reasoning' as const, text: 'Let me think.', opaque: { kind: 'signature' as const, value: 'sig-1' }, origin };

describe(encodeResponsesResponse.name, () => {
  it('builds a whole Response object with the API defaults for fields the client did not send', () => {
    expect(encodeResponsesResponse(answer(), plain, testContext())).toEqual({
      id: 'resp_1',
      object: 'response',
      created_at: 1_700_000_000,
      status: 'completed',
      background: false,
      completed_at: 1_700_000_001,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      max_tool_calls: null,
      model: 'claude-sim-1',
      output: [
        {
          id: 'msg_2',
          type: 'message',
          status: 'completed',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text: 'Hello.' }],
          role: 'assistant',
        },
      ],
      parallel_tool_calls: true,
      previous_response_id: null,
      prompt_cache_key: null,
      reasoning: { effort: null, summary: null },
      safety_identifier: null,
      service_tier: 'default',
      store: false,
      temperature: 1,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: [],
      top_logprobs: 0,
      top_p: 1,
      truncation: 'disabled',
      usage: {
        input_tokens: 20,
        input_tokens_details: { cached_tokens: 5 },
        output_tokens: 7,
        output_tokens_details: { reasoning_tokens: 3 },
        total_tokens: 27,
      },
      user: null,
      metadata: {},
    });
  });

  it('repeats the request fields the client sent', () => {
    const echo = {
      model: 'gateway-model',
      instructions: 'Be brief.',
      max_output_tokens: 500,
      tools: [{ type: 'function', name: 'f', parameters: {} }],
      tool_choice: 'required',
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      reasoning: { effort: 'low', summary: 'auto' },
      text: { format: { type: 'text' }, verbosity: 'low' },
      truncation: 'auto',
      metadata: { team: 'a' },
      store: false,
      user: 'user-1',
      prompt_cache_key: 'key',
    };
    expect(encodeResponsesResponse(answer(), { echo, includeOpaqueReasoning: false }, testContext())).toMatchObject({
      instructions: 'Be brief.',
      max_output_tokens: 500,
      tools: echo.tools,
      tool_choice: 'required',
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      reasoning: { effort: 'low', summary: 'auto' },
      text: echo.text,
      truncation: 'auto',
      metadata: { team: 'a' },
      store: false,
      user: 'user-1',
      prompt_cache_key: 'key',
      model: 'claude-sim-1',
    });
  });

  it('encodes function and custom tool calls with their own item types and ids', () => {
    const output: CanonicalResponse['output'] = [
      { type: 'tool_call', id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}', kind: 'function' },
      { type: 'tool_call', id: 'toolu_2', name: 'run_sql', arguments: '{"input":"SELECT 1"}', kind: 'custom' },
    ];
    expect(encodeResponsesResponse(answer({ output, stopReason: 'tool_calls' }), plain, testContext()).output).toEqual([
      { id: 'fc_2', type: 'function_call', status: 'completed', arguments: '{"city":"Paris"}', call_id: 'toolu_1', name: 'get_weather' },
      { id: 'ctc_3', type: 'custom_tool_call', status: 'completed', call_id: 'toolu_2', input: 'SELECT 1', name: 'run_sql' },
    ]);
  });

  it.each([
    ['max_tokens', 'max_output_tokens'],
    ['content_filter', 'content_filter'],
  ] as const)('marks a %s stop incomplete with reason %s', (stopReason, reason) => {
    expect(encodeResponsesResponse(answer({ stopReason }), plain, testContext())).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason },
      completed_at: null,
    });
  });

  it.each(['end', 'tool_calls', 'stop_sequence', 'refusal', 'pause'] as const)('marks a %s stop completed', (stopReason) => {
    expect(encodeResponsesResponse(answer({ stopReason }), plain, testContext())).toMatchObject({ status: 'completed', incomplete_details: null });
  });

  it('writes 0 for usage figures the upstream did not report', () => {
    expect(encodeResponsesResponse(answer({ usage: { inputTokens: 4 } }), plain, testContext()).usage).toEqual({
      input_tokens: 4,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 4,
    });
  });

  describe('reasoning items', () => {
    const encodeThinking = (request: { echo: Record<string, unknown>; includeOpaqueReasoning: boolean }) =>
      (encodeResponsesResponse(answer({ output: [thinking] }), request, testContext()).output as Array<Record<string, unknown>>)[0];

    it('shows the summary only when the client asked for one, and no encrypted content unless included', () => {
      expect(encodeThinking(plain)).toEqual({ id: 'rs_2', type: 'reasoning', summary: [] });
      expect(encodeThinking({ echo: { reasoning: { effort: 'low', summary: 'auto' } }, includeOpaqueReasoning: false })).toEqual({
        id: 'rs_2',
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: 'Let me think.' }],
      });
    });

    it('seals the upstream signature, origin and text into encrypted_content when included', () => {
      const item = encodeThinking({ echo: {}, includeOpaqueReasoning: true });
      expect(openReasoning(String(item.encrypted_content))).toEqual({ origin, kind: 'signature', value: 'sig-1', text: 'Let me think.', itemId: undefined });
    });

    it('keeps a redacted block as an empty reasoning item with its sealed data', () => {
      const redacted = { type: 'reasoning' as const, text: '', opaque: { kind: 'redacted' as const, value: 'opaque-bytes' }, origin };
      const item = (
        encodeResponsesResponse(answer({ output: [redacted] }), { echo: { reasoning: { summary: 'auto' } }, includeOpaqueReasoning: true }, testContext())
          .output as Array<Record<string, unknown>>
      )[0];
      expect(item.summary).toEqual([]);
      expect(openReasoning(String(item.encrypted_content))).toMatchObject({ kind: 'redacted', value: 'opaque-bytes' });
    });
  });
});
