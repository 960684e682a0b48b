import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LineRegistry } from '../src/upstream/line-registry';
import { register as globalRegistry } from 'prom-client';
import { GatewayHarness } from './support/gateway-harness';
import { until } from './support/until';
import { taskRow, VENDOR_C, VIDEO_TEST_SETTINGS } from './support/video-kit';

/**
 * GET /metrics (Prometheus text format, no key): requests by entry, model, status and
 * translation; upstream and gateway time; usage (a counter per unit) and cost matching the usage
 * records; requests in flight; each line's state; the usage writer; video tasks open and settled;
 * the build running.
 */

const KEY = 'gk-metrics-team-0001';
const WRONG_KEY = 'gk-metrics-nobody-9999';

function metricsConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-dead
    base_url: http://127.0.0.1:1
    api_key: unused
    timeout_ms: 2000
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions, responses]
    lines: [line-a]
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: dead-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-dead]
  - id: pair-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a, line-b]
  - id: video-c
    upstream_model: vendor-video-c-2
    interfaces: [video_c]
    lines: [line-a]
    prices: { output_seconds: 0.05, input_seconds: 0.02, input_image_count: 0.01 }
owners:
  - { id: team-metrics, kind: project, budget: 100 }
keys:
  - { key: ${KEY}, owner: team-metrics, models: ["*"] }
`;
}

// ---------------------------------------------------------------- Prometheus text

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function samplesOf(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name] = value;
    samples.push({ name: match[1], labels, value: match[3] === '+Inf' ? Infinity : Number(match[3]) });
  }
  return samples;
}

class Scrape {
  readonly samples: Sample[];

  constructor(readonly text: string) {
    this.samples = samplesOf(text);
  }

  /** The value of the sample with exactly these labels; undefined when there is none. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const wanted = Object.entries(labels);
    const found = this.samples.find(
      (sample) =>
        sample.name === name && Object.keys(sample.labels).length === wanted.length && wanted.every(([label, value]) => sample.labels[label] === value),
    );
    return found?.value;
  }

  /** Every sample of a metric. */
  all(name: string): Sample[] {
    return this.samples.filter((sample) => sample.name === name);
  }

  /** The `# TYPE` line's type of a metric. */
  typeOf(name: string): string | undefined {
    return new RegExp(`^# TYPE ${name} (\\w+)$`, 'm').exec(this.text)?.[1];
  }
}

async function scrape(gateway: GatewayHarness): Promise<Scrape> {
  const response = await fetch(`${gateway.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await response.text());
}

// ---------------------------------------------------------------- calls

interface Answer {
  status: number;
  text: string;
  requestId: string;
}

async function post(gateway: GatewayHarness, path: string, body: unknown, key = KEY): Promise<Answer> {
  const response = await fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text(), requestId: response.headers.get('x-request-id') ?? '' };
}

const CHAT = { model: 'chat-model', messages: [{ role: 'user', content: 'Count the stars' }] };
const MESSAGES = { model: 'chat-model', max_tokens: 64, messages: [{ role: 'user', content: 'Name three rivers' }] };

describe('GET /metrics', () => {
  let gateway: GatewayHarness;
  const requestIds: string[] = [];

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: metricsConfigYaml,
      settings: {
        video: VIDEO_TEST_SETTINGS,
        // Usage records wait for the test's flush, so the queue depth can be seen.
        usageWriter: { flushIntervalMs: 600_000, batchSize: 500, shutdownDeadlineMs: 1_000 },
        lines: { cooldownMs: 60_000, rateLimitCooldownMaxMs: 60_000, connections: 16, retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 0 } },
      },
    });
    const native = await post(gateway, '/v1/chat/completions', CHAT);
    const streamed = await post(gateway, '/v1/chat/completions', { ...CHAT, stream: true });
    const translated = await post(gateway, '/v1/messages', MESSAGES);
    const refused = await post(gateway, '/v1/chat/completions', CHAT, WRONG_KEY);
    const failed = await post(gateway, '/v1/chat/completions', { ...CHAT, model: 'dead-model' });
    expect([native.status, streamed.status, translated.status, refused.status, failed.status]).toEqual([200, 200, 200, 401, 502]);
    expect(streamed.text).toContain('data: [DONE]');
    requestIds.push(native.requestId, streamed.requestId, translated.requestId, refused.requestId, failed.requestId);
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await gateway?.stop();
  });

  it('answers without a key, in Prometheus text format, from a registry of its own', async () => {
    const metrics = await scrape(gateway);

    expect(metrics.typeOf('gateway_requests_total')).toBe('counter');
    expect(metrics.typeOf('gateway_upstream_headers_seconds')).toBe('histogram');
    expect(metrics.typeOf('gateway_in_flight_requests')).toBe('gauge');
    expect(metrics.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(globalRegistry.getSingleMetric('gateway_requests_total')).toBeUndefined();
  });

  it('shows the version and the Node.js version running as gateway_build_info 1', async () => {
    const metrics = await scrape(gateway);
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };

    expect(metrics.typeOf('gateway_build_info')).toBe('gauge');
    expect(metrics.all('gateway_build_info')).toEqual([
      { name: 'gateway_build_info', labels: expect.objectContaining({ version, node_version: process.versions.node }), value: 1 },
    ]);
  });

  it('counts requests by entry, model, status and whether they were translated', async () => {
    const metrics = await scrape(gateway);

    expect(metrics.value('gateway_requests_total', { entry: 'chat_completions', model: 'chat-model', status: '200', translated: 'false' })).toBe(2);
    expect(metrics.value('gateway_requests_total', { entry: 'messages', model: 'chat-model', status: '200', translated: 'true' })).toBe(1);
    expect(metrics.value('gateway_requests_total', { entry: 'chat_completions', model: 'dead-model', status: '502', translated: 'false' })).toBe(1);
    // Refused before the model was known: the route stands for the entry.
    expect(metrics.value('gateway_requests_total', { entry: '/v1/chat/completions', model: 'none', status: '401', translated: 'false' })).toBe(1);
  });

  it('leaves scrapes and probes out of the request counts', async () => {
    await fetch(`${gateway.url}/health/live`).then((response) => response.text());
    const metrics = await scrape(gateway);

    const routes = metrics.all('gateway_requests_total').map((sample) => sample.labels.entry);
    expect(routes).not.toContain('/metrics');
    expect(routes.some((entry) => entry.startsWith('/health'))).toBe(false);
  });

  it('times upstream headers and upstream answers by line, first bytes and gateway overhead by entry', async () => {
    const metrics = await scrape(gateway);

    expect(metrics.value('gateway_upstream_headers_seconds_count', { line: 'line-a' })).toBe(3);
    expect(metrics.value('gateway_upstream_duration_seconds_count', { line: 'line-a' })).toBe(3);
    // The dead line never answered: an upstream time, no header time.
    expect(metrics.value('gateway_upstream_duration_seconds_count', { line: 'line-dead' })).toBe(1);
    expect(metrics.value('gateway_upstream_headers_seconds_count', { line: 'line-dead' })).toBeUndefined();
    expect(metrics.value('gateway_overhead_seconds_count', { entry: 'chat_completions' })).toBe(3);
    expect(metrics.value('gateway_overhead_seconds_count', { entry: 'messages' })).toBe(1);
    expect(metrics.value('gateway_time_to_first_byte_seconds_count', { entry: 'chat_completions' })).toBe(3);
    expect(metrics.value('gateway_time_to_first_byte_seconds_count', { entry: '/v1/chat/completions' })).toBe(1);
    expect(metrics.value('gateway_request_duration_seconds_count', { entry: 'messages' })).toBe(1);
    // Every observation falls in the +Inf bucket; the sums are positive durations.
    expect(metrics.value('gateway_overhead_seconds_bucket', { entry: 'messages', le: '+Inf' })).toBe(1);
    expect(metrics.value('gateway_upstream_duration_seconds_sum', { line: 'line-a' })).toBeGreaterThan(0);
    // The upstream time is part of the request's time, never more.
    expect(metrics.value('gateway_upstream_duration_seconds_sum', { line: 'line-a' })).toBeLessThanOrEqual(
      (metrics.value('gateway_request_duration_seconds_sum', { entry: 'chat_completions' }) ?? 0) +
        (metrics.value('gateway_request_duration_seconds_sum', { entry: 'messages' }) ?? 0),
    );
  });

  it('shows the queued usage records, then counts tokens and cost exactly as the records bill them', async () => {
    expect((await scrape(gateway)).value('gateway_usage_writer_queue_depth')).toBe(4);

    const records = (await gateway.usageRecords()).filter((record) => record.model === 'chat-model');
    const metrics = await scrape(gateway);

    expect(records).toHaveLength(3);
    expect(metrics.value('gateway_usage_writer_queue_depth')).toBe(0);
    for (const figure of ['input_tokens', 'output_tokens']) {
      const billed = records.reduce((sum, record) => sum + (record.usage?.[figure] ?? 0), 0);
      expect(billed).toBeGreaterThan(0);
      expect(metrics.value('gateway_usage_tokens_total', { model: 'chat-model', figure })).toBe(billed);
    }
    const costNano = records.reduce((sum, record) => sum + record.costNano, 0n);
    expect(costNano).toBeGreaterThan(0n);
    expect(metrics.value('gateway_cost_total', { model: 'chat-model' })).toBeCloseTo(Number(costNano) / 1e9, 12);
    // A call without a usage record bills nothing.
    expect(metrics.value('gateway_cost_total', { model: 'dead-model' })).toBeUndefined();
  });

  it('shows no request in flight once the calls are over, and each line in flight and cooling', async () => {
    await until(async () => (await scrape(gateway)).value('gateway_in_flight_requests') === 0, 'no request in flight');
    const metrics = await scrape(gateway);

    expect(metrics.value('gateway_line_in_flight', { line: 'line-a' })).toBe(0);
    expect(metrics.value('gateway_line_in_flight', { line: 'line-dead' })).toBe(0);
    expect(metrics.value('gateway_line_cooling', { line: 'line-a' })).toBe(0);
    // The refused connection of the failed call cooled the dead line (for a minute, in this suite).
    expect(metrics.value('gateway_line_cooling', { line: 'line-dead' })).toBe(1);
    expect(metrics.value('gateway_line_rate_limited', { line: 'line-a' })).toBe(0);
  });

  it('counts the attempts on each line by outcome, and the failovers from a line by what made the call go on', async () => {
    const before = await scrape(gateway);
    gateway.simulator.failNext('/v1/chat/completions', { status: 503 });
    expect((await post(gateway, '/v1/chat/completions', { ...CHAT, model: 'pair-model' })).status).toBe(200);
    const after = await scrape(gateway);
    const added = (name: string, labels: Record<string, string>) => (after.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0);

    expect(added('gateway_line_attempts_total', { line: 'line-a', outcome: '5xx' })).toBe(1);
    expect(added('gateway_line_failovers_total', { line: 'line-a', outcome: '5xx' })).toBe(1);
    expect(added('gateway_line_attempts_total', { line: 'line-b', outcome: 'answered' })).toBe(1);
    expect(added('gateway_line_failovers_total', { line: 'line-b', outcome: 'answered' })).toBe(0);
    // The dead model's call earlier: refused once, with no line to go on to.
    expect(after.value('gateway_line_attempts_total', { line: 'line-dead', outcome: 'refused' })).toBe(1);
    expect(after.value('gateway_line_failovers_total', { line: 'line-dead', outcome: 'refused' })).toBeUndefined();
    await gateway.flushUsage();
  });

  it('shows a line whose vendor answered 429 with Retry-After as rate limited while it waits', async () => {
    gateway.simulator.failNext('/v1/chat/completions', { status: 429, headers: { 'retry-after': '30' } });
    expect((await post(gateway, '/v1/chat/completions', CHAT)).status).toBe(429);

    expect((await scrape(gateway)).value('gateway_line_rate_limited', { line: 'line-a' })).toBe(1);
    gateway.app.get(LineRegistry).get('line-a').rateLimitedUntil = 0;
    expect((await scrape(gateway)).value('gateway_line_rate_limited', { line: 'line-a' })).toBe(0);
    await gateway.flushUsage(); // the 429's record: the next test counts what waits
  });

  it('counts failed usage writes while the database is away', async () => {
    const before = (await scrape(gateway)).value('gateway_usage_writer_failed_writes_total');
    await post(gateway, '/v1/chat/completions', CHAT);
    jest.spyOn(gateway.dataSource, 'transaction').mockRejectedValueOnce(new Error('database away'));
    await gateway.flushUsage();
    const during = await scrape(gateway);
    jest.restoreAllMocks();
    await gateway.flushUsage();
    const after = await scrape(gateway);

    expect(before).toBe(0);
    expect(during.value('gateway_usage_writer_failed_writes_total')).toBe(1);
    expect(during.value('gateway_usage_writer_queue_depth')).toBe(1);
    expect(after.value('gateway_usage_writer_queue_depth')).toBe(0);
  });

  it('never puts a key or a request id in a label', async () => {
    const metrics = await scrape(gateway);

    expect(metrics.text).not.toContain(KEY);
    expect(metrics.text).not.toContain(WRONG_KEY);
    for (const requestId of requestIds) expect(metrics.text).not.toContain(requestId);
  });

  describe('video tasks', () => {
    let taskId: string;
    let submitRequestId: string;

    beforeAll(async () => {
      const answer = await post(gateway, VENDOR_C.submit, { model: 'video-c', duration: 5, content: [{ type: 'text', text: 'a kite over a beach' }] });
      expect(answer.status).toBe(200);
      taskId = JSON.parse(answer.text).task_id;
      submitRequestId = answer.requestId;
    });

    it('shows open tasks by status, read from the database', async () => {
      const metrics = await scrape(gateway);

      expect(metrics.value('gateway_video_tasks_open', { status: 'queued' })).toBe(1);
      expect(metrics.value('gateway_requests_total', { entry: 'video_c', model: 'video-c', status: '200', translated: 'false' })).toBe(1);
    });

    it('still answers with every other metric when the database does not', async () => {
      // Only the scrape's count fails: the video poller may query the same data source meanwhile.
      const query = gateway.dataSource.query.bind(gateway.dataSource);
      jest
        .spyOn(gateway.dataSource, 'query')
        .mockImplementation((sql: string, ...rest: unknown[]) =>
          sql.includes('FROM video_task WHERE settled_at IS NULL') ? Promise.reject(new Error('database away')) : query(sql, ...(rest as [])),
        );
      const metrics = await scrape(gateway);
      jest.restoreAllMocks();

      expect(metrics.all('gateway_video_tasks_open')).toEqual([]);
      expect(metrics.value('gateway_requests_total', { entry: 'messages', model: 'chat-model', status: '200', translated: 'true' })).toBe(1);
    });

    it('counts a settled task by its settlement, and its usage and cost as its record bills them', async () => {
      const upstreamId = (await taskRow(gateway, taskId)).upstream_task_id;
      gateway.simulator.video.succeed(upstreamId, { output_seconds: 5, input_seconds: 0, input_image_count: 0 });
      const query = await fetch(`${gateway.url}${VENDOR_C.query(taskId)}`, { headers: { authorization: `Bearer ${KEY}` } });
      await query.text();
      expect(query.status).toBe(200);

      const record = await gateway.usageRecord(submitRequestId);
      const metrics = await scrape(gateway);

      expect(record?.costNano).toBe(250_000_000n);
      expect(metrics.value('gateway_video_tasks_settled_total', { settlement: 'usage', status: 'succeeded' })).toBe(1);
      expect(metrics.value('gateway_video_tasks_open', { status: 'queued' })).toBeUndefined();
      expect(metrics.value('gateway_usage_seconds_total', { model: 'video-c', figure: 'output_seconds' })).toBe(5);
      // Seconds are never counted as tokens: each unit has its own counter.
      expect(metrics.all('gateway_usage_tokens_total').filter((sample) => sample.labels.model === 'video-c')).toEqual([]);
      expect(metrics.value('gateway_cost_total', { model: 'video-c' })).toBeCloseTo(0.25, 12);
      expect(
        metrics.value('gateway_requests_total', { entry: '/vendor-c/v2/query/video_generation/:taskId', model: 'none', status: '200', translated: 'false' }),
      ).toBe(1);
    });
  });
});
