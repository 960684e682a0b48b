import Anthropic from '@anthropic-ai/sdk';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { Clock } from '../src/common/clock';
import type { UsageRecord } from '../src/metering/usage-record.entity';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';
import type { Failure } from './simulator/upstream-simulator';
import { until } from './support/until';
import { parseSse } from './support/sse';

/**
 * Upstream faults that upstream-lines.e2e-spec.ts leaves out: a body that
 * stalls, answers that are not what their status says (broken JSON, garbage in a stream, an
 * error body with HTTP 200) and huge answers, natively and translated, as the clients and the
 * usage records see them. docs/api.md "Forwarding rules" and the `timeout_ms` row of docs/configuration.md "upstreams[]"
 * decide what must happen; DESIGN.md section 7 says nothing is retried after the first byte.
 */

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';
const RESPONSES_PATH = '/v1/responses';
/** Tests move the gateway's clock past it instead of waiting. */
const COOLDOWN_MS = 60_000;
/** `timeout_ms` of line-quick: how long its body may stay silent. */
const QUICK_TIMEOUT_MS = 400;
const UPSTREAM_MODEL = 'vendor-chat-2025-01';

function faultsConfigYaml(simulator: string): string {
  const model = (id: string, interfaces: string, lines: string) => `
  - id: ${id}
    upstream_model: ${UPSTREAM_MODEL}
    interfaces: [${interfaces}]
    lines: [${lines}]
    prices: { input_tokens: 2.5, output_tokens: 10 }`;
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-quick
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
    timeout_ms: ${QUICK_TIMEOUT_MS}
models:${[
    model('chat-model', 'chat_completions', 'line-a'),
    model('pair-model', 'chat_completions, messages', 'line-a, line-b'),
    model('quick-model', 'chat_completions, responses, messages', 'line-quick'),
    model('quick-pair-model', 'chat_completions', 'line-quick, line-b'),
    model('quick-msg-only', 'messages', 'line-quick'),
    model('msg-pair-only', 'messages', 'line-a, line-b'),
    model('chat-only', 'chat_completions', 'line-a'),
  ].join('')}
owners:
  - id: team-a
    kind: project
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
`;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  requestId: string;
}

const userMessage = [{ role: 'user' as const, content: 'Tell me about faults' }];

function chatBody(model: string, stream = false): Record<string, unknown> {
  return { model, stream, messages: userMessage };
}

/** One chat-completions stream chunk on the wire, as the vendor frames it. */
function chatChunk(delta: Record<string, unknown>, finishReason: string | null = null): string {
  const chunk = {
    id: 'chatcmpl-faults',
    object: 'chat.completion.chunk',
    created: 1,
    model: UPSTREAM_MODEL,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function chatUsageChunk(prompt: number, completion: number): string {
  const chunk = {
    id: 'chatcmpl-faults',
    object: 'chat.completion.chunk',
    created: 1,
    model: UPSTREAM_MODEL,
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function chatCompletion(content: string, usage: { prompt: number; completion: number }): string {
  return JSON.stringify({
    id: 'chatcmpl-faults',
    object: 'chat.completion',
    created: 1,
    model: UPSTREAM_MODEL,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
  });
}

/** Cost in nano-units at the YAML's prices (2.5 and 10 per 1M tokens). */
function costOf(input: number, output: number): bigint {
  return BigInt(input) * 2_500n + BigInt(output) * 10_000n;
}

function raw(contentType: string, chunks: Iterable<string | Buffer>, status = 200): Failure {
  return { kind: 'raw', status, contentType, chunks };
}

const OPENAI_ERROR_IN_200 = JSON.stringify({ error: { message: 'The engine is currently overloaded.', type: 'server_error', param: null, code: null } });

describe('upstream faults', () => {
  let harness: GatewayHarness;
  let clockOffsetMs = 0;
  /** `X-Request-Id` of the SDKs' last answer, to find its usage record. */
  let lastRequestId = '';
  let openai: OpenAI;
  let anthropic: Anthropic;

  const capturingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    lastRequestId = response.headers.get('x-request-id') ?? '';
    return response;
  };

  beforeAll(async () => {
    harness = await GatewayHarness.start({
      configYaml: faultsConfigYaml,
      settings: { lines: { cooldownMs: COOLDOWN_MS, rateLimitCooldownMaxMs: 60_000, connections: 16, retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 0 } } },
    });
    const clock = harness.app.get(Clock);
    jest.spyOn(clock, 'now').mockImplementation(() => Date.now() + clockOffsetMs);
    openai = new OpenAI({ baseURL: `${harness.url}/v1`, apiKey: KEYS.all, maxRetries: 0, timeout: 20_000, fetch: capturingFetch });
    anthropic = new Anthropic({ baseURL: harness.url, apiKey: KEYS.all, maxRetries: 0, timeout: 20_000, fetch: capturingFetch });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  beforeEach(() => {
    harness.simulator.reset();
    lastRequestId = '';
    // Every test starts with every line warm: cooldowns of earlier tests are over.
    passCooldown();
  });

  function passCooldown(): void {
    clockOffsetMs += COOLDOWN_MS + 1_000;
  }

  async function post(path: string, body: unknown): Promise<Answer> {
    const response = await fetch(`${harness.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, requestId: response.headers.get('x-request-id') ?? '' };
  }

  /** The call's usage record, once the gateway has queued it (a stream's record follows its last byte). */
  async function recordOf(requestId: string): Promise<UsageRecord> {
    expect(requestId).not.toBe('');
    let record: UsageRecord | null = null;
    await until(async () => (record = await harness.usageRecord(requestId)) !== null, `the usage record of ${requestId}`);
    return record!;
  }

  describe('a body that stalls for timeout_ms', () => {
    it('ends a native chat stream with an in-stream error that the openai SDK raises, and records the timeout', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'stall-mid-stream', afterEvents: 2 });
      const received: unknown[] = [];

      const consume = async () => {
        const stream = await openai.chat.completions.create({ model: 'quick-model', stream: true, messages: userMessage });
        for await (const chunk of stream) received.push(chunk);
      };

      await expect(consume()).rejects.toBeInstanceOf(OpenAI.APIError);
      expect(received).toHaveLength(2);
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(lastRequestId)).toMatchObject({
        line: 'line-quick',
        interface: 'chat_completions',
        stream: true,
        status: 200,
        errorCode: 'upstream_timeout',
        usage: null,
        costNano: 0n,
      });
    });

    it('ends a native messages stream with an error event that the messages SDK raises, and bills the figures seen so far', async () => {
      harness.simulator.failNext(MESSAGES_PATH, { kind: 'stall-mid-stream', afterEvents: 3 });
      const types: string[] = [];

      const consume = async () => {
        const stream = await anthropic.messages.create({ model: 'quick-model', max_tokens: 64, stream: true, messages: userMessage });
        for await (const event of stream) types.push(event.type);
      };

      await expect(consume()).rejects.toBeInstanceOf(Anthropic.APIError);
      expect(types[0]).toBe('message_start');
      expect(types).not.toContain('message_stop');
      const record = await recordOf(lastRequestId);
      expect(record).toMatchObject({ line: 'line-quick', interface: 'messages', stream: true, status: 200, errorCode: 'upstream_timeout' });
      // message_start told the input tokens: they are what the upstream reported, so they are billed.
      expect(record.usage?.input_tokens).toBeGreaterThan(0);
      expect(record.costNano).toBe(costOf(record.usage!.input_tokens, record.usage?.output_tokens ?? 0));
    });

    it('ends a native responses stream with an error event that the openai SDK raises, and records the timeout', async () => {
      harness.simulator.failNext(RESPONSES_PATH, { kind: 'stall-mid-stream', afterEvents: 3 });
      const stream = openai.responses.stream({ model: 'quick-model', input: 'Tell me about faults' });
      const types: string[] = [];

      const failure = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().catch((error: unknown) => error);

      // The SDK raises the stream's `error` event itself, where it reads it.
      expect(failure).toMatchObject({ type: 'error', code: 'upstream_timeout', message: expect.any(String) });
      await expect(stream.finalResponse()).rejects.toMatchObject({ type: 'error', code: 'upstream_timeout', message: expect.any(String) });
      expect(types[0]).toBe('response.created');
      expect(types).not.toContain('response.completed');
      expect(await recordOf(lastRequestId)).toMatchObject({
        line: 'line-quick',
        interface: 'responses',
        stream: true,
        status: 200,
        errorCode: 'upstream_timeout',
      });
    });

    it('ends a translated responses stream (messages upstream) with an error event, and bills the figures seen so far', async () => {
      harness.simulator.failNext(MESSAGES_PATH, { kind: 'stall-mid-stream', afterEvents: 3 });
      const stream = openai.responses.stream({ model: 'quick-msg-only', input: 'Tell me about faults' });
      const types: string[] = [];

      const failure = await (async () => {
        for await (const event of stream) types.push(event.type);
      })().catch((error: unknown) => error);

      expect(failure).toMatchObject({ type: 'error', message: expect.any(String) });
      await expect(stream.finalResponse()).rejects.toMatchObject({ type: 'error', message: expect.any(String) });
      expect(types[0]).toBe('response.created');
      expect(types).not.toContain('response.completed');
      expect(harness.simulator.requests.map((request) => request.path)).toEqual([MESSAGES_PATH]);
      const record = await recordOf(lastRequestId);
      expect(record).toMatchObject({
        line: 'line-quick',
        interface: 'responses',
        translatedTo: 'messages',
        stream: true,
        status: 200,
        errorCode: 'upstream_timeout',
      });
      expect(record.usage?.input_tokens).toBeGreaterThan(0);
    });

    it('answers 504 upstream_timeout in the chat error shape when a JSON answer stalls halfway', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'stall-mid-stream', afterEvents: 0 });

      const answer = await post(CHAT_PATH, chatBody('quick-model'));

      expect(answer.status).toBe(504);
      expect(JSON.parse(answer.text)).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'upstream_timeout' } });
      expect(await recordOf(answer.requestId)).toMatchObject({ line: 'line-quick', stream: false, status: 504, errorCode: 'upstream_timeout', usage: null });
    });

    it('answers 504 upstream_timeout with a proper status when a stream stalls before its first event', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'stall-mid-stream', afterEvents: 0 });

      const answer = await post(CHAT_PATH, chatBody('quick-model', true));

      expect(answer.status).toBe(504);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(answer.text)).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'upstream_timeout' } });
      expect(await recordOf(answer.requestId)).toMatchObject({ line: 'line-quick', stream: true, status: 504, errorCode: 'upstream_timeout' });
    });
  });

  describe('translated streams that fail before their first event', () => {
    it('answers 504 upstream_timeout in the responses shape when the messages upstream stalls before any event', async () => {
      harness.simulator.failNext(MESSAGES_PATH, { kind: 'stall-mid-stream', afterEvents: 0 });

      const answer = await post(RESPONSES_PATH, { model: 'quick-msg-only', input: 'Tell me about faults', stream: true });

      expect(answer.status).toBe(504);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(answer.text)).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'upstream_timeout' } });
      expect(await recordOf(answer.requestId)).toMatchObject({
        line: 'line-quick',
        interface: 'responses',
        translatedTo: 'messages',
        stream: true,
        status: 504,
        errorCode: 'upstream_timeout',
      });
    });

    it('answers 502 upstream_failed in the messages shape when the chat upstream resets before any event, and the SDK raises it', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'reset-mid-stream', afterEvents: 0 });

      const failure = anthropic.messages.create({ model: 'chat-only', max_tokens: 64, stream: true, messages: userMessage });

      await expect(failure).rejects.toBeInstanceOf(Anthropic.InternalServerError);
      await expect(failure).rejects.toMatchObject({ status: 502, error: { type: 'error', error: { type: 'api_error', code: 'upstream_failed' } } });
      expect(await recordOf(lastRequestId)).toMatchObject({
        interface: 'messages',
        translatedTo: 'chat_completions',
        stream: true,
        status: 502,
        errorCode: 'upstream_failed',
      });
    });

    it('answers 502 upstream_failed when the upstream ends its stream without a byte', async () => {
      harness.simulator.failNext(MESSAGES_PATH, raw('text/event-stream', []));

      const answer = await post(RESPONSES_PATH, { model: 'msg-pair-only', input: 'Tell me about faults', stream: true });

      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_failed');
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'responses', stream: true, status: 502, errorCode: 'upstream_failed' });
    });
  });

  describe('cooldown and failover', () => {
    it('does not retry a stream that stalled after its first byte, but cools its line down so the next call moves on', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'stall-mid-stream', afterEvents: 2 });

      const stalled = await post(CHAT_PATH, chatBody('quick-pair-model', true));

      expect(stalled.status).toBe(200);
      const items = parseSse(stalled.text);
      expect(JSON.parse(items[items.length - 1].data)).toEqual({ error: expect.objectContaining({ code: 'upstream_timeout' }) });
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(stalled.requestId)).toMatchObject({ line: 'line-quick', errorCode: 'upstream_timeout' });

      const next = await post(CHAT_PATH, chatBody('quick-pair-model'));

      expect(next.status).toBe(200);
      expect(harness.simulator.requests).toHaveLength(2);
      expect(await recordOf(next.requestId)).toMatchObject({ line: 'line-b', status: 200, errorCode: null });

      passCooldown();
      const cooled = await post(CHAT_PATH, chatBody('quick-pair-model'));

      expect(cooled.status).toBe(200);
      expect(await recordOf(cooled.requestId)).toMatchObject({ line: 'line-quick', status: 200 });
    });

    it('moves a call whose first line never sends headers to the next line, and skips that line while it cools down', async () => {
      harness.simulator.failNext(CHAT_PATH, { kind: 'never-respond' });

      const moved = await post(CHAT_PATH, chatBody('quick-pair-model'));

      expect(moved.status).toBe(200);
      expect(JSON.parse(moved.text).choices[0].message.content).toContain('Tell me about faults');
      expect(harness.simulator.requests).toHaveLength(2);
      expect(await recordOf(moved.requestId)).toMatchObject({ line: 'line-b', status: 200 });

      const next = await post(CHAT_PATH, chatBody('quick-pair-model'));

      expect(next.status).toBe(200);
      expect(harness.simulator.requests).toHaveLength(3);
      expect(await recordOf(next.requestId)).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('passes a 200 with an error body through without failing over or cooling the line, and records the error', async () => {
      harness.simulator.failNext(CHAT_PATH, raw('application/json', [OPENAI_ERROR_IN_200]));

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(OPENAI_ERROR_IN_200);
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(answer.requestId)).toMatchObject({ line: 'line-a', status: 200, errorCode: 'upstream_error_in_answer', usage: null, costNano: 0n });

      const next = await post(CHAT_PATH, chatBody('pair-model'));

      expect(next.status).toBe(200);
      expect(await recordOf(next.requestId)).toMatchObject({ line: 'line-a', status: 200, errorCode: null });
    });
  });

  describe('answers that are not what their status says, on native calls', () => {
    it('passes a 200 whose body is not JSON through as the upstream sent it, and records it as unreadable', async () => {
      const broken = '{"id":"chatcmpl-faults","object":"chat.completion","choices":[{"message":';
      harness.simulator.failNext(CHAT_PATH, raw('application/json', [broken]));

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/json');
      expect(answer.text).toBe(broken);
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(answer.requestId)).toMatchObject({
        line: 'line-a',
        status: 200,
        errorCode: 'upstream_unreadable_answer',
        usage: null,
        costNano: 0n,
      });
    });

    it('passes a messages error body sent with HTTP 200 through unchanged, and records the error', async () => {
      const errorBody = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      harness.simulator.failNext(MESSAGES_PATH, raw('application/json', [errorBody]));

      const answer = await post(MESSAGES_PATH, { model: 'pair-model', max_tokens: 64, messages: userMessage });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(errorBody);
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'messages', line: 'line-a', status: 200, errorCode: 'upstream_error_in_answer' });
    });

    it('passes garbage lines and an event of broken JSON in a chat stream through unchanged, and still meters the usage chunk', async () => {
      const chunks = [
        chatChunk({ role: 'assistant', content: 'Hello' }),
        'this line is not SSE at all\n\n',
        'data: {"choices":[{"delta":{"content":\n\n',
        chatChunk({ content: ' world' }, 'stop'),
        chatUsageChunk(12, 2),
        'data: [DONE]\n\n',
      ];
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));

      const answer = await post(CHAT_PATH, { ...chatBody('pair-model', true), stream_options: { include_usage: true } });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(chunks.join(''));
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(answer.requestId)).toMatchObject({
        line: 'line-a',
        stream: true,
        status: 200,
        errorCode: null,
        usage: { input_tokens: 12, output_tokens: 2 },
        costNano: costOf(12, 2),
      });
    });
    it("passes a chat stream that carries the upstream's error chunk through, the openai SDK raises it, and the record names it", async () => {
      const error = { message: 'The engine is currently overloaded.', type: 'server_error', param: null, code: null };
      const chunks = [chatChunk({ role: 'assistant', content: 'Hello' }), chatUsageChunk(9, 1), `data: ${JSON.stringify({ error })}\n\n`];
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));

      const stream = await openai.chat.completions.create({ ...chatBody('pair-model', true), stream: true, stream_options: { include_usage: true } } as never);
      const seen: string[] = [];
      const reading = (async () => {
        for await (const chunk of stream as unknown as AsyncIterable<{ choices: Array<{ delta: { content?: string } }> }>)
          seen.push(chunk.choices[0]?.delta.content ?? '');
      })();

      await expect(reading).rejects.toMatchObject({ message: expect.stringContaining('overloaded') });
      expect(seen).toContain('Hello');
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(lastRequestId)).toMatchObject({
        line: 'line-a',
        stream: true,
        status: 200,
        errorCode: 'upstream_error_in_stream',
        costNano: costOf(9, 1),
      });
    });

    it("passes a messages stream that carries the upstream's error event through unchanged, and the record names it", async () => {
      const chunks = [
        `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_faults', type: 'message', role: 'assistant', model: UPSTREAM_MODEL, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 7, output_tokens: 1 } } })}\n\n`,
        `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`,
      ];
      harness.simulator.failNext(MESSAGES_PATH, raw('text/event-stream', chunks));

      const answer = await post(MESSAGES_PATH, { model: 'pair-model', max_tokens: 64, stream: true, messages: userMessage });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(chunks.join(''));
      expect(await recordOf(answer.requestId)).toMatchObject({
        interface: 'messages',
        stream: true,
        status: 200,
        errorCode: 'upstream_error_in_stream',
        costNano: costOf(7, 1),
      });
    });

    it('completes a translated stream whose last event comes with the end of the upstream body, and keeps the connection', async () => {
      const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      const chunks = [
        event('message_start', {
          message: {
            id: 'msg_faults',
            type: 'message',
            role: 'assistant',
            model: UPSTREAM_MODEL,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 11, output_tokens: 1 },
          },
        }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
          event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }),
        // The final events and the end of the body in one write: the gateway reads them together.
        event('content_block_stop', { index: 0 }) +
          event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }) +
          event('message_stop', {}),
      ];
      harness.simulator.failNext(MESSAGES_PATH, raw('text/event-stream', chunks));
      const stream = openai.responses.stream({ model: 'quick-msg-only', input: 'Tell me about faults' });
      const types: string[] = [];

      for await (const item of stream) types.push(item.type);

      expect((await stream.finalResponse()).output_text).toBe('Hello');
      expect(types[types.length - 1]).toBe('response.completed');
      expect(await recordOf(lastRequestId)).toMatchObject({
        line: 'line-quick',
        interface: 'responses',
        translatedTo: 'messages',
        status: 200,
        errorCode: null,
        usage: { input_tokens: 11, output_tokens: 3 },
      });
      // The connection served this answer to its end: the next call on the line goes out on it.
      const next = await post(CHAT_PATH, chatBody('quick-model'));
      expect(next.status).toBe(200);
    });

    /** A complete messages stream for a translated call, as separate writes. */
    function completeMessagesStream(): string[] {
      const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      return [
        event('message_start', {
          message: {
            id: 'msg_rest',
            type: 'message',
            role: 'assistant',
            model: UPSTREAM_MODEL,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 11, output_tokens: 1 },
          },
        }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
          event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello' } }),
        event('content_block_stop', { index: 0 }) +
          event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }) +
          event('message_stop', {}),
      ];
    }

    it('gives up an upstream that goes on for over 1 MiB after a translated stream is complete, and still completes and bills the stream', async () => {
      const padding = `: ${'x'.repeat(64 * 1024 - 4)}\n\n`;
      const total = 256; // 16 MiB after the final event
      let pulled = 0;
      function* body(): Generator<string> {
        yield* completeMessagesStream();
        for (; pulled < total; pulled++) yield padding;
      }
      harness.simulator.failNext(MESSAGES_PATH, raw('text/event-stream', body()));
      const stream = openai.responses.stream({ model: 'quick-msg-only', input: 'Tell me about faults' });
      const types: string[] = [];

      for await (const item of stream) types.push(item.type);

      expect((await stream.finalResponse()).output_text).toBe('Hello');
      expect(types[types.length - 1]).toBe('response.completed');
      expect(await recordOf(lastRequestId)).toMatchObject({
        interface: 'responses',
        translatedTo: 'messages',
        status: 200,
        errorCode: null,
        usage: { input_tokens: 11, output_tokens: 3 },
      });
      // The gateway closed the connection after about 1 MiB of the rest: the simulator stopped writing long before its end.
      expect(pulled).toBeLessThan(total / 2);
    });

    it('gives up an upstream that keeps the connection open after a translated stream is complete, once its patience (5 s) is over', async () => {
      // Every event of the reply, then neither more bytes nor the end of the body, on a line whose
      // timeout is longer than the patience (line-quick's would end the wait first).
      harness.simulator.failNext(MESSAGES_PATH, {
        kind: 'raw',
        status: 200,
        contentType: 'text/event-stream',
        chunks: completeMessagesStream(),
        keepOpen: true,
      });
      const started = Date.now();
      const stream = openai.responses.stream({ model: 'msg-pair-only', input: 'Tell me about faults' });
      const types: string[] = [];

      for await (const item of stream) types.push(item.type);

      expect(types[types.length - 1]).toBe('response.completed');
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
      expect((await stream.finalResponse()).output_text).toBe('Hello');
      expect(await recordOf(lastRequestId)).toMatchObject({ line: 'line-a', interface: 'responses', translatedTo: 'messages', status: 200, errorCode: null });
    }, 20_000);

    it('records a responses stream that ends in response.failed as an upstream error in the stream', async () => {
      const failed = {
        type: 'response.failed',
        sequence_number: 1,
        response: { id: 'resp_faults', object: 'response', status: 'failed', error: { code: 'server_error', message: 'boom' }, output: [], usage: null },
      };
      const chunks = [`event: response.failed\ndata: ${JSON.stringify(failed)}\n\n`];
      harness.simulator.failNext(RESPONSES_PATH, raw('text/event-stream', chunks));

      const answer = await post(RESPONSES_PATH, { model: 'quick-model', input: 'Tell me about faults', stream: true });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(chunks.join(''));
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'responses', stream: true, status: 200, errorCode: 'upstream_error_in_stream' });
    });
  });

  describe('answers that are not what their status says, on translated calls', () => {
    it('answers a responses call whose messages upstream sent broken JSON with 502 upstream_failed in the responses shape, without failing over', async () => {
      harness.simulator.failNext(MESSAGES_PATH, raw('application/json', ['{"type":"message","content":[']));

      const failure = openai.responses.create({ model: 'msg-pair-only', input: 'Tell me about faults' });

      await expect(failure).rejects.toBeInstanceOf(OpenAI.InternalServerError);
      await expect(failure).rejects.toMatchObject({ status: 502, error: { code: 'upstream_failed', type: expect.any(String), message: expect.any(String) } });
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(lastRequestId)).toMatchObject({
        interface: 'responses',
        translatedTo: 'messages',
        line: 'line-a',
        status: 502,
        errorCode: 'upstream_failed',
        usage: null,
      });
    });

    it('answers a messages call whose chat upstream sent an error body with HTTP 200 with 502 in the messages shape', async () => {
      harness.simulator.failNext(CHAT_PATH, raw('application/json', [OPENAI_ERROR_IN_200]));

      const failure = anthropic.messages.create({ model: 'chat-only', max_tokens: 64, messages: userMessage });

      await expect(failure).rejects.toBeInstanceOf(Anthropic.InternalServerError);
      await expect(failure).rejects.toMatchObject({ status: 502, error: { type: 'error', error: { type: 'api_error', code: 'upstream_failed' } } });
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordOf(lastRequestId)).toMatchObject({
        interface: 'messages',
        translatedTo: 'chat_completions',
        status: 502,
        errorCode: 'upstream_failed',
      });
    });

    it('ends a translated messages stream at a chat chunk of broken JSON with an error event the messages SDK raises', async () => {
      const chunks = [
        chatChunk({ role: 'assistant', content: 'Hello' }),
        'data: {"choices":[{"delta":{"content":\n\n',
        chatChunk({ content: ' world' }, 'stop'),
        'data: [DONE]\n\n',
      ];
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));
      const types: string[] = [];

      const consume = async () => {
        const stream = await anthropic.messages.create({ model: 'chat-only', max_tokens: 64, stream: true, messages: userMessage });
        for await (const event of stream) types.push(event.type);
      };

      await expect(consume()).rejects.toBeInstanceOf(Anthropic.APIError);
      expect(types[0]).toBe('message_start');
      expect(types).toContain('content_block_delta');
      expect(types).not.toContain('message_stop');
      expect(await recordOf(lastRequestId)).toMatchObject({
        interface: 'messages',
        translatedTo: 'chat_completions',
        stream: true,
        status: 200,
        errorCode: 'upstream_stream_error',
      });
    });

    it('skips garbage lines and comments in a chat stream that is translated to messages, and completes the answer', async () => {
      const chunks = [
        ': keep-alive comment\n\n',
        chatChunk({ role: 'assistant', content: 'Hello' }),
        'this line is not SSE at all\n\n',
        chatChunk({ content: ' world' }, 'stop'),
        chatUsageChunk(9, 2),
        'data: [DONE]\n\n',
      ];
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));

      const message = await anthropic.messages.stream({ model: 'chat-only', max_tokens: 64, messages: userMessage }).finalMessage();

      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello world' })]);
      expect(message.stop_reason).toBe('end_turn');
      expect(await recordOf(lastRequestId)).toMatchObject({
        translatedTo: 'chat_completions',
        status: 200,
        errorCode: null,
        usage: { input_tokens: 9, output_tokens: 2 },
        costNano: costOf(9, 2),
      });
    });
  });

  describe('huge answers', () => {
    const MIB = 1 << 20;

    it('relays a 50 MiB chat JSON answer completely and bills it', async () => {
      const content = 'abcdefgh'.repeat((50 * MIB) / 8);
      const body = Buffer.from(chatCompletion(content, { prompt: 7, completion: 13_000_000 }));
      const pieces: Buffer[] = [];
      for (let start = 0; start < body.length; start += MIB) pieces.push(body.subarray(start, start + MIB));
      harness.simulator.failNext(CHAT_PATH, raw('application/json', pieces));

      const completion = await openai.chat.completions.create({ model: 'chat-model', messages: userMessage });

      expect(completion.choices[0].message.content).toHaveLength(content.length);
      expect(completion.choices[0].message.content === content).toBe(true);
      expect(await recordOf(lastRequestId)).toMatchObject({
        status: 200,
        errorCode: null,
        usage: { input_tokens: 7, output_tokens: 13_000_000 },
        costNano: costOf(7, 13_000_000),
      });
    });

    it('relays a 50 MiB chat stream event by event to the openai SDK and bills it from its usage chunk', async () => {
      const events = 5_000;
      const piece = 'x'.repeat(10 * 1024);
      const chunks = [chatChunk({ role: 'assistant', content: '' })];
      for (let index = 0; index < events; index++) chunks.push(chatChunk({ content: piece }));
      chunks.push(chatChunk({}, 'stop'), chatUsageChunk(11, events), 'data: [DONE]\n\n');
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));
      let received = 0;
      let deltas = 0;

      const stream = await openai.chat.completions.create({ model: 'chat-model', stream: true, messages: userMessage });
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta.content;
        if (content) {
          received += content.length;
          deltas += 1;
        }
        expect(chunk.usage ?? null).toBeNull();
      }

      expect(deltas).toBe(events);
      expect(received).toBe(events * piece.length);
      expect(await recordOf(lastRequestId)).toMatchObject({
        stream: true,
        status: 200,
        errorCode: null,
        usage: { input_tokens: 11, output_tokens: events },
        costNano: costOf(11, events),
      });
    });

    it('reads a native stream from the upstream only as fast as the client takes it (backpressure), then relays it whole', async () => {
      // 320 MiB: loopback sockets here may buffer up to 32 MiB each way (tcp_rmem), so a
      // backpressured stream stops far short of half of it, and a gateway that read on regardless would take it all.
      const events = 5_000;
      const piece = 'y'.repeat(64 * 1024);
      let produced = 0;
      let relayedBytes = 0;
      // The simulator writes each chunk once the previous one reached its socket; counting what it took shows how far it got.
      function* chunks(): Generator<string> {
        const relayed = (chunk: string) => ((relayedBytes += Buffer.byteLength(chunk)), chunk);
        yield relayed(chatChunk({ role: 'assistant', content: '' }));
        for (let index = 0; index < events; index++) {
          produced += 1;
          yield relayed(chatChunk({ content: piece }));
        }
        yield relayed(chatChunk({}, 'stop'));
        // The client did not ask for usage: the gateway reads this chunk and keeps it back.
        yield chatUsageChunk(3, events);
        yield relayed('data: [DONE]\n\n');
      }
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks()));
      const url = new URL(`${harness.url}${CHAT_PATH}`);
      const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const request = http.request(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
          },
          resolve,
        );
        request.on('error', reject);
        request.end(JSON.stringify(chatBody('chat-model', true)));
      });
      response.pause();
      // The client reads nothing: once every buffer on the way is full, the upstream stops too.
      let seen = -1;
      while (produced !== seen) {
        seen = produced;
        await sleep(300);
      }
      const stalledAt = produced;
      let received = 0;
      let tail = Buffer.alloc(0);
      response.on('data', (part: Buffer) => {
        received += part.length;
        tail = Buffer.concat([tail, part]).subarray(-64);
      });
      const ended = new Promise((resolve) => response.on('end', resolve));
      response.resume();
      await ended;

      expect(stalledAt).toBeLessThan(events / 2);
      expect(received).toBe(relayedBytes);
      expect(tail.toString('utf8').endsWith('data: [DONE]\n\n')).toBe(true);
      expect(await recordOf(response.headers['x-request-id'] as string)).toMatchObject({
        stream: true,
        status: 200,
        errorCode: null,
        usage: { input_tokens: 3, output_tokens: events },
      });
    });

    it('translates a long chat stream to messages events completely and bills it', async () => {
      const events = 2_000;
      const chunks = [chatChunk({ role: 'assistant', content: '' })];
      for (let index = 0; index < events; index++) chunks.push(chatChunk({ content: `${index % 10}`.repeat(1024) }));
      chunks.push(chatChunk({}, 'stop'), chatUsageChunk(5, events), 'data: [DONE]\n\n');
      harness.simulator.failNext(CHAT_PATH, raw('text/event-stream', chunks));

      const message = await anthropic.messages.stream({ model: 'chat-only', max_tokens: 64_000, messages: userMessage }).finalMessage();

      const text = message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
      expect(text).toHaveLength(events * 1024);
      expect(text.startsWith('0'.repeat(1024) + '1'.repeat(1024))).toBe(true);
      expect(message.stop_reason).toBe('end_turn');
      expect(await recordOf(lastRequestId)).toMatchObject({
        translatedTo: 'chat_completions',
        status: 200,
        errorCode: null,
        usage: { input_tokens: 5, output_tokens: events },
        costNano: costOf(5, events),
      });
    });
  });
});
