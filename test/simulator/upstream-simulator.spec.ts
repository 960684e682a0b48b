import OpenAI from 'openai';
import { parseSse, rawPost } from './simulator-test-kit';
import { UpstreamSimulator } from './upstream-simulator';

describe(UpstreamSimulator.name, () => {
  const simulator = new UpstreamSimulator({ apiKey: 'sk-sim' });
  let baseUrl: string;
  let chatUrl: string;

  beforeAll(async () => {
    baseUrl = await simulator.start();
    chatUrl = `${baseUrl}/v1/chat/completions`;
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());

  const bearer = { authorization: 'Bearer sk-sim' };
  const chatBody = (stream = false) => ({ model: 'text-model-1', stream, messages: [{ role: 'user', content: 'one two' }] });
  const eventCount = (text: string) => parseSse(text).length;

  it('starts on a free port and returns its loopback base URL', () => {
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('records method, path with query, headers and parsed body, and forgets them on reset', async () => {
    await rawPost(`${chatUrl}?trace=1`, chatBody(), { headers: { ...bearer, 'x-extra': 'yes' } });

    expect(simulator.requests).toHaveLength(1);
    const [recorded] = simulator.requests;
    expect(recorded).toMatchObject({ method: 'POST', path: '/v1/chat/completions?trace=1', json: chatBody() });
    expect(recorded.headers['x-extra']).toBe('yes');
    expect(recorded.body.toString('utf8')).toBe(JSON.stringify(chatBody()));
    const log = await (await fetch(`${baseUrl}/__requests`)).json();
    expect(log).toEqual([expect.objectContaining({ path: '/v1/chat/completions?trace=1', json: chatBody() })]);
    simulator.reset();
    expect(simulator.requests).toHaveLength(0);
  });

  it('answers a wrong bearer key with 401 in the OpenAI shape', async () => {
    const outcome = await rawPost(chatUrl, chatBody(), { headers: { authorization: 'Bearer sk-wrong' } });

    expect(outcome.status).toBe(401);
    expect(JSON.parse(outcome.text).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
  });

  it('answers an unknown path with 404 in the OpenAI shape', async () => {
    const outcome = await rawPost(`${baseUrl}/v1/nothing`, {}, { headers: bearer });

    expect(outcome.status).toBe(404);
    expect(JSON.parse(outcome.text)).toEqual({
      error: { message: 'Invalid URL (POST /v1/nothing)', type: 'invalid_request_error', param: null, code: null },
    });
  });

  it('answers planned statuses with the vendor error shape and headers, then recovers', async () => {
    simulator.failNext('/v1/chat/completions', { status: 429, headers: { 'retry-after': '3' } }, 2);
    simulator.failNext('/v1/messages', { status: 529 });

    const first = await rawPost(chatUrl, chatBody(), { headers: bearer });
    const second = await rawPost(chatUrl, chatBody(), { headers: bearer });
    const third = await rawPost(chatUrl, chatBody(), { headers: bearer });
    const messages = await rawPost(`${baseUrl}/v1/messages`, {}, { headers: { 'x-api-key': 'sk-sim' } });

    expect([first.status, second.status, third.status]).toEqual([429, 429, 200]);
    expect(first.headers?.['retry-after']).toBe('3');
    expect(JSON.parse(first.text).error).toMatchObject({ code: 'rate_limit_exceeded' });
    expect(messages.status).toBe(529);
    expect(JSON.parse(messages.text)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(simulator.requests).toHaveLength(4);
  });

  it('sends a planned body as given, and "*" plans for any path', async () => {
    simulator.failNext('*', { status: 500, body: { custom: true } });

    const outcome = await rawPost(`${baseUrl}/v1/embeddings`, {}, { headers: bearer });

    expect(outcome.status).toBe(500);
    expect(JSON.parse(outcome.text)).toEqual({ custom: true });
  });

  it('sends a planned string body as plain text', async () => {
    simulator.failNext('/v1/responses', { status: 502, body: '<html>Bad gateway</html>', headers: { 'content-type': 'text/html' } });

    const outcome = await rawPost(`${baseUrl}/v1/responses`, {}, { headers: bearer });

    expect(outcome.status).toBe(502);
    expect(outcome.headers?.['content-type']).toBe('text/html');
    expect(outcome.text).toBe('<html>Bad gateway</html>');
  });

  it('sends a planned raw answer chunk by chunk, exactly as given and without a length', async () => {
    const chunks = ['data: {"broken":\n\n', 'garbage line\n\n', 'data: [DONE]\n\n'];
    simulator.failNext('/v1/chat/completions', { kind: 'raw', status: 200, contentType: 'text/event-stream', chunks });

    const outcome = await rawPost(chatUrl, chatBody(true), { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(outcome.headers?.['content-type']).toBe('text/event-stream');
    expect(outcome.headers?.['content-length']).toBeUndefined();
    expect(outcome.text).toBe(chunks.join(''));
    expect(outcome.complete).toBe(true);
  });

  it('holds the headers back for a planned delay, then answers normally', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'delay', ms: 150 });

    const outcome = await rawPost(chatUrl, chatBody(), { headers: bearer });

    expect(outcome.headersAfterMs).toBeGreaterThanOrEqual(140);
    expect(outcome.status).toBe(200);
    expect(JSON.parse(outcome.text).choices[0].message.content).toBe('Hello from text-model-1: one two');
  });

  it('resets the connection before any header', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'reset-before-headers' });

    const outcome = await rawPost(chatUrl, chatBody(), { headers: bearer });

    expect(outcome.status).toBeUndefined();
    expect(outcome.error?.message).toMatch(/socket hang up|ECONNRESET/);
  });

  it('resets a stream after the planned number of events', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'reset-mid-stream', afterEvents: 2 });

    const outcome = await rawPost(chatUrl, chatBody(true), { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(eventCount(outcome.text)).toBe(2);
    expect(outcome.complete).toBe(false);
  });

  it('makes the SDK stream fail when the connection resets mid-stream', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'reset-mid-stream', afterEvents: 3 });
    const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-sim', maxRetries: 0 });
    const received: string[] = [];

    const consume = async () => {
      const stream = await client.chat.completions.create({ model: 'text-model-1', stream: true, messages: [{ role: 'user', content: 'x' }] });
      for await (const chunk of stream) received.push(chunk.choices[0].delta.content ?? '');
    };

    await expect(consume()).rejects.toThrow();
    expect(received).toHaveLength(3);
  });

  it('breaks a JSON answer halfway for a mid-stream reset', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'reset-mid-stream', afterEvents: 0 });

    const outcome = await rawPost(chatUrl, chatBody(), { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(outcome.complete).toBe(false);
    expect(() => JSON.parse(outcome.text)).toThrow();
  });

  it('stalls a stream after the planned events until the client gives up', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'stall-mid-stream', afterEvents: 1 });

    const outcome = await rawPost(chatUrl, chatBody(true), { headers: bearer, idleTimeoutMs: 200 });

    expect(outcome.status).toBe(200);
    expect(eventCount(outcome.text)).toBe(1);
    expect(outcome.error?.message).toBe('client gave up waiting');
  });

  it('never answers a held request, which the client aborts', async () => {
    simulator.failNext('/v1/chat/completions', { kind: 'never-respond' });

    const attempt = fetch(chatUrl, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody()),
      signal: AbortSignal.timeout(200),
    });

    await expect(attempt).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(simulator.requests).toHaveLength(1);
  });

  it('paces SSE events by chunkDelayMs', async () => {
    const slow = new UpstreamSimulator({ chunkDelayMs: 30 });
    const slowUrl = await slow.start();
    try {
      const startedAt = Date.now();
      const outcome = await rawPost(`${slowUrl}/v1/chat/completions`, chatBody(true));

      // role chunk, five words, finish chunk, [DONE]
      expect(eventCount(outcome.text)).toBe(8);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(8 * 30 - 10);
    } finally {
      await slow.stop();
    }
  });

  it('stops promptly while requests are held, stalled or delayed', async () => {
    const busy = new UpstreamSimulator();
    const busyUrl = await busy.start();
    busy.failNext('/v1/chat/completions', { kind: 'never-respond' });
    busy.failNext('/v1/chat/completions', { kind: 'stall-mid-stream', afterEvents: 1 });
    busy.failNext('/v1/chat/completions', { kind: 'delay', ms: 60_000 });
    const outcomes = [1, 2, 3].map(() => rawPost(`${busyUrl}/v1/chat/completions`, chatBody(true)));
    while (busy.requests.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));

    const startedAt = Date.now();
    await busy.stop();

    expect(Date.now() - startedAt).toBeLessThan(1000);
    const settled = await Promise.all(outcomes);
    expect(settled.every((outcome) => outcome.error !== undefined || !outcome.complete)).toBe(true);
  });
});
