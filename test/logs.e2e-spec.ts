import { AdminService } from '../src/admin/admin.service';
import { VideoReconciler } from '../src/video/video-reconciler';
import { VideoTaskStore } from '../src/video/video-task.store';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { KEYS, VENDOR_KEY } from './support/test-config';
import { until } from './support/until';
import { taskRow, VENDOR_C, VIDEO_KEYS, VIDEO_TEST_SETTINGS, videoConfigYaml } from './support/video-kit';

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

  /** Where the log stands now: `since` reads the lines written after it. */
  mark(): number {
    return this.text.length;
  }

  since(mark: number): LogLine[] {
    return this.text
      .slice(mark)
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
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

async function post(gateway: GatewayHarness, path: string, body: unknown, headers: Record<string, string> = {}, key: string = KEYS.all): Promise<Answer> {
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
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

/** The lines at warn or above that name no request: none may be written about a request. */
function unnamed(lines: LogLine[]): LogLine[] {
  return lines.filter((line) => line.level >= 40 && (typeof line.request_id !== 'string' || line.request_id === ''));
}

/** What PostgreSQL says of a value that does not fit its column: the record, not the database, is at fault. */
function dataError(): Error {
  return Object.assign(new Error('value out of range for type smallint'), { code: '22003' });
}

describe('lines at warn and above about a request', () => {
  const log = new LogCapture();
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: videoConfigYaml,
      // Usage records wait for the test's flush; video tasks for the test's reconciler rounds.
      settings: { logLevel: 'info', video: VIDEO_TEST_SETTINGS, usageWriter: { flushIntervalMs: 600_000, batchSize: 500, shutdownDeadlineMs: 1_000 } },
      logDestination: log,
    });
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await gateway.flushUsage();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('name the request on the error line of an unexpected failure, beside its call line', async () => {
    jest.spyOn(gateway.app.get(AdminService), 'owner').mockRejectedValueOnce(new TypeError('owner view lost a member'));
    const mark = log.mark();
    const response = await fetch(`${gateway.url}/admin/owners/team-a`, { headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` } });
    await response.text();
    const requestId = response.headers.get('x-request-id')!;
    expect(response.status).toBe(500);
    await log.one(requestId);

    const lines = log.since(mark);
    expect(lines.find((line) => line.level === 50)).toMatchObject({
      context: 'Gateway',
      request_id: requestId,
      err: { type: 'TypeError', message: 'owner view lost a member', stack: expect.stringContaining('owner view lost a member') },
    });
    expect(unnamed(lines)).toEqual([]);
  });

  it('name the request when its upstream breaks off mid-stream', async () => {
    gateway.simulator.failNext('/v1/chat/completions', { kind: 'reset-mid-stream', afterEvents: 2 });
    const mark = log.mark();
    const answer = await post(gateway, '/v1/chat/completions', { ...CHAT, stream: true }, {}, VIDEO_KEYS.teamA1);
    expect(answer.status).toBe(200);
    expect(answer.text).not.toContain('data: [DONE]');

    expect(await log.one(answer.requestId)).toMatchObject({ stream: true, error_code: expect.any(String) });
    expect(unnamed(log.since(mark))).toEqual([]);
  });

  it('name the request of a usage record the database refuses and sets aside', async () => {
    const answer = await post(gateway, '/v1/chat/completions', CHAT, {}, VIDEO_KEYS.teamA1);
    expect(answer.status).toBe(200);
    jest.spyOn(gateway.dataSource, 'transaction').mockRejectedValue(dataError());
    const mark = log.mark();
    await gateway.flushUsage();
    jest.restoreAllMocks();

    const lines = log.since(mark);
    expect(lines.filter((line) => line.level === 50)).toEqual([
      expect.objectContaining({ context: 'UsageWriter', request_id: answer.requestId, msg: expect.stringContaining('refused by the database and set aside') }),
    ]);
    expect(unnamed(lines)).toEqual([]);
  });

  it("name the query's request and the task when a video task's state cannot be recorded, and the submit's when its background look fails", async () => {
    const submit = await post(gateway, VENDOR_C.submit, { model: 'video-c', duration: 5, content: [{ type: 'text', text: 'a kite' }] }, {}, VIDEO_KEYS.teamA1);
    expect(submit.status).toBe(200);
    const taskId = JSON.parse(submit.text).task_id as string;
    gateway.simulator.video.succeed((await taskRow(gateway, taskId)).upstream_task_id, { output_seconds: 5, input_seconds: 0, input_image_count: 0 });
    const store = gateway.app.get(VideoTaskStore);
    jest.spyOn(store, 'settle').mockRejectedValue(new Error('database away'));

    const queried = log.mark();
    const query = await fetch(`${gateway.url}${VENDOR_C.query(taskId)}`, { headers: { authorization: `Bearer ${VIDEO_KEYS.teamA1}` } });
    await query.text();
    const queryId = query.headers.get('x-request-id')!;
    expect(query.status).toBe(200);
    await log.one(queryId);
    const queryLines = log.since(queried);

    jest.spyOn(store, 'pollFailed').mockRejectedValue(new Error('database away'));
    await gateway.dataSource.query(`UPDATE video_task SET next_poll_at = now() - interval '1 second' WHERE id = $1`, [taskId]);
    const looked = log.mark();
    expect(await gateway.app.get(VideoReconciler).runOnce()).toBe(1);
    const roundLines = log.since(looked);

    expect(queryLines.filter((line) => line.level === 40)).toEqual([
      expect.objectContaining({ context: 'VideoTasks', request_id: queryId, task_id: taskId, submit_request_id: submit.requestId }),
    ]);
    expect(roundLines.filter((line) => line.level === 40)).toEqual([
      expect.objectContaining({ context: 'VideoReconciler', request_id: submit.requestId, task_id: taskId }),
    ]);
    expect(unnamed([...queryLines, ...roundLines])).toEqual([]);
  });
});
