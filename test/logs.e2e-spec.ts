import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { KEYS, VENDOR_KEY } from './support/test-config';
import { until } from './support/until';

/**
 * The JSON log (pino): one line per request with who, what, how it ended and how long it took;
 * never a key, a vendor key, a credential header or a body; LOG_LEVEL sets what is written.
 */

/** A string no log line may contain: it travels only in request bodies. */
const SECRET_PROMPT = 'zebra-quartz-7781 tell nobody';

type LogLine = Record<string, any>;

/** Collects what the gateway writes to its log destination, text and parsed lines. */
class LogCapture {
  text = '';

  write(chunk: string): void {
    this.text += chunk;
  }

  get lines(): LogLine[] {
    return this.text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
  }

  calls(): LogLine[] {
    return this.lines.filter((line) => line.msg === 'call');
  }

  /** The call lines of one request id. */
  of(requestId: string): LogLine[] {
    return this.calls().filter((line) => line.request_id === requestId);
  }

  /** Waits for the one line of a request (a streamed call is reported when its upstream exchange ended). */
  async one(requestId: string): Promise<LogLine> {
    await until(() => this.of(requestId).length > 0, `the log line of ${requestId}`);
    const lines = this.of(requestId);
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }
}

interface Answer {
  status: number;
  text: string;
  requestId: string;
}

async function post(gateway: GatewayHarness, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text(), requestId: response.headers.get('x-request-id') ?? '' };
}

const CHAT = { model: 'chat-model', messages: [{ role: 'user', content: SECRET_PROMPT }] };

describe('call log lines', () => {
  const log = new LogCapture();
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ settings: { logLevel: 'info' }, logDestination: log });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('writes one line for a native call with its ids, key prefix, owner, model, line, status and durations', async () => {
    const answer = await post(gateway, '/v1/chat/completions', CHAT, { 'x-client-request-id': 'client-run-42' });
    expect(answer.status).toBe(200);

    const line = await log.one(answer.requestId);

    expect(line).toMatchObject({
      level: 30,
      msg: 'call',
      request_id: answer.requestId,
      client_request_id: 'client-run-42',
      owner: 'team-a',
      method: 'POST',
      route: '/v1/chat/completions',
      entry: 'chat_completions',
      model: 'chat-model',
      line: 'line-a',
      translated_to: null,
      stream: false,
      status: 200,
      error_code: null,
    });
    expect(KEYS.all.startsWith(line.key_prefix)).toBe(true);
    expect(line.key_prefix.length).toBeLessThan(KEYS.all.length / 2);
    expect(line.duration_ms).toBeGreaterThan(0);
    expect(line.upstream_headers_ms).toEqual(expect.any(Number));
    expect(line.upstream_ms).toBeGreaterThanOrEqual(line.upstream_headers_ms - 1);
    expect(line.upstream_ms).toBeLessThanOrEqual(line.duration_ms);
    expect(line.first_byte_ms).toBeLessThanOrEqual(line.duration_ms);
    expect(line.time).toBeGreaterThan(Date.now() - 60_000);
  });

  it('says which protocol a translated call went to, and that a streamed call streamed', async () => {
    const translated = await post(gateway, '/v1/messages', { model: 'chat-model', max_tokens: 64, messages: [{ role: 'user', content: SECRET_PROMPT }] });
    const streamed = await post(gateway, '/v1/chat/completions', { ...CHAT, stream: true });
    expect([translated.status, streamed.status]).toEqual([200, 200]);

    expect(await log.one(translated.requestId)).toMatchObject({ entry: 'messages', model: 'chat-model', translated_to: 'responses', status: 200 });
    expect(await log.one(streamed.requestId)).toMatchObject({ entry: 'chat_completions', stream: true, status: 200, line: 'line-a' });
  });

  it('writes a line for a refused call, with its error code and the route for the entry', async () => {
    const answer = await post(gateway, '/v1/chat/completions', CHAT, { authorization: 'Bearer gk-not-a-real-key-0000' });
    expect(answer.status).toBe(401);

    expect(await log.one(answer.requestId)).toMatchObject({
      level: 30,
      status: 401,
      error_code: 'invalid_api_key',
      entry: '/v1/chat/completions',
      model: null,
      key_prefix: null,
      owner: null,
      line: null,
    });
  });

  it('writes a failed upstream call at warn, with the line that failed', async () => {
    const answer = await post(gateway, '/v1/chat/completions', { ...CHAT, model: 'dead-model' });
    expect(answer.status).toBe(502);

    expect(await log.one(answer.requestId)).toMatchObject({
      level: 40,
      status: 502,
      error_code: 'upstream_failed',
      model: 'dead-model',
      line: 'line-dead',
      upstream_headers_ms: null,
    });
  });

  it('writes health probes and scrapes at debug only', async () => {
    const live = await fetch(`${gateway.url}/health/live`);
    const metrics = await fetch(`${gateway.url}/metrics`);
    await Promise.all([live.text(), metrics.text()]);
    // A call after them: once its line is there, theirs would be too.
    const after = await post(gateway, '/v1/chat/completions', CHAT);
    await log.one(after.requestId);

    expect(log.of(live.headers.get('x-request-id')!)).toEqual([]);
    expect(log.of(metrics.headers.get('x-request-id')!)).toEqual([]);
    expect(log.lines.filter((line) => line.msg === 'probe')).toEqual([]);
  });

  it("writes Nest's own messages as JSON lines of the same log, with their context", () => {
    expect(log.lines.some((line) => line.level === 30 && typeof line.context === 'string' && typeof line.msg === 'string')).toBe(true);
  });

  it('never writes a key, the vendor key, a credential header or a body', async () => {
    const messagesKeyHeader = await post(
      gateway,
      '/v1/messages',
      { model: 'messages-model', max_tokens: 64, messages: [{ role: 'user', content: SECRET_PROMPT }] },
      {
        authorization: '',
        'x-api-key': KEYS.member,
      },
    );
    const admin = await fetch(`${gateway.url}/admin/owners/team-a`, { headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` } });
    await admin.text();
    expect([messagesKeyHeader.status, admin.status]).toEqual([200, 200]);
    await log.one(messagesKeyHeader.requestId);
    await log.one(admin.headers.get('x-request-id')!);

    expect(log.calls().length).toBeGreaterThanOrEqual(8);
    for (const secret of [KEYS.all, KEYS.member, 'gk-not-a-real-key-0000', VENDOR_KEY, ADMIN_TOKEN_FOR_TESTS, SECRET_PROMPT, 'zebra-quartz']) {
      expect(log.text).not.toContain(secret);
    }
    expect(log.text).not.toMatch(/bearer/i);
    expect(log.text).not.toMatch(/authorization|x-api-key|"headers"|"body"/i);
  });
});

describe('LOG_LEVEL', () => {
  const log = new LogCapture();
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ settings: { logLevel: 'warn' }, logDestination: log });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('at warn leaves out the lines of calls that went well and keeps those of server errors', async () => {
    const fine = await post(gateway, '/v1/chat/completions', CHAT);
    const refused = await post(gateway, '/v1/chat/completions', CHAT, { authorization: 'Bearer gk-not-a-real-key-0000' });
    const failed = await post(gateway, '/v1/chat/completions', { ...CHAT, model: 'dead-model' });
    expect([fine.status, refused.status, failed.status]).toEqual([200, 401, 502]);

    expect(await log.one(failed.requestId)).toMatchObject({ level: 40, status: 502 });
    expect(log.of(fine.requestId)).toEqual([]);
    expect(log.of(refused.requestId)).toEqual([]);
    expect(log.lines.every((line) => line.level >= 40)).toBe(true);
  });
});
