import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createServer, type AddressInfo } from 'node:net';
import { Clock } from '../src/common/clock';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS, VENDOR_KEY } from './support/test-config';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { until } from './support/until';
import { httpCall } from './support/admin-kit';
import { parseSse } from './support/sse';

/**
 * Lines (DESIGN.md section 7): failover before the first byte, cooldown of refused lines,
 * the last upstream answer as it came, credential and timeout mapping, concurrency limits,
 * and what happens to a stream once it has started.
 */

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';
/** Long enough that no test outlives it by accident; tests move the gateway's clock instead. */
const COOLDOWN_MS = 60_000;
/** The longest a 429's Retry-After puts a line last (LINE_429_COOLDOWN_MAX_MS). */
const RATE_LIMIT_COOLDOWN_MAX_MS = 20_000;
/** How long a test client waits for a complete answer before calling the call unanswered. */
const CLIENT_PATIENCE_MS = 10_000;

function noAnswer(path: string): (error: unknown) => never {
  return (error) => {
    throw new Error(`the gateway did not complete its answer to POST ${path} within ${CLIENT_PATIENCE_MS} ms (${String(error)})`);
  };
}

function linesConfigYaml(simulator: string, ports: { revive: number; lone: number }): string {
  const model = (id: string, interfaces: string, lines: string) => `
  - id: ${id}
    upstream_model: vendor-chat-2025-01
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
  - id: line-dead
    base_url: http://127.0.0.1:1
    api_key: unused
    timeout_ms: 2000
  - id: line-revive
    base_url: http://127.0.0.1:${ports.revive}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-lone
    base_url: http://127.0.0.1:${ports.lone}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-slow
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
    timeout_ms: 300
  - id: line-narrow
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
    max_concurrency: 1
models:${[
    model('chat-model', 'chat_completions', 'line-a'),
    model('messages-model', 'messages', 'line-a'),
    model('pair-model', 'chat_completions, messages', 'line-a, line-b'),
    model('failover-model', 'chat_completions', 'line-dead, line-b'),
    model('revive-model', 'chat_completions', 'line-revive, line-b'),
    model('lone-model', 'chat_completions', 'line-lone'),
    model('slow-model', 'chat_completions', 'line-slow'),
    model('narrow-model', 'chat_completions', 'line-narrow'),
    model('narrow-first-model', 'chat_completions', 'line-narrow, line-b'),
    model('weighted-model', 'chat_completions', '{ id: line-a, weight: 3 }, { id: line-b, weight: 1 }'),
    model('renamed-model', 'chat_completions', 'line-a, { id: line-b, upstream_model: deployment-b }'),
    model('renamed-messages-model', 'messages', 'line-a, { id: line-b, upstream_model: deployment-b }'),
    `${model('retry-model', 'chat_completions', 'line-a')}
    retry: { attempts: 2, backoff_ms: 10, max_backoff_ms: 2000 }`,
    `${model('dead-retry-model', 'chat_completions', 'line-dead')}
    retry: { attempts: 2, backoff_ms: 10, max_backoff_ms: 2000 }`,
  ].join('')}
owners:
  - id: team-a
    kind: project
    budget: 100
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

function chatBody(model: string, stream = false): Record<string, unknown> {
  return { model, stream, messages: [{ role: 'user', content: 'Say hello to the lines' }] };
}

function messagesBody(model: string, stream = false): Record<string, unknown> {
  return { model, stream, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello to the lines' }] };
}

/** A loopback port nothing listens on (for now): connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('upstream lines', () => {
  let harness: GatewayHarness;
  let simulator: UpstreamSimulator;
  const ports = { revive: 0, lone: 0 };
  const revived: UpstreamSimulator[] = [];
  let clockOffsetMs = 0;

  beforeAll(async () => {
    ports.revive = await closedPort();
    ports.lone = await closedPort();
    harness = await GatewayHarness.start({
      configYaml: (simulatorUrl) => linesConfigYaml(simulatorUrl, ports),
      settings: {
        lines: {
          cooldownMs: COOLDOWN_MS,
          rateLimitCooldownMaxMs: RATE_LIMIT_COOLDOWN_MAX_MS,
          connections: 16,
          retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 0 },
        },
      },
    });
    simulator = harness.simulator;
    const clock = harness.app.get(Clock);
    jest.spyOn(clock, 'now').mockImplementation(() => Date.now() + clockOffsetMs);
  });

  afterAll(async () => {
    await Promise.all(revived.map((upstream) => upstream.stop()));
    await harness?.stop();
  });

  beforeEach(() => simulator.reset());

  async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${harness.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CLIENT_PATIENCE_MS),
    }).catch(noAnswer(path));
    const text = await response.text().catch(noAnswer(path));
    return { status: response.status, headers: response.headers, text, requestId: response.headers.get('x-request-id') ?? '' };
  }

  /** Starts a simulator on a port that refused connections so far. */
  async function revive(port: number): Promise<UpstreamSimulator> {
    const upstream = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    revived.push(upstream);
    await upstream.start(port, '127.0.0.1');
    return upstream;
  }

  function passCooldown(): void {
    clockOffsetMs += COOLDOWN_MS + 1_000;
  }

  function passRateLimit(): void {
    clockOffsetMs += RATE_LIMIT_COOLDOWN_MAX_MS + 1_000;
  }

  /** The line each of `count` pair-model calls was served by, one after the other. */
  async function pairLines(count: number): Promise<string[]> {
    const lines: string[] = [];
    for (let call = 0; call < count; call++) {
      const answer = await post(CHAT_PATH, chatBody('pair-model'));
      expect(answer.status).toBe(200);
      lines.push((await harness.usageRecord(answer.requestId))!.line as string);
    }
    return lines;
  }

  describe('failover before the first byte', () => {
    it('moves to the next line when the first one refuses the connection', async () => {
      const answer = await post(CHAT_PATH, chatBody('failover-model'));

      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).choices[0].message.content).toContain('Say hello');
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('moves to the next line when the connection is reset before any header', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'reset-before-headers' });

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('moves to the next line when the first one answers 429', async () => {
      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after': '5' } });

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(answer.headers.get('retry-after')).toBeNull();
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 200 });
      passRateLimit(); // line-a asked for 5 s without calls: the next tests start with it first again
    });

    it.each([500, 502, 503, 529])('moves to the next line when the first one answers %d', async (status) => {
      simulator.failNext(CHAT_PATH, { status });

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('moves to the next line on the messages entry too', async () => {
      simulator.failNext(MESSAGES_PATH, { status: 529 });

      const answer = await post(MESSAGES_PATH, messagesBody('pair-model'));

      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toMatchObject({ type: 'message', role: 'assistant' });
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', interface: 'messages' });
    });
  });

  describe('weights, line model names and retries', () => {
    it('spreads the first attempts of 400 calls 3:1 by weight (line-a within 240 to 360)', async () => {
      const served: Record<string, number> = {};
      for (let call = 0; call < 400; call++) {
        const answer = await post(CHAT_PATH, chatBody('weighted-model'));
        expect(answer.status).toBe(200);
        served[answer.requestId] = 0;
      }
      const lines = (await harness.usageRecords()).filter((record) => record.requestId in served).map((record) => record.line);
      const onA = lines.filter((line) => line === 'line-a').length;
      expect(lines).toHaveLength(400);
      expect(onA).toBeGreaterThanOrEqual(240);
      expect(onA).toBeLessThanOrEqual(360);
      expect(lines.filter((line) => line === 'line-b')).toHaveLength(400 - onA);
    });

    it("sends a line its own upstream_model, the other lines the model's, and records the line and the lines tried", async () => {
      simulator.failNext(CHAT_PATH, { status: 503 });

      const answer = await post(CHAT_PATH, chatBody('renamed-model'));

      expect(answer.status).toBe(200);
      expect(simulator.requests.map((request) => (request.json as { model: string }).model)).toEqual(['vendor-chat-2025-01', 'deployment-b']);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', model: 'renamed-model', linesTried: ['line-a', 'line-b'] });
      const view = (await httpCall(harness.url, 'GET', `/admin/usage/${answer.requestId}`)).body;
      expect(view).toMatchObject({ line: 'line-b', attempts: 2, lines_tried: ['line-a', 'line-b'] });
    });

    it("translates for a line's own upstream_model too, and reads its answer", async () => {
      simulator.failNext(MESSAGES_PATH, { status: 529 });

      const answer = await post('/v1/responses', { model: 'renamed-messages-model', input: 'Say hello to the lines' });

      expect(answer.status).toBe(200);
      expect(answer.headers.get('x-gateway-translated')).toBe('messages');
      expect(JSON.parse(answer.text)).toMatchObject({ object: 'response', status: 'completed', model: 'deployment-b' });
      expect(simulator.requests.map((request) => [request.path, (request.json as { model: string }).model])).toEqual([
        [MESSAGES_PATH, 'vendor-chat-2025-01'],
        [MESSAGES_PATH, 'deployment-b'],
      ]);
    });

    it("retries a model's only line after the 503's Retry-After-Ms, and records both attempts", async () => {
      simulator.failNext(CHAT_PATH, { status: 503, headers: { 'retry-after-ms': '300' } });
      const started = performance.now();

      const answer = await post(CHAT_PATH, chatBody('retry-model'));

      expect(answer.status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(300);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-a', status: 200, linesTried: ['line-a', 'line-a'] });
    });

    it.each([429, 503])("retries a model's only line no earlier than a %d's Retry-After of 1 second, and records both attempts", async (status) => {
      simulator.failNext(CHAT_PATH, { status, headers: { 'retry-after': '1' } });
      const started = performance.now();

      const answer = await post(CHAT_PATH, chatBody('retry-model'));

      expect(answer.status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-a', status: 200, linesTried: ['line-a', 'line-a'] });
    });

    it('gives the last answer as it came once the retries are spent', async () => {
      simulator.failNext(CHAT_PATH, { status: 500 }, 3);

      const answer = await post(CHAT_PATH, chatBody('retry-model'));

      expect(answer.status).toBe(500);
      expect(simulator.requests).toHaveLength(3);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ status: 500, linesTried: ['line-a', 'line-a', 'line-a'] });
    });

    it('retries a refused connection, though the line cools down for other calls, and records every attempt', async () => {
      passCooldown();

      const answer = await post(CHAT_PATH, chatBody('dead-retry-model'));

      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_failed');
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({
        line: 'line-dead',
        errorCode: 'upstream_failed',
        linesTried: ['line-dead', 'line-dead', 'line-dead'],
      });
      // The next call finds the line cooling: 503 at once, nothing tried.
      const next = await post(CHAT_PATH, chatBody('dead-retry-model'));
      expect(next.status).toBe(503);
      expect(await harness.usageRecord(next.requestId)).toBeNull();
      passCooldown();
    });

    it('never retries once the first byte went to the client: a stream broken mid-way is recorded as broken', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'reset-mid-stream', afterEvents: 2 });

      const answer = await post(CHAT_PATH, chatBody('retry-model', true));

      expect(answer.status).toBe(200);
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ errorCode: 'upstream_stream_broken', linesTried: null });
    });
  });

  describe('cooldown', () => {
    it('skips a refused line while it cools down and tries it again afterwards', async () => {
      const first = await post(CHAT_PATH, chatBody('revive-model'));
      expect(first.status).toBe(200);
      expect(await harness.usageRecord(first.requestId)).toMatchObject({ line: 'line-b' });
      expect(simulator.requests).toHaveLength(1);
      const upstream = await revive(ports.revive);

      const cooling = await post(CHAT_PATH, chatBody('revive-model'));

      expect(cooling.status).toBe(200);
      expect(upstream.requests).toHaveLength(0);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(cooling.requestId)).toMatchObject({ line: 'line-b' });

      passCooldown();
      const cooled = await post(CHAT_PATH, chatBody('revive-model'));

      expect(cooled.status).toBe(200);
      expect(upstream.requests).toHaveLength(1);
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(cooled.requestId)).toMatchObject({ line: 'line-revive', status: 200 });
    });

    it("puts a line that answered 429 with Retry-After after the model's others for that long, then first again", async () => {
      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after': '5' } });
      expect(await pairLines(1)).toEqual(['line-b']);
      simulator.reset();
      const lines = (await httpCall(harness.url, 'GET', '/admin/lines')).body.data as Array<{ id: string; rate_limited_until: string | null }>;
      const linesSeenAt = Date.now() + clockOffsetMs;

      const paused = await pairLines(3);
      const requestsWhilePaused = simulator.requests.length;
      clockOffsetMs += 5_000 + 100;
      const after = await pairLines(1);

      expect(Date.parse(lines.find((line) => line.id === 'line-a')!.rate_limited_until!) - linesSeenAt).toBeGreaterThan(4_000);
      expect(lines.find((line) => line.id === 'line-b')!.rate_limited_until).toBeNull();
      expect(paused).toEqual(['line-b', 'line-b', 'line-b']);
      expect(requestsWhilePaused).toBe(3); // line-a was not tried first
      expect(after).toEqual(['line-a']);
    });

    it('reads Retry-After-Ms, and an HTTP date, and holds a line at most LINE_429_COOLDOWN_MAX_MS', async () => {
      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '60' } });
      await pairLines(1);
      clockOffsetMs += 1_600;
      expect(await pairLines(1)).toEqual(['line-a']);

      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after': new Date(Date.now() + clockOffsetMs + 8_000).toUTCString() } });
      await pairLines(1);
      clockOffsetMs += 6_000;
      expect(await pairLines(1)).toEqual(['line-b']);
      clockOffsetMs += 3_000;
      expect(await pairLines(1)).toEqual(['line-a']);

      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after': '3600' } });
      await pairLines(1);
      clockOffsetMs += RATE_LIMIT_COOLDOWN_MAX_MS - 1_000;
      expect(await pairLines(1)).toEqual(['line-b']);
      clockOffsetMs += 2_000;
      expect(await pairLines(1)).toEqual(['line-a']);
    });

    it("never takes a model's last line away for a 429: its next call goes to it", async () => {
      simulator.failNext(CHAT_PATH, { status: 429, headers: { 'retry-after': '30' } });

      const refused = await post(CHAT_PATH, chatBody('chat-model'));
      const next = await post(CHAT_PATH, chatBody('chat-model'));

      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(next.status).toBe(200);
      expect(await harness.usageRecord(next.requestId)).toMatchObject({ line: 'line-a' });
      passRateLimit();
    });

    it('answers 503 service_unavailable without a record while every line of the model cools down, then tries the line again', async () => {
      const refused = await post(CHAT_PATH, chatBody('lone-model'));
      expect(refused.status).toBe(502);
      expect(JSON.parse(refused.text).error.code).toBe('upstream_failed');
      const upstream = await revive(ports.lone);

      const cooling = await post(CHAT_PATH, chatBody('lone-model'));

      expect(cooling.status).toBe(503);
      expect(JSON.parse(cooling.text)).toEqual({
        error: { message: expect.any(String), type: expect.any(String), code: 'service_unavailable' },
      });
      expect(cooling.requestId).not.toBe('');
      expect(upstream.requests).toHaveLength(0);
      expect(await harness.usageRecord(cooling.requestId)).toBeNull();

      passCooldown();
      const cooled = await post(CHAT_PATH, chatBody('lone-model'));

      expect(cooled.status).toBe(200);
      expect(upstream.requests).toHaveLength(1);
      expect(await harness.usageRecord(cooled.requestId)).toMatchObject({ line: 'line-lone', status: 200 });
    });
  });

  describe('when no line is left', () => {
    it('returns the last upstream 429 as it came, with its Retry-After', async () => {
      const firstBody = { error: { message: 'line a is busy', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
      const lastBody = { error: { message: 'line b is busy too', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
      simulator.failNext(CHAT_PATH, { status: 429, body: firstBody, headers: { 'retry-after': '3' } });
      simulator.failNext(CHAT_PATH, { status: 429, body: lastBody, headers: { 'retry-after': '7', 'x-should-retry': 'true' } });

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('7');
      expect(answer.headers.get('x-should-retry')).toBe('true');
      expect(answer.text).toBe(JSON.stringify(lastBody));
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 429 });
    });

    it("returns the last line's 500 status and body as they came", async () => {
      simulator.failNext(CHAT_PATH, { status: 503, body: { error: { message: 'first line down' } } });
      const lastBody = { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } };
      simulator.failNext(CHAT_PATH, { status: 500, body: lastBody });

      const answer = await post(CHAT_PATH, chatBody('pair-model'));

      expect(answer.status).toBe(500);
      expect(answer.text).toBe(JSON.stringify(lastBody));
      expect(simulator.requests).toHaveLength(2);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ line: 'line-b', status: 500 });
    });
  });

  describe('upstream credential failures', () => {
    const leaked = 'sk-vendor-LEAKED-credential-detail';

    it.each([401, 402, 403])('turns an upstream %d into 502 upstream_failed in the chat error shape', async (status) => {
      simulator.failNext(CHAT_PATH, {
        status,
        body: { error: { message: `Incorrect API key provided: ${leaked}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
      });

      const answer = await post(CHAT_PATH, chatBody('chat-model'));

      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text)).toEqual({
        error: { message: expect.any(String), type: expect.any(String), code: 'upstream_failed' },
      });
      expect(answer.text).not.toContain(leaked);
      expect(answer.text).not.toContain('invalid_api_key');
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ status: 502, errorCode: 'upstream_failed', line: 'line-a' });
    });

    it.each([401, 402, 403])('turns an upstream %d into 502 upstream_failed in the messages error shape', async (status) => {
      simulator.failNext(MESSAGES_PATH, {
        status,
        body: { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${leaked}` } },
      });

      const answer = await post(MESSAGES_PATH, messagesBody('messages-model'));

      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text)).toEqual({
        type: 'error',
        error: { type: expect.any(String), message: expect.any(String), code: 'upstream_failed' },
      });
      expect(answer.text).not.toContain(leaked);
      expect(answer.text).not.toContain('authentication_error');
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ status: 502, errorCode: 'upstream_failed' });
    });
  });

  describe('timeouts and broken answers', () => {
    it('answers 504 upstream_timeout when no response headers arrive within timeout_ms', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'delay', ms: 3_000 });

      const answer = await post(CHAT_PATH, chatBody('slow-model'));

      expect(answer.status).toBe(504);
      expect(JSON.parse(answer.text)).toEqual({
        error: { message: expect.any(String), type: expect.any(String), code: 'upstream_timeout' },
      });
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ status: 504, errorCode: 'upstream_timeout', line: 'line-slow' });
    });

    it('answers 502 upstream_failed when the upstream breaks off a JSON answer', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'reset-mid-stream', afterEvents: 0 });

      const answer = await post(CHAT_PATH, chatBody('chat-model'));

      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.text).error.code).toBe('upstream_failed');
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ status: 502, line: 'line-a' });
    });
  });

  describe('concurrency', () => {
    it('answers 429 rate_limit_exceeded with Retry-After and no record when every line is at max_concurrency', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'delay', ms: 1_500 });
      const holding = post(CHAT_PATH, chatBody('narrow-model'));
      await until(() => simulator.requests.length === 1, 'the held call to reach the upstream');

      const busy = await post(CHAT_PATH, chatBody('narrow-model'));
      const elsewhere = await post(CHAT_PATH, chatBody('narrow-first-model'));
      const held = await holding;

      expect(busy.status).toBe(429);
      expect(busy.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(JSON.parse(busy.text)).toEqual({
        error: { message: expect.any(String), type: expect.any(String), code: 'rate_limit_exceeded' },
      });
      expect(await harness.usageRecord(busy.requestId)).toBeNull();
      expect(elsewhere.status).toBe(200);
      expect(await harness.usageRecord(elsewhere.requestId)).toMatchObject({ line: 'line-b' });
      expect(held.status).toBe(200);
      expect(await harness.usageRecord(held.requestId)).toMatchObject({ line: 'line-narrow', status: 200 });
      expect(simulator.requests).toHaveLength(2);
    });
  });

  describe('after the first byte', () => {
    it('sends a reset after the first events as a chat in-stream error item, does not retry, and records the broken stream', async () => {
      simulator.failNext(CHAT_PATH, { kind: 'reset-mid-stream', afterEvents: 2 });

      const answer = await post(CHAT_PATH, chatBody('pair-model', true));

      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const items = parseSse(answer.text);
      expect(items.length).toBeGreaterThanOrEqual(2);
      expect(JSON.parse(items[0].data).object).toBe('chat.completion.chunk');
      const last = items[items.length - 1];
      expect(last.event).toBeUndefined();
      expect(JSON.parse(last.data)).toEqual({ error: expect.objectContaining({ message: expect.any(String) }) });
      expect(answer.text).not.toContain('[DONE]');
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({
        line: 'line-a',
        stream: true,
        errorCode: 'upstream_stream_broken',
      });
    });

    it('sends a reset after the first events as a messages error event and records the broken stream', async () => {
      simulator.failNext(MESSAGES_PATH, { kind: 'reset-mid-stream', afterEvents: 3 });

      const answer = await post(MESSAGES_PATH, messagesBody('messages-model', true));

      expect(answer.status).toBe(200);
      const events = parseSse(answer.text);
      expect(events[0].event).toBe('message_start');
      const last = events[events.length - 1];
      expect(last.event).toBe('error');
      expect(JSON.parse(last.data)).toEqual({ type: 'error', error: expect.objectContaining({ type: expect.any(String), message: expect.any(String) }) });
      expect(events.some((event) => event.event === 'message_stop')).toBe(false);
      expect(simulator.requests).toHaveLength(1);
      expect(await harness.usageRecord(answer.requestId)).toMatchObject({ stream: true, errorCode: 'upstream_stream_broken' });
    });

    it("aborts the upstream request when the client disconnects mid-stream, records 499 and frees the line's slot", async () => {
      simulator.failNext(CHAT_PATH, { kind: 'stall-mid-stream', afterEvents: 2 });

      const { requestId, received } = await readFirstEventThenDisconnect(`${harness.url}${CHAT_PATH}`, chatBody('narrow-model', true));
      expect(received).toContain('chat.completion.chunk');
      await until(async () => (await harness.usageRecord(requestId)) !== null, 'the record of the abandoned call');

      expect(await harness.usageRecord(requestId)).toMatchObject({
        status: 499,
        errorCode: 'client_closed',
        line: 'line-narrow',
        stream: true,
      });
      // line-narrow has one slot and one upstream connection: the next call gets through only if
      // the gateway released both, i.e. it aborted the stalled upstream request.
      const next = await post(CHAT_PATH, chatBody('narrow-model'));
      expect(next.status).toBe(200);
      expect(await harness.usageRecord(next.requestId)).toMatchObject({ line: 'line-narrow', status: 200 });
      expect(simulator.requests).toHaveLength(2);
    });
  });
});

/** Opens a stream, waits for its first complete event, then drops the connection. */
function readFirstEventThenDisconnect(url: string, body: unknown): Promise<{ requestId: string; received: string }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no stream event arrived')), 10_000);
    const request = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      },
      (response) => {
        let received = '';
        response.setEncoding('utf8');
        response.on('error', () => undefined);
        response.on('data', (chunk: string) => {
          received += chunk;
          if (!received.includes('\n\n')) return;
          clearTimeout(timer);
          request.destroy();
          resolve({ requestId: String(response.headers['x-request-id']), received });
        });
      },
    );
    request.on('error', () => undefined);
    request.end(JSON.stringify(body));
  });
}
