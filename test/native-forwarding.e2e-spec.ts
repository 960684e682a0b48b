import { GatewayHarness } from './support/gateway-harness';
import { KEYS, VENDOR_KEY } from './support/test-config';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * Native forwarding (SPEC.md General forwarding rules 1-2, Native forwarding 1-5): only the
 * top-level `model` changes on the way up, streaming chat is metered through a usage option
 * the client only sees when it asked for it, and headers pass a short allow-list both ways.
 */

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';
const COUNT_TOKENS_PATH = '/v1/messages/count_tokens';
const CHAT_UPSTREAM_MODEL = 'vendor-chat-2025-01';
const DEFAULT_MESSAGES_VERSION = '2023-06-01';

/** Headers any HTTP client adds for the connection itself; not part of the forwarding policy. */
const TRANSPORT_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  requestId: string;
}

/**
 * A body written the way no serializer would write it: odd spacing and line breaks, `model`
 * in the middle, escaped and raw non-ASCII text, a number with a trailing zero, a nested
 * `model` that must stay, and fields no upstream knows.
 */
function unusualBody(modelText: string, payload: string): string {
  return (
    `{\n\t${payload} ,  "temperature":0.70 ,"model"   :  ${modelText},\r\n` +
    '  "x_vendor_extension": {"model": "chat-model", "deep": [1, 2.50, true, null, {"\\u0041": "\\/ caf\u00e9"}]},' +
    '"metadata" : { }\n}'
  );
}

const USER_TEXT = '"caf\\u00e9 \\ud83d\\ude00 na\u00efve \\"quoted\\""';

const FORWARDED_ENTRIES = [
  { path: CHAT_PATH, model: 'chat-model', upstreamModel: CHAT_UPSTREAM_MODEL, payload: `"messages" :[ {"content":${USER_TEXT},"role":"user"} ]` },
  { path: '/v1/responses', model: 'chat-model', upstreamModel: CHAT_UPSTREAM_MODEL, payload: `"input" : [ {"role":"user","content":${USER_TEXT}} ]` },
  {
    path: MESSAGES_PATH,
    model: 'messages-model',
    upstreamModel: 'vendor-messages-2025-02',
    payload: `"max_tokens":64,"messages":[{"role":"user","content":${USER_TEXT}}]`,
  },
  {
    path: COUNT_TOKENS_PATH,
    model: 'messages-model',
    upstreamModel: 'vendor-messages-2025-02',
    payload: `"messages":[{"role":"user","content":${USER_TEXT}}]`,
  },
  { path: '/v1/embeddings', model: 'embed-model', upstreamModel: 'vendor-embed-3', payload: `"input" : [${USER_TEXT}, "second"]` },
];

function chatBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'chat-model', messages: [{ role: 'user', content: 'Count the streamed words' }], ...extra };
}

function messagesBody(): Record<string, unknown> {
  return { model: 'messages-model', max_tokens: 64, messages: [{ role: 'user', content: 'Hello headers' }] };
}

/** The `data:` payloads of an SSE text, in order. */
function sseData(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join(''),
    )
    .filter((data) => data !== '');
}

function streamedText(text: string): string {
  return sseData(text)
    .filter((data) => data !== '[DONE]')
    .map((data) => JSON.parse(data).choices[0]?.delta?.content ?? '')
    .join('');
}

function usageChunks(text: string): Array<Record<string, unknown>> {
  return sseData(text)
    .filter((data) => data !== '[DONE]')
    .map((data) => JSON.parse(data))
    .filter((chunk) => Array.isArray(chunk.choices) && chunk.choices.length === 0);
}

/** Header names the upstream received, without the transport ones. */
function forwardedHeaderNames(request: RecordedRequest): string[] {
  return Object.keys(request.headers)
    .filter((name) => !TRANSPORT_HEADERS.has(name))
    .sort();
}

describe('native forwarding', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  async function post(path: string, body: string | Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, requestId: response.headers.get('x-request-id') ?? '' };
  }

  function onlyUpstreamRequest(): RecordedRequest {
    expect(gateway.simulator.requests).toHaveLength(1);
    return gateway.simulator.requests[0];
  }

  describe('only the model changes', () => {
    it.each(FORWARDED_ENTRIES)('sends the client bytes of $path upstream with only the model value swapped', async (entry) => {
      const clientBody = unusualBody(JSON.stringify(entry.model), entry.payload);

      const answer = await post(entry.path, clientBody);

      expect(answer.status).toBe(200);
      const expected = Buffer.from(unusualBody(JSON.stringify(entry.upstreamModel), entry.payload));
      expect(onlyUpstreamRequest().body).toEqual(expected);
    });

    it('swaps a model value written with unicode escapes and keeps every other byte', async () => {
      const payload = FORWARDED_ENTRIES[0].payload;

      const answer = await post(CHAT_PATH, unusualBody('"chat\\u002dmod\\u0065l"', payload));

      expect(answer.status).toBe(200);
      expect(onlyUpstreamRequest().body).toEqual(Buffer.from(unusualBody(`"${CHAT_UPSTREAM_MODEL}"`, payload)));
    });

    it('leaves a streaming chat body that already asks for usage byte for byte as sent, model aside', async () => {
      const clientBody = '{"stream" : true,"stream_options":{ "include_usage" : true },"model":"chat-model","messages":[{"role":"user","content":"hi"}]}';

      const answer = await post(CHAT_PATH, clientBody);

      expect(answer.status).toBe(200);
      expect(onlyUpstreamRequest().body).toEqual(Buffer.from(clientBody.replace('"chat-model"', `"${CHAT_UPSTREAM_MODEL}"`)));
    });

    it('adds no stream_options to a chat request that does not stream', async () => {
      const clientBody = '{"stream": false, "model":"chat-model","messages":[{"role":"user","content":"hi"}]}';

      const answer = await post(CHAT_PATH, clientBody);

      expect(answer.status).toBe(200);
      expect(onlyUpstreamRequest().body).toEqual(Buffer.from(clientBody.replace('"chat-model"', `"${CHAT_UPSTREAM_MODEL}"`)));
    });

    it('sends a large body (sent upstream in pieces, not joined) byte for byte, model swapped and usage options added', async () => {
      const picture = 'A'.repeat(3 * 1024 * 1024);
      const clientBody = `{"model":"chat-model","stream":true,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,${picture}"}}]}]}`;

      const answer = await post(CHAT_PATH, clientBody);

      expect(answer.status).toBe(200);
      const expected = `${clientBody.slice(0, -1).replace('"chat-model"', `"${CHAT_UPSTREAM_MODEL}"`)},"stream_options":{"include_usage":true}}`;
      const received = onlyUpstreamRequest();
      expect(received.body.equals(Buffer.from(expected))).toBe(true);
      expect(received.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
    });

    it('reads a large chunked body that announces no length and forwards it whole', async () => {
      const clientBody = JSON.stringify(chatBody({ padding: 'x'.repeat(2 * 1024 * 1024) }));
      const pieces = [clientBody.slice(0, 1000), clientBody.slice(1000, 1_500_000), clientBody.slice(1_500_000)];
      const response = await fetch(`${gateway.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          start(controller) {
            for (const piece of pieces) controller.enqueue(new TextEncoder().encode(piece));
            controller.close();
          },
        }),
        duplex: 'half',
        signal: AbortSignal.timeout(10_000),
      } as RequestInit);
      await response.text();

      expect(response.status).toBe(200);
      expect(response.headers.get('x-request-id')).toBeTruthy();
      expect(onlyUpstreamRequest().body.equals(Buffer.from(clientBody.replace('"chat-model"', `"${CHAT_UPSTREAM_MODEL}"`)))).toBe(true);
    });
  });

  describe('usage statistics of streaming chat', () => {
    it('asks the upstream for include_usage when the streaming client did not', async () => {
      const clientBody = chatBody({ stream: true });

      await post(CHAT_PATH, clientBody);

      expect(onlyUpstreamRequest().json).toEqual({ ...clientBody, model: CHAT_UPSTREAM_MODEL, stream_options: { include_usage: true } });
    });

    it('merges include_usage into an existing stream_options object and keeps its other keys', async () => {
      const clientBody = chatBody({ stream: true, stream_options: { include_obfuscation: false } });

      const answer = await post(CHAT_PATH, clientBody);

      expect(onlyUpstreamRequest().json).toEqual({
        ...clientBody,
        model: CHAT_UPSTREAM_MODEL,
        stream_options: { include_obfuscation: false, include_usage: true },
      });
      const chunks = sseData(answer.text).filter((data) => data !== '[DONE]');
      expect(chunks.length).toBeGreaterThan(0);
      expect(chunks.every((data) => !('obfuscation' in JSON.parse(data)))).toBe(true);
    });

    it('switches include_usage on upstream when the client set it to false, and still hides the usage chunk', async () => {
      const answer = await post(CHAT_PATH, chatBody({ stream: true, stream_options: { include_usage: false } }));

      expect((onlyUpstreamRequest().json as Record<string, unknown>).stream_options).toEqual({ include_usage: true });
      expect(usageChunks(answer.text)).toEqual([]);
    });

    it('never shows the usage chunk to a client that did not ask for it, and ends with [DONE]', async () => {
      const answer = await post(CHAT_PATH, chatBody({ stream: true }));

      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(answer.headers.get('cache-control')).toBe('no-cache');
      expect(answer.text).not.toContain('"choices":[]');
      expect(sseData(answer.text).at(-1)).toBe('[DONE]');
      expect(streamedText(answer.text)).toBe(`Hello from ${CHAT_UPSTREAM_MODEL}: Count the streamed words`);
    });

    it('returns the usage chunk to a client that asked for it, before [DONE]', async () => {
      const answer = await post(CHAT_PATH, chatBody({ stream: true, stream_options: { include_usage: true } }));

      const data = sseData(answer.text);
      expect(data.at(-1)).toBe('[DONE]');
      expect(data.filter((item) => item === '[DONE]')).toHaveLength(1);
      expect(usageChunks(answer.text)).toHaveLength(1);
      expect(JSON.parse(data.at(-2) as string).choices).toEqual([]);
    });

    it('meters a stream with the upstream usage whether or not the client asked for the usage chunk', async () => {
      const asked = await post(CHAT_PATH, chatBody({ stream: true, stream_options: { include_usage: true } }));
      const silent = await post(CHAT_PATH, chatBody({ stream: true }));
      const reported = usageChunks(asked.text)[0].usage as Record<string, number>;
      const expected = { input_tokens: reported.prompt_tokens, output_tokens: reported.completion_tokens };

      for (const answer of [asked, silent]) {
        const record = await gateway.usageRecord(answer.requestId);
        expect(record).toMatchObject({ status: 200, stream: true, interface: 'chat_completions', usage: expect.objectContaining(expected) });
        expect(record?.costNano).toBeGreaterThan(0n);
      }
      expect(reported.prompt_tokens).toBeGreaterThan(0);
      expect(reported.completion_tokens).toBeGreaterThan(0);
    });
  });

  describe('request headers', () => {
    const clientHeaders = {
      accept: 'application/json',
      'user-agent': 'my-app/1.0',
      'openai-beta': 'assistants=v2',
      'chat-beta': 'chat-feature-1',
      cookie: 'session=client-session',
      'x-custom': 'custom-value',
      'x-forwarded-for': '203.0.113.7',
      'x-client-request-id': 'client-42',
      'x-stainless-os': 'Linux',
      origin: 'https://example.com',
    };

    it('forwards only Content-Type, Accept, User-Agent and the beta headers of a chat call, plus the line credential', async () => {
      await post(CHAT_PATH, chatBody(), clientHeaders);

      const upstream = onlyUpstreamRequest();
      expect(forwardedHeaderNames(upstream)).toEqual(['accept', 'authorization', 'chat-beta', 'content-type', 'openai-beta', 'user-agent']);
      expect(upstream.headers).toMatchObject({
        accept: 'application/json',
        'user-agent': 'my-app/1.0',
        'openai-beta': 'assistants=v2',
        'chat-beta': 'chat-feature-1',
        'content-type': 'application/json',
      });
    });

    it('forwards the messages version and beta headers unchanged, under the names they arrived with', async () => {
      await post(MESSAGES_PATH, messagesBody(), {
        ...clientHeaders,
        'anthropic-version': '2024-10-22',
        'anthropic-beta': 'tools-2024-04-04',
        'messages-beta': 'messages-feature-1',
      });

      const upstream = onlyUpstreamRequest();
      expect(forwardedHeaderNames(upstream)).toEqual([
        'accept',
        'anthropic-beta',
        'anthropic-version',
        'chat-beta',
        'content-type',
        'messages-beta',
        'openai-beta',
        'user-agent',
        'x-api-key',
      ]);
      expect(upstream.headers).toMatchObject({
        'anthropic-version': '2024-10-22',
        'anthropic-beta': 'tools-2024-04-04',
        'messages-beta': 'messages-feature-1',
      });
    });

    it('sends Messages-Version 2023-06-01 upstream on /v1/messages when the client sent none', async () => {
      const answer = await post(MESSAGES_PATH, messagesBody());

      expect(answer.status).toBe(200);
      expect(onlyUpstreamRequest().headers['anthropic-version']).toBe(DEFAULT_MESSAGES_VERSION);
    });

    it('forwards a Messages-Version sent under its neutral name unchanged and adds no default', async () => {
      const answer = await post(MESSAGES_PATH, messagesBody(), { 'messages-version': '2024-01-01' });

      expect(answer.status).toBe(200);
      const headers = onlyUpstreamRequest().headers;
      expect(headers['messages-version']).toBe('2024-01-01');
      expect(headers['anthropic-version']).toBeUndefined();
    });

    it('sends the line key as Authorization Bearer on chat-completions, responses and embeddings', async () => {
      await post(CHAT_PATH, chatBody());
      await post('/v1/responses', { model: 'chat-model', input: 'hi' });
      await post('/v1/embeddings', { model: 'embed-model', input: 'hi' });

      expect(gateway.simulator.requests).toHaveLength(3);
      for (const upstream of gateway.simulator.requests) {
        expect(upstream.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
        expect(upstream.headers['x-api-key']).toBeUndefined();
      }
    });

    it('sends the line key as x-api-key on messages and count_tokens, without an Authorization header', async () => {
      await post(MESSAGES_PATH, messagesBody());
      await post(COUNT_TOKENS_PATH, { model: 'messages-model', messages: [{ role: 'user', content: 'hi' }] });

      expect(gateway.simulator.requests).toHaveLength(2);
      for (const upstream of gateway.simulator.requests) {
        expect(upstream.headers['x-api-key']).toBe(VENDOR_KEY);
        expect(upstream.headers.authorization).toBeUndefined();
      }
    });

    it('never lets the client gateway key reach the upstream, in any header or in the body', async () => {
      await post(CHAT_PATH, chatBody());
      await post(MESSAGES_PATH, messagesBody());
      await post(MESSAGES_PATH, messagesBody(), { authorization: '', 'x-api-key': KEYS.all });
      await post(`${CHAT_PATH}?api_key=${KEYS.all}`, chatBody(), { 'x-api-key': KEYS.all });

      expect(gateway.simulator.requests).toHaveLength(4);
      for (const upstream of gateway.simulator.requests) {
        expect(JSON.stringify(upstream.headers)).not.toContain(KEYS.all);
        expect(upstream.body.toString('utf8')).not.toContain(KEYS.all);
        expect(upstream.path).not.toContain(KEYS.all);
      }
    });
  });

  describe('response headers', () => {
    const upstreamError = { error: { message: "Invalid value for 'temperature'.", type: 'invalid_request_error', param: 'temperature', code: null } };
    const retryHeaders = {
      'retry-after': '7',
      'retry-after-ms': '7000',
      'x-should-retry': 'false',
      'anthropic-ratelimit-unified-status': 'allowed',
      'anthropic-ratelimit-unified-reset': '1767225600',
      'messages-ratelimit-unified-remaining': '42',
    };
    const privateHeaders = { 'x-upstream-secret': 'upstream-internal-value', 'set-cookie': 'upstream-session=abc', 'x-request-id': 'req_upstream_own_id' };

    async function postFailingChat(): Promise<Answer> {
      gateway.simulator.failNext(CHAT_PATH, { status: 400, body: upstreamError, headers: { ...retryHeaders, ...privateHeaders } });
      return post(CHAT_PATH, chatBody({ temperature: 9 }));
    }

    it('passes an upstream 400 through with its status and its body unchanged', async () => {
      const answer = await postFailingChat();

      expect(answer.status).toBe(400);
      expect(answer.text).toBe(JSON.stringify(upstreamError));
      expect(onlyUpstreamRequest().path).toBe(CHAT_PATH);
    });

    it('returns Retry-After, Retry-After-Ms, X-Should-Retry and the ratelimit-unified headers of the upstream', async () => {
      const answer = await postFailingChat();

      for (const [name, value] of Object.entries(retryHeaders)) expect(answer.headers.get(name)).toBe(value);
    });

    it('does not return other upstream headers such as x-upstream-secret, set-cookie or the upstream x-request-id', async () => {
      const answer = await postFailingChat();

      expect(answer.headers.get('x-upstream-secret')).toBeNull();
      expect(answer.headers.get('set-cookie')).toBeNull();
      expect(answer.requestId).not.toBe('req_upstream_own_id');
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: 400 });
    });

    it("answers request-id on a messages answer with the gateway's request id, never the upstream's own", async () => {
      const answer = await post(MESSAGES_PATH, messagesBody());

      expect(answer.status).toBe(200);
      expect(answer.headers.get('request-id')).toBe(answer.requestId);
      expect(answer.requestId).not.toMatch(/^req_/);
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: 200, interface: 'messages' });
    });
  });

  describe('count_tokens', () => {
    const clientBody = '{ "messages": [{"role":"user","content":"How many tokens is this?"}],\n "model": "messages-model", "system": "be brief" }';

    it('forwards count_tokens with only the model changed and returns the upstream answer unchanged', async () => {
      const answer = await post(COUNT_TOKENS_PATH, clientBody);

      expect(answer.status).toBe(200);
      const upstream = onlyUpstreamRequest();
      expect(upstream.path).toBe(COUNT_TOKENS_PATH);
      expect(upstream.body).toEqual(Buffer.from(clientBody.replace('"messages-model"', '"vendor-messages-2025-02"')));
      expect(JSON.parse(answer.text)).toEqual({ input_tokens: expect.any(Number) });
      expect(JSON.parse(answer.text).input_tokens).toBeGreaterThan(0);
    });

    it('is never translated: a model without a native messages interface gets 400 and nothing is forwarded', async () => {
      const answer = await post(COUNT_TOKENS_PATH, clientBody.replace('"messages-model"', '"chat-model"'));

      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual({ type: 'error', error: { type: expect.any(String), message: expect.any(String), code: null } });
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await gateway.usageRecord(answer.requestId)).toBeNull();
    });

    it('records count_tokens at cost 0', async () => {
      const answer = await post(COUNT_TOKENS_PATH, clientBody);

      const record = await gateway.usageRecord(answer.requestId);
      expect(record).toMatchObject({ status: 200, interface: 'count_tokens', model: 'messages-model' });
      expect(record?.costNano).toBe(0n);
    });
  });
});
