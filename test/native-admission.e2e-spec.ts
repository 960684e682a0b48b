import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';

/**
 * What the gateway decides before it forwards anything (SPEC.md General forwarding rules 3-6,
 * Errors, Limits): rejections with their error shapes and no upstream call and no record, the
 * `X-Request-Id` of every response, and when `X-Client-Request-Id` is kept.
 */

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';
const BODY_LIMIT_BYTES = 32 * 1024 * 1024;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  requestId: string;
}

interface Rejection {
  what: string;
  body: string;
  contentType?: string;
}

const HELLO = '[{"role":"user","content":"hi"}]';

/** Bodies every JSON entry point refuses with 400; `{model}` stands for a model of the entry. */
const MALFORMED_BODIES: Rejection[] = [
  { what: 'a repeated top-level field', body: `{"model":"{model}","messages":[],"input":"hi","messages":${HELLO}}` },
  { what: 'model written twice, once with an escape', body: `{"model":"{model}","mod\\u0065l":"{model}","messages":${HELLO},"input":"hi"}` },
  { what: 'a body that is not JSON', body: '{"model": "{model}", "messages": [' },
  { what: 'a JSON array', body: `[{"model":"{model}","messages":${HELLO}}]` },
  { what: 'a body without model', body: `{"messages":${HELLO},"input":"hi"}` },
  { what: 'a model that is not a string', body: `{"model":42,"messages":${HELLO},"input":"hi"}` },
  { what: 'an empty body', body: '' },
  { what: 'a non-JSON body sent as text/plain', body: 'model={model}&input=hi', contentType: 'text/plain' },
];

/** Each entry with a model that offers it and one that lacks it (and cannot be translated to). */
const CHAT_SHAPE_ENTRIES = [
  { path: CHAT_PATH, model: 'chat-model', lacking: 'image-model' },
  { path: '/v1/responses', model: 'chat-model', lacking: 'image-model' },
  { path: '/v1/embeddings', model: 'embed-model', lacking: 'chat-model' },
];
const MESSAGES_SHAPE_ENTRIES = [
  { path: MESSAGES_PATH, model: 'messages-model', lacking: 'image-model' },
  { path: '/v1/messages/count_tokens', model: 'messages-model', lacking: 'embed-model' },
];

function rejectionsFor(entry: { model: string; lacking: string }): Rejection[] {
  const lacking = { what: `${entry.lacking}, which lacks the interface`, body: `{"model":"${entry.lacking}","messages":${HELLO},"input":"hi"}` };
  return [...MALFORMED_BODIES, lacking].map((rejection) => ({ ...rejection, body: rejection.body.replaceAll('{model}', entry.model) }));
}

function casesOf(entries: Array<{ path: string; model: string; lacking: string }>): Array<Rejection & { path: string }> {
  return entries.flatMap((entry) => rejectionsFor(entry).map((rejection) => ({ ...rejection, path: entry.path })));
}

function chatBody(content = 'hi'): string {
  return JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content }] });
}

function oversizedBody(): string {
  return `{"model":"chat-model","max_tokens":16,"messages":[{"role":"user","content":"${'a'.repeat(BODY_LIMIT_BYTES)}"}]}`;
}

/** The text in 1 MiB pieces, sent with `Transfer-Encoding: chunked` and no `Content-Length`. */
function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = Buffer.from(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 1024 * 1024));
      offset += 1024 * 1024;
    },
  });
}

const CHAT_ERROR = (code: string | null) => ({ error: { message: expect.any(String), type: expect.any(String), code } });
const MESSAGES_ERROR = (code: string | null) => ({ type: 'error', error: { type: expect.any(String), message: expect.any(String), code } });

describe('admission before forwarding', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  async function post(path: string, body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(20_000),
      ...(typeof body === 'string' ? {} : { duplex: 'half' }),
    } as RequestInit);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, requestId: response.headers.get('x-request-id') ?? '' };
  }

  /** Rejected before forwarding: nothing reached the upstream and no usage record exists. */
  async function expectNothingForwarded(answer: Answer): Promise<void> {
    expect(answer.requestId).not.toBe('');
    expect(gateway.simulator.requests).toHaveLength(0);
    expect(await gateway.usageRecord(answer.requestId)).toBeNull();
  }

  describe('rejections', () => {
    it.each(casesOf(CHAT_SHAPE_ENTRIES))('answers 400 with code null on $path for $what, without forwarding', async (rejection) => {
      const answer = await post(rejection.path, rejection.body, rejection.contentType ? { 'content-type': rejection.contentType } : {});

      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR(null));
      await expectNothingForwarded(answer);
    });

    it.each(casesOf(MESSAGES_SHAPE_ENTRIES))('answers 400 in the messages shape on $path for $what, without forwarding', async (rejection) => {
      const answer = await post(rejection.path, rejection.body, rejection.contentType ? { 'content-type': rejection.contentType } : {});

      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual(MESSAGES_ERROR(null));
      await expectNothingForwarded(answer);
    });

    it('refuses a JSON body sent with a text/plain content type: JSON bodies use application/json', async () => {
      const answer = await post(CHAT_PATH, chatBody('plain label'), { 'content-type': 'text/plain' });

      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR(null));
      expect(JSON.parse(answer.text).error.message).toContain('application/json');
      await expectNothingForwarded(answer);
    });

    it('answers 413 request_too_large for a chat body over 32 MiB, without forwarding', async () => {
      const answer = await post(CHAT_PATH, oversizedBody());

      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('answers 413 request_too_large for a chunked body over 32 MiB that announces no length, without forwarding', async () => {
      const answer = await post(CHAT_PATH, chunked(oversizedBody()));

      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('answers 413 in the messages shape for a messages body over 32 MiB, without forwarding', async () => {
      const answer = await post(MESSAGES_PATH, oversizedBody().replace('chat-model', 'messages-model'));

      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toEqual(MESSAGES_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('answers 401 invalid_api_key for an unknown key, without forwarding', async () => {
      const answer = await post(CHAT_PATH, chatBody(), { authorization: 'Bearer gk-not-a-key' });

      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR('invalid_api_key'));
      await expectNothingForwarded(answer);
    });

    it('answers 401 invalid_api_key in the messages shape on /v1/messages, without forwarding', async () => {
      const answer = await post(MESSAGES_PATH, '{"model":"messages-model","max_tokens":8,"messages":[]}', { authorization: 'Bearer gk-not-a-key' });

      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.text)).toEqual(MESSAGES_ERROR('invalid_api_key'));
      await expectNothingForwarded(answer);
    });

    it('answers 403 model_not_allowed for a model outside the key scope, without forwarding', async () => {
      const answer = await post('/v1/embeddings', '{"model":"embed-model","input":"hi"}', { authorization: `Bearer ${KEYS.chatOnly}` });

      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR('model_not_allowed'));
      await expectNothingForwarded(answer);
    });

    it('answers 404 model_not_found for an unknown model or an upstream model name, without forwarding', async () => {
      for (const model of ['no-such-model', 'vendor-chat-2025-01']) {
        const answer = await post(CHAT_PATH, JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }));

        expect(answer.status).toBe(404);
        expect(JSON.parse(answer.text)).toEqual(CHAT_ERROR('model_not_found'));
        await expectNothingForwarded(answer);
      }
    });
  });

  describe('X-Request-Id', () => {
    it('is on a successful JSON answer and equals the request id of its usage record', async () => {
      const answer = await post(CHAT_PATH, chatBody());

      expect(answer.status).toBe(200);
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ requestId: answer.requestId, status: 200, stream: false });
    });

    it('is on a successful stream and equals the request id of its usage record', async () => {
      const answer = await post(CHAT_PATH, JSON.stringify({ model: 'chat-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }));

      expect(answer.status).toBe(200);
      expect(answer.text).toContain('[DONE]');
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ requestId: answer.requestId, status: 200, stream: true });
    });

    it('is on an upstream error passed through, and equals the request id of its usage record', async () => {
      gateway.simulator.failNext(CHAT_PATH, { status: 400 });

      const answer = await post(CHAT_PATH, chatBody());

      expect(answer.status).toBe(400);
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ requestId: answer.requestId, status: 400 });
    });

    it.each([
      { status: 400, what: 'a duplicated field', path: CHAT_PATH, body: '{"model":"chat-model","model":"chat-model"}', key: KEYS.all },
      { status: 401, what: 'a wrong key', path: CHAT_PATH, body: chatBody(), key: 'gk-wrong' },
      {
        status: 403,
        what: 'a model outside the scope',
        path: MESSAGES_PATH,
        body: '{"model":"messages-model","max_tokens":8,"messages":[]}',
        key: KEYS.chatOnly,
      },
      { status: 404, what: 'an unknown model', path: CHAT_PATH, body: '{"model":"no-such-model","messages":[]}', key: KEYS.all },
      { status: 404, what: 'an unknown route', path: '/v1/no-such-route', body: chatBody(), key: KEYS.all },
    ])('is on a $status answer for $what', async (request) => {
      const answer = await post(request.path, request.body, { authorization: `Bearer ${request.key}` });

      expect(answer.status).toBe(request.status);
      expect(answer.requestId).not.toBe('');
    });

    it('is on a 413 answer', async () => {
      const answer = await post(CHAT_PATH, oversizedBody());

      expect(answer.status).toBe(413);
      expect(answer.requestId).not.toBe('');
    });

    it('differs on every request, successful or not', async () => {
      const answers = [
        await post(CHAT_PATH, chatBody()),
        await post(CHAT_PATH, chatBody()),
        await post(CHAT_PATH, chatBody(), { authorization: 'Bearer gk-wrong' }),
        await post(CHAT_PATH, chatBody(), { authorization: 'Bearer gk-wrong' }),
        await post(CHAT_PATH, '[]'),
        await post('/v1/no-such-route', chatBody()),
      ];

      const ids = answers.map((answer) => answer.requestId);
      expect(ids.every((id) => id !== '')).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
    });
  });

  describe('X-Client-Request-Id', () => {
    async function recordedClientRequestId(value: string): Promise<string | null | undefined> {
      const answer = await post(CHAT_PATH, chatBody(), { 'x-client-request-id': value });
      expect(answer.status).toBe(200);
      return (await gateway.usageRecord(answer.requestId))?.clientRequestId;
    }

    it('is kept on the usage record when it has 128 printable ASCII characters', async () => {
      const value = `order 42: ${'~!'.repeat(59)}`;
      expect(value).toHaveLength(128);

      expect(await recordedClientRequestId(value)).toBe(value);
    });

    it('is ignored when it has 129 characters', async () => {
      expect(await recordedClientRequestId('x'.repeat(129))).toBeNull();
    });

    it('is ignored when it holds a control character', async () => {
      expect(await recordedClientRequestId('order\t42')).toBeNull();
    });

    it('is ignored when it holds a non-ASCII character', async () => {
      expect(await recordedClientRequestId('caf\u00e9-42')).toBeNull();
    });
  });
});
