import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { nanoToDecimal } from '../../src/config/money';
import { MIGRATIONS } from '../../src/database/data-source';
import { UpstreamSimulator } from '../simulator/upstream-simulator';
import { GatewayProcess, launchGateway, START_PATIENCE_MS } from '../support/gateway-process';
import { Nginx } from '../support/nginx';
import { PgCluster } from '../support/pg-cluster';
import { VENDOR_KEY } from '../support/test-config';
import { until } from '../support/until';
import { VENDOR_C } from '../support/video-kit';

/**
 * Two gateway processes on one real PostgreSQL behind nginx, as operators
 * run replicas. Both start at once on an empty database (the migration race); then a budget
 * is spent from both sides at once, a key is disabled through one replica and used on the
 * other, and video tasks move between the replicas while both background reconcilers run.
 *
 * Every bound below is a bound of correctness (how stale a replica may be), not of speed.
 */

const ADMIN_TOKEN = 'replicas-admin-token';
const KEY = 'gk-replicas-team-a-0001';
const VIDEO_KEY = 'gk-replicas-video-0001';

/** The settings the bounds are stated with; the balance and flush values are the defaults. */
const BALANCE_CACHE_TTL_MS = 1_000;
const USAGE_FLUSH_INTERVAL_MS = 200;
const KEY_CACHE_TTL_MS = 1_500;
/**
 * The catalog check runs rarely here, so a change that reaches the other replica in time came
 * by LISTEN/NOTIFY; the periodic check is tested on the embedded database (admin-catalog).
 */
const CATALOG_CHECK_MS = 60_000;
/** A catalog change reaches every replica within this (the bound). */
const CATALOG_PROPAGATION_MS = 2_000;
/**
 * Allowance on top of the TTLs for the work between "stale" and "refused": the batched write
 * itself (and a batch already being written ahead of it), the balance or key read, timers
 * that fire late on two busy cores, and millisecond rounding of the stored times.
 */
const SCHEDULING_SLACK_MS = 500;
/**
 * The longest a replica may go on admitting an owner's calls on a balance that does not yet show
 * spend metered elsewhere: that spend reaches the database within one flush interval, and a
 * cached balance is at most one TTL old.
 */
const STALE_BALANCE_WINDOW_MS = BALANCE_CACHE_TTL_MS + USAGE_FLUSH_INTERVAL_MS + SCHEDULING_SLACK_MS;

/** The budget load: concurrent clients through nginx, each call held this long upstream. */
const CLIENTS = 32;
const CALL_DELAY_MS = 200;
const BUDGET_CALLS = 400;
/** A refused client waits this long before it tries again (the load keeps probing both replicas). */
const REFUSED_PAUSE_MS = 50;

/** Signs the budget alerts the replicas POST to the suite's receiver. */
const ALERT_SECRET = 'replicas-alert-secret-0123456789';

/** The budget alerts the replicas delivered, as the receiver got them. */
interface AlertDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  event: { id: string; owner_id: string; threshold: number; used: number; budget: number };
}

/** A webhook receiver that keeps every delivery and answers 204. */
async function alertReceiver(): Promise<{ url: string; deliveries: AlertDelivery[]; stop: () => Promise<void> }> {
  const deliveries: AlertDelivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      deliveries.push({ headers: request.headers, body, event: JSON.parse(body) });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`;
  const stop = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url, deliveries, stop };
}

function signedAlert(delivery: AlertDelivery): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery.headers['x-gateway-signature']));
  if (!match) return false;
  return timingSafeEqual(createHmac('sha256', ALERT_SECRET).update(`${match[1]}.${delivery.body}`).digest(), Buffer.from(match[2], 'hex'));
}

/** Video-c's price per output second (0.05), in nano-units. */
const VIDEO_C_PER_SECOND = 50_000_000n;

function configYaml(simulatorUrl: string, slowSimulatorUrl: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulatorUrl}
    api_key: \${REPLICAS_LINE_KEY}
  - id: line-slow
    base_url: ${slowSimulatorUrl}
    api_key: \${REPLICAS_LINE_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2.5, output_tokens: 10 }
  - id: slow-chat
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-slow]
    prices: { input_tokens: 2.5, output_tokens: 10 }
  - id: video-c
    upstream_model: vendor-video-c-2
    interfaces: [video_c]
    lines: [line-a]
    prices: { output_seconds: 0.05, input_seconds: 0.02, input_image_count: 0.01 }
owners:
  - { id: team-a, kind: project, budget: 100 }
  - { id: video-team, kind: project, budget: 100 }
keys:
  - { key: ${KEY}, owner: team-a, models: ["*"] }
  - { key: ${VIDEO_KEY}, owner: video-team, models: ["*"] }
`;
}

// ---------------------------------------------------------------- HTTP

interface Answer {
  status: number;
  body: any;
  text: string;
  requestId: string;
}

async function send(baseUrl: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, auth: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text, requestId: response.headers.get('x-request-id') ?? '' };
}

const CHAT_BODY = { messages: [{ role: 'user', content: 'Tally the ledger' }] };

function chat(baseUrl: string, key: string, model = 'chat-model'): Promise<Answer> {
  return send(baseUrl, 'POST', '/v1/chat/completions', key, { model, ...CHAT_BODY });
}

function admin(baseUrl: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<Answer> {
  return send(baseUrl, method, path, ADMIN_TOKEN, body);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- metrics

/** Sum of the samples of `name` whose labels include `labels`, in one replica's /metrics text. */
function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) found[pair[1]] = pair[2];
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) sum += Number(match[3]);
  }
  return sum;
}

async function metricsOf(replica: GatewayProcess): Promise<string> {
  const response = await fetch(`${replica.url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

/** Chat calls of `model` answered with `status`, per replica. */
async function chatCounts(replicas: GatewayProcess[], model: string, status: string): Promise<number[]> {
  return Promise.all(
    replicas.map(async (replica) => metricSum(await metricsOf(replica), 'gateway_requests_total', { entry: 'chat_completions', model, status })),
  );
}

/** Video tasks settled by the replicas together, with these labels. */
async function settledTasks(replicas: GatewayProcess[], labels: Record<string, string>): Promise<number> {
  const counts = await Promise.all(replicas.map(async (replica) => metricSum(await metricsOf(replica), 'gateway_video_tasks_settled_total', labels)));
  return counts.reduce((sum, count) => sum + count, 0);
}

// ---------------------------------------------------------------- budget arithmetic

/** One billed call as its usage record tells it, times in epoch milliseconds. */
interface BilledCall {
  startedAt: number;
  endedAt: number;
  costNano: bigint;
}

/**
 * What the records of a budget run show. The budget is reached at the moment the metered
 * spend first covers it: the end of the call that completed it, taking calls in the order they
 * ended. The calls after that one are the overshoot; `inFlight` of them had started by that
 * moment, `startedAfter` started after it; `late` are those that started more than
 * STALE_BALANCE_WINDOW_MS after it, which the bound forbids.
 */
interface Overshoot {
  reachedAt: number;
  calls: number;
  inFlight: number;
  startedAfter: number;
  late: BilledCall[];
  lastStartAfterReachedMs: number;
}

function overshootOf(calls: BilledCall[], budgetNano: bigint): Overshoot {
  const byEnd = [...calls].sort((a, b) => a.endedAt - b.endedAt);
  let spent = 0n;
  const within = byEnd.findIndex((call) => (spent += call.costNano) >= budgetNano);
  if (within < 0) throw new Error(`the records never reach the budget (${spent} of ${budgetNano})`);
  const reachedAt = byEnd[within].endedAt;
  const over = byEnd.slice(within + 1);
  return {
    reachedAt,
    calls: over.length,
    inFlight: over.filter((call) => call.startedAt <= reachedAt).length,
    startedAfter: over.filter((call) => call.startedAt > reachedAt).length,
    late: over.filter((call) => call.startedAt > reachedAt + STALE_BALANCE_WINDOW_MS),
    lastStartAfterReachedMs: Math.max(...calls.map((call) => call.startedAt)) - reachedAt,
  };
}

/** Cost of a chat call from its reported usage at 2.5 / 10 per 1M tokens, rounded half up (pricing.ts). */
function chatCostNano(usage: { prompt_tokens: number; completion_tokens: number }): bigint {
  const perMillion = BigInt(usage.prompt_tokens) * 2_500_000_000n + BigInt(usage.completion_tokens) * 10_000_000_000n;
  return (perMillion + 500_000n) / 1_000_000n;
}

// ---------------------------------------------------------------- suite

describe('two replicas on one PostgreSQL behind nginx', () => {
  let cluster: PgCluster;
  let simulator: UpstreamSimulator;
  let slowSimulator: UpstreamSimulator;
  let folder: string;
  let replicas: GatewayProcess[] = [];
  const startFailures: string[] = [];
  let nginx: Nginx;
  let databaseUrl: string;
  let db: Client;
  let alerts: Awaited<ReturnType<typeof alertReceiver>>;

  beforeAll(async () => {
    alerts = await alertReceiver();
    cluster = await PgCluster.create();
    databaseUrl = await cluster.createDatabase('replicas');
    simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    // Every chat call on the slow line is held upstream, so calls are in flight while the budget runs out.
    slowSimulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    slowSimulator.failNext('/v1/chat/completions', { kind: 'delay', ms: CALL_DELAY_MS }, Number.MAX_SAFE_INTEGER);
    const [simulatorUrl, slowSimulatorUrl] = await Promise.all([simulator.start(), slowSimulator.start()]);
    folder = await mkdtemp(join(tmpdir(), 'gateway-replicas-'));
    const config = join(folder, 'gateway.yaml');
    await writeFile(config, configYaml(simulatorUrl, slowSimulatorUrl));
    const env = {
      GATEWAY_CONFIG: config,
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
      REPLICAS_LINE_KEY: VENDOR_KEY,
      LOG_LEVEL: 'warn',
      BALANCE_CACHE_TTL_MS: String(BALANCE_CACHE_TTL_MS),
      USAGE_FLUSH_INTERVAL_MS: String(USAGE_FLUSH_INTERVAL_MS),
      KEY_CACHE_TTL_MS: String(KEY_CACHE_TTL_MS),
      CATALOG_CHECK_MS: String(CATALOG_CHECK_MS),
      // Every client here is 127.0.0.1 (nginx too): the refused-key limiter (tested elsewhere) would
      // answer 429 to the key suite's polls of a disabled key.
      KEY_FAILURE_LIMIT: '0',
      // Both background reconcilers look at open tasks every 50 ms, so they race each other and the clients.
      VIDEO_RECONCILE_INTERVAL_MS: '50',
      VIDEO_FIRST_POLL_DELAY_MS: '50',
      VIDEO_MAX_POLL_DELAY_MS: '200',
      ALERT_WEBHOOK_URL: alerts.url,
      ALERT_WEBHOOK_SECRET: ALERT_SECRET,
      ALERT_DELIVERY_MS: '100',
    };
    // Both start at once on an empty database: the migration race of point 1. The server is frozen
    // while they boot, so both wait in its listen queue and reach it in the same instant: each
    // then finds no migrations table and every migration pending, and only the lock keeps them
    // from running the same migrations twice.
    await cluster.pause();
    try {
      replicas = await Promise.all([launchGateway(env), launchGateway(env)]);
      await until(
        async () => (await Promise.all(replicas.map((replica) => !replica.running || cluster.isConnected(replica.child.pid!)))).every(Boolean),
        'both replicas waiting for the database',
        START_PATIENCE_MS,
      ).catch((error) => startFailures.push(String(error)));
    } finally {
      await cluster.resume();
    }
    const started = await Promise.allSettled(replicas.map((replica) => replica.waitUntilReady()));
    startFailures.push(...started.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])));
    nginx = await Nginx.start(replicas.map((replica) => replica.url));
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end().catch(() => undefined);
    await nginx?.stop();
    await Promise.all(replicas.map((replica) => replica.kill()));
    await simulator?.stop();
    await slowSimulator?.stop();
    await alerts?.stop();
    await cluster?.destroy();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  async function ownerMoney(ownerId: string): Promise<{ budget: bigint | null; spent: bigint; reserved: bigint }> {
    const { rows } = await db.query('SELECT budget_nano, spent_nano, reserved_nano FROM quota_owner WHERE id = $1', [ownerId]);
    const row = rows[0];
    return { budget: row.budget_nano === null ? null : BigInt(row.budget_nano), spent: BigInt(row.spent_nano), reserved: BigInt(row.reserved_nano) };
  }

  async function billedCalls(ownerId: string): Promise<BilledCall[]> {
    const { rows } = await db.query('SELECT started_at, duration_ms, cost_nano FROM usage_record WHERE owner_id = $1 AND cost_nano > 0', [ownerId]);
    return rows.map((row) => {
      const startedAt = new Date(row.started_at).getTime();
      return { startedAt, endedAt: startedAt + Number(row.duration_ms), costNano: BigInt(row.cost_nano) };
    });
  }

  async function recordCount(ownerId: string): Promise<number> {
    const { rows } = await db.query('SELECT count(*)::int AS count FROM usage_record WHERE owner_id = $1', [ownerId]);
    return rows[0].count;
  }

  /** A new owner with a budget, and a key of it, made through replica A's admin API. */
  async function ownerWithKey(id: string, budgetNano: bigint): Promise<string> {
    const owner = await admin(replicas[0].url, 'POST', '/admin/owners', { id, kind: 'project', budget: nanoToDecimal(budgetNano) });
    expect(owner.status).toBe(201);
    expect(owner.body.budget_nano).toBe(budgetNano.toString());
    const key = await admin(replicas[0].url, 'POST', '/admin/keys', { owner: id, models: ['*'] });
    expect(key.status).toBe(201);
    return key.body.key as string;
  }

  /** What one chat call costs (every call of this suite sends the same body, and usage follows the body). */
  async function costOfOneCall(): Promise<bigint> {
    const probe = await chat(nginx.url, KEY);
    expect(probe.status).toBe(200);
    const cost = chatCostNano(probe.body.usage);
    expect(cost).toBeGreaterThan(0n);
    return cost;
  }

  /** What `GET /v1/key` on one replica says is left of the key's requests this minute. */
  async function remainingRequests(url: string, key: string): Promise<number> {
    return (await send(url, 'GET', '/v1/key', key)).body.key.limits_remaining.requests_per_minute;
  }

  async function remainingConcurrent(url: string, key: string): Promise<number> {
    return (await send(url, 'GET', '/v1/key', key)).body.key.limits_remaining.concurrent_requests;
  }

  /** Waits, when needed, for a minute with 25 s left: a count taken across a minute's end slides out during the test. */
  async function awayFromMinuteEnd(): Promise<void> {
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 35_000) await sleep(60_000 - intoMinute + 100);
  }

  // Rule: replicas starting together on an empty database migrate it once; both become ready.
  it('migrate once when both start together on an empty database, and both become ready', async () => {
    expect(startFailures).toEqual([]);
    expect(replicas.map((replica) => replica.running)).toEqual([true, true]);
    const migrations = await db.query('SELECT name FROM migrations ORDER BY name');
    expect(migrations.rows.map((row) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name).sort());
    const repeated = await db.query('SELECT name, count(*)::int AS count FROM migrations GROUP BY name HAVING count(*) > 1');
    expect(repeated.rows).toEqual([]);
    // The configuration's owners and keys, applied by both at start, exist once.
    const owners = await db.query("SELECT id FROM quota_owner WHERE id IN ('team-a', 'video-team') ORDER BY id");
    expect(owners.rows.map((row) => row.id)).toEqual(['team-a', 'video-team']);
    const keys = await db.query("SELECT owner_id, count(*)::int AS count FROM api_key WHERE source = 'config' GROUP BY owner_id ORDER BY owner_id");
    expect(keys.rows).toEqual([
      { owner_id: 'team-a', count: 1 },
      { owner_id: 'video-team', count: 1 },
    ]);
  });

  it('serve calls through nginx from both replicas', async () => {
    const before = await chatCounts(replicas, 'chat-model', '200');
    const statuses: number[] = [];
    for (let index = 0; index < 10; index++) statuses.push((await chat(nginx.url, KEY)).status);
    expect(statuses).toEqual(Array(10).fill(200));
    const after = await chatCounts(replicas, 'chat-model', '200');
    const served = after.map((count, index) => count - before[index]);
    expect(served[0] + served[1]).toBe(10);
    expect(served[0]).toBeGreaterThan(0);
    expect(served[1]).toBeGreaterThan(0);
  });

  // Rule (docs/operations.md "Several replicas"): a budget is overshot by at most the calls in flight when it
  // was reached plus the calls started within BALANCE_CACHE_TTL_MS + USAGE_FLUSH_INTERVAL_MS
  // (+ slack) after it, on all replicas together; spend is exactly the sum of the records.
  it('hold a budget across replicas: many concurrent calls from both overshoot only by the calls in flight and those of the stale-balance window', async () => {
    const cost = await costOfOneCall();
    const budget = BigInt(BUDGET_CALLS) * cost;
    const key = await ownerWithKey('budget-team', budget);
    const before = await chatCounts(replicas, 'slow-chat', '200');

    // Load until every client is refused and nothing has been admitted for longer than the window.
    const quietMs = STALE_BALANCE_WINDOW_MS + 500;
    const deadline = Date.now() + 90_000;
    const statuses = new Map<number, number>();
    const refusedClients = new Set<number>();
    let admitted = 0;
    let lastAdmittedAt = Date.now();
    let stop = false;
    const client = async (index: number): Promise<void> => {
      try {
        while (!stop) {
          const answer = await chat(nginx.url, key, 'slow-chat');
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 200) {
            admitted += 1;
            lastAdmittedAt = Date.now();
          } else {
            if (answer.status === 402) {
              expect(answer.body.error).toMatchObject({ code: 'insufficient_quota' });
              refusedClients.add(index);
            }
            await sleep(REFUSED_PAUSE_MS);
          }
          const quiet = refusedClients.size === CLIENTS && Date.now() - lastAdmittedAt > quietMs;
          // A gateway that never refuses is stopped at four budgets; the assertions below then fail.
          if (quiet || admitted > 4 * BUDGET_CALLS || Date.now() > deadline) stop = true;
        }
      } finally {
        stop = true;
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
    expect([...statuses.keys()].sort()).toEqual([200, 402]);

    // After the window, each replica refuses on its own.
    for (const replica of replicas) expect((await chat(replica.url, key, 'slow-chat')).status).toBe(402);

    // Every admitted call is billed once, and the owner's spend is exactly the sum of its records.
    await until(async () => (await recordCount('budget-team')) === admitted, `${admitted} usage records of budget-team`);
    const calls = await billedCalls('budget-team');
    expect(calls).toHaveLength(admitted);
    expect(new Set(calls.map((call) => call.costNano))).toEqual(new Set([cost]));
    const money = await ownerMoney('budget-team');
    expect(money.spent).toBe(calls.reduce((sum, call) => sum + call.costNano, 0n));
    expect(money.reserved).toBe(0n);
    expect(money.spent).toBeGreaterThanOrEqual(budget);

    // Both replicas took a share of the load.
    const after = await chatCounts(replicas, 'slow-chat', '200');
    const served = after.map((count, index) => count - before[index]);
    expect(served[0] + served[1]).toBe(admitted);
    expect(Math.min(...served)).toBeGreaterThan(admitted / 4);

    // The bound: no billed call started after the window, so the overshoot is the calls in flight
    // when the budget was reached plus the calls started within the window after it.
    const overshoot = overshootOf(calls, budget);
    expect({ startedAfterTheWindow: overshoot.late.length, lastStartAfterReachedMs: overshoot.lastStartAfterReachedMs }).toMatchObject({
      startedAfterTheWindow: 0,
    });
    expect(overshoot.calls).toBe(admitted - BUDGET_CALLS);
    expect(money.spent - budget).toBe(BigInt(overshoot.calls) * cost);
    // The same bound as a figure: a client's calls follow one another, each lasts at least
    // CALL_DELAY_MS, and its overshooting calls end after the budget was reached and start before
    // the window closes: at most floor(window / CALL_DELAY_MS) + 2 of them per client.
    expect(Math.min(...calls.map((call) => call.endedAt - call.startedAt))).toBeGreaterThanOrEqual(CALL_DELAY_MS);
    const perClient = Math.floor(STALE_BALANCE_WINDOW_MS / CALL_DELAY_MS) + 2;
    expect(overshoot.calls).toBeLessThanOrEqual(CLIENTS * perClient);
    process.stdout.write(
      `budget across replicas: budget ${BUDGET_CALLS} calls, ${CLIENTS} clients, calls held ${CALL_DELAY_MS} ms upstream; ` +
        `admitted ${admitted} (${served.join(' + ')}), overshoot ${overshoot.calls} calls = ${overshoot.inFlight} in flight + ${overshoot.startedAfter} started after; ` +
        `last billed call started ${overshoot.lastStartAfterReachedMs} ms after the budget was reached (window ${STALE_BALANCE_WINDOW_MS} ms); ` +
        `bound ${CLIENTS} x ${perClient} = ${CLIENTS * perClient} calls\n`,
    );
  });

  // Rule: the window holds for a replica that sat idle on an old balance: the spend reaches the
  // database within one flush interval and its cached balance expires after BALANCE_CACHE_TTL_MS,
  // so once the window has passed it refuses.
  it('refuse on a replica that cached the balance before the budget was spent on the other, once the window has passed', async () => {
    const cost = await costOfOneCall();
    const budgetCalls = 20;
    const budget = BigInt(budgetCalls) * cost;
    const key = await ownerWithKey('idle-team', budget);
    const [a, b] = replicas;

    // A admits one call and writes its record: A now holds the owner's balance as that write left
    // it, far from the budget, and has nothing more to write that would refresh it.
    expect((await chat(a.url, key)).status).toBe(200);
    await until(async () => (await ownerMoney('idle-team')).spent === cost, "the record of A's call in the database");
    // B spends the rest at once, from 8 concurrent clients, until it refuses each of them. B counts
    // what it metered itself at once, so by its first refusal the metered spend covers the budget.
    let firstRefusalAt = Infinity;
    const spenders = Array.from({ length: 8 }, async () => {
      for (;;) {
        const answer = await chat(b.url, key);
        if (answer.status === 402) {
          firstRefusalAt = Math.min(firstRefusalAt, Date.now());
          return;
        }
        expect(answer.status).toBe(200);
      }
    });
    await Promise.all(spenders);

    // The first call A sees after the window is refused, and so is everything after it; nothing
    // waits for B's records to be written first.
    await sleep(Math.max(0, firstRefusalAt + STALE_BALANCE_WINDOW_MS - Date.now()));
    const sentAt = Date.now();
    const first = await chat(a.url, key);
    expect(first.status).toBe(402);
    expect(first.body.error).toMatchObject({ code: 'insufficient_quota' });
    const through = await Promise.all(Array.from({ length: 6 }, () => chat(nginx.url, key)));
    expect(through.map((answer) => answer.status)).toEqual(Array(6).fill(402));

    // The records confirm that A's call came after the window: the budget was reached by then.
    await until(async () => (await ownerMoney('idle-team')).spent >= budget, 'the spend of idle-team in the database');
    const { reachedAt } = overshootOf(await billedCalls('idle-team'), budget);
    expect(sentAt - reachedAt).toBeGreaterThanOrEqual(STALE_BALANCE_WINDOW_MS);
  });

  // Rule (docs/operations.md "Admin API"): a key disabled through one replica stops working there at once and on
  // the others within KEY_CACHE_TTL_MS; enabling works the same way.
  it('refuse a key disabled through one replica on the other within KEY_CACHE_TTL_MS, and accept it there again within the TTL once enabled', async () => {
    const [a, b] = replicas;
    const created = await admin(a.url, 'POST', '/admin/keys', { owner: 'team-a', models: ['*'] });
    expect(created.status).toBe(201);
    const key: string = created.body.key;
    const keyId: string = created.body.id;

    // B serves a call with the key just before: B holds it, enabled, in its cache.
    expect((await chat(b.url, key)).status).toBe(200);
    expect((await chat(a.url, key)).status).toBe(200);

    const disabledAt = Date.now();
    const disabled = await admin(a.url, 'POST', `/admin/keys/${keyId}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body.enabled).toBe(false);
    // The replica that answered refuses at once.
    const onA = await chat(a.url, key);
    expect(onA.status).toBe(401);
    expect(onA.body.error).toMatchObject({ code: 'invalid_api_key' });

    const refusedAfter = await firstAnswer(b, key, 401, disabledAt);
    expect(refusedAfter).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + SCHEDULING_SLACK_MS);
    // From then on every call is refused, through either replica and through nginx.
    const refusals = await Promise.all([...Array.from({ length: 8 }, () => chat(nginx.url, key)), chat(a.url, key), chat(b.url, key)]);
    for (const answer of refusals) {
      expect(answer.status).toBe(401);
      expect(answer.body.error).toMatchObject({ code: 'invalid_api_key' });
    }

    // Enabled through A again: A accepts at once; B, which read the key disabled when it first
    // refused it a moment ago and holds that in its cache, within the TTL.
    const enabledAt = Date.now();
    const enabled = await admin(a.url, 'POST', `/admin/keys/${keyId}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.body.enabled).toBe(true);
    expect((await chat(a.url, key)).status).toBe(200);
    const acceptedAfter = await firstAnswer(b, key, 200, enabledAt);
    expect(acceptedAfter).toBeLessThanOrEqual(KEY_CACHE_TTL_MS + SCHEDULING_SLACK_MS);
    const accepted = await Promise.all(Array.from({ length: 6 }, () => chat(nginx.url, key)));
    expect(accepted.map((answer) => answer.status)).toEqual(Array(6).fill(200));
    process.stdout.write(
      `key cache across replicas: disabled key refused by the other replica after ${refusedAfter} ms, enabled key accepted after ${acceptedAfter} ms (KEY_CACHE_TTL_MS ${KEY_CACHE_TTL_MS})\n`,
    );
  });

  // Rule (docs/operations.md "Catalog: lines and models"): a change through one replica reaches
  // the others at once by LISTEN/NOTIFY; calls are billed at the prices of their admission.
  // Rule (docs/operations.md "Rate limits"): replicas add their counts to the database every
  // RATE_LIMIT_SYNC_MS and read the others'; once both have, the key's limit holds on both.
  it('fire each alert threshold of a monthly budget once, signed, while calls through nginx reach both replicas at once', async () => {
    const cost = await costOfOneCall();
    const budget = 40n * cost;
    const owner = await admin(replicas[0].url, 'POST', '/admin/owners', {
      id: 'alert-team',
      kind: 'project',
      budget: nanoToDecimal(budget),
      budget_period: 'month',
      budget_timezone: 'Europe/Berlin',
      alerts: [25, 50, 100],
    });
    expect(owner.status).toBe(201);
    const key = (await admin(replicas[0].url, 'POST', '/admin/keys', { owner: 'alert-team', models: ['*'] })).body.key as string;
    const servedBefore = await chatCounts(replicas, 'chat-model', '200');

    // Eight clients through nginx until each has been refused twice: the month's budget is used.
    const client = async (): Promise<void> => {
      for (let refusals = 0; refusals < 2;) if ((await chat(nginx.url, key)).status === 402) refusals += 1;
    };
    await Promise.all(Array.from({ length: 8 }, client));
    const servedAfter = await chatCounts(replicas, 'chat-model', '200');
    await until(async () => alerts.deliveries.filter((delivery) => delivery.event.owner_id === 'alert-team').length >= 3, 'three alerts delivered', 10_000);
    await sleep(1_000); // a second delivery of any of them would arrive within a few rounds

    const delivered = alerts.deliveries.filter((delivery) => delivery.event.owner_id === 'alert-team');
    const { rows } = await db.query(
      `SELECT s.spent_nano::text AS spent, (SELECT sum(cost_nano)::text FROM usage_record WHERE owner_id = 'alert-team') AS billed
         FROM budget_spend s WHERE s.owner_id = 'alert-team' AND s.key_id = ''`,
    );
    const metrics = await Promise.all(
      replicas.map(async (replica) => metricSum(await metricsOf(replica), 'gateway_alert_deliveries_total', { outcome: 'delivered' })),
    );

    expect(servedAfter.map((count, replica) => count - servedBefore[replica] > 0)).toEqual([true, true]);
    expect(delivered.map((delivery) => delivery.event.threshold).sort((a, b) => a - b)).toEqual([25, 50, 100]);
    expect(delivered.every(signedAlert)).toBe(true);
    expect(new Set(delivered.map((delivery) => delivery.event.id)).size).toBe(3);
    expect(metrics.reduce((sum, count) => sum + count, 0)).toBe(3);
    // One period row, holding exactly what the records billed.
    expect(rows).toHaveLength(1);
    expect(rows[0].spent).toBe(rows[0].billed);
    expect(BigInt(rows[0].spent)).toBeGreaterThanOrEqual(budget);
  });

  it("hold a key's requests_per_minute across both replicas: 60 calls through nginx, then the 61st refused on each", async () => {
    await awayFromMinuteEnd();
    const key = await ownerWithKey('rate-team', 100_000_000_000n);
    const keyId = (await admin(replicas[0].url, 'GET', '/admin/keys?owner=rate-team')).body.data[0].id;
    expect((await admin(replicas[0].url, 'PATCH', `/admin/keys/${keyId}`, { limits: { requests_per_minute: 60 } })).status).toBe(200);

    const servedBefore = await chatCounts(replicas, 'chat-model', '200');
    const answered = [];
    for (let call = 0; call < 60; call++) answered.push((await chat(nginx.url, key)).status);
    const servedAfter = await chatCounts(replicas, 'chat-model', '200');
    // Both replicas served some of them, and each learns the other's count at its next sync.
    expect(servedAfter.map((count, replica) => count - servedBefore[replica] > 0)).toEqual([true, true]);
    await until(
      async () => (await Promise.all(replicas.map((replica) => remainingRequests(replica.url, key)))).every((left) => left === 0),
      'both replicas to count all 60 calls',
      5_000,
    );
    const refused = await Promise.all(replicas.map((replica) => chat(replica.url, key)));

    expect(answered).toEqual(Array(60).fill(200));
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.body.error).toMatchObject({
        code: 'rate_limit_exceeded',
        message: expect.stringContaining("This key's limit of 60 requests per minute is reached"),
      });
    }
    expect(await recordCount('rate-team')).toBe(60);
  });

  it("share a key's calls under way: calls held on one replica make the other refuse a call over concurrent_requests", async () => {
    const held = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    held.failNext('/v1/chat/completions', { kind: 'delay', ms: 4_000 }, Number.MAX_SAFE_INTEGER);
    const heldUrl = await held.start();
    try {
      expect((await admin(replicas[0].url, 'POST', '/admin/upstreams', { id: 'line-held', base_url: heldUrl, api_key: '${REPLICAS_LINE_KEY}' })).status).toBe(
        201,
      );
      const model = {
        id: 'held-chat',
        upstream_model: 'vendor-chat-2025-01',
        interfaces: ['chat_completions'],
        lines: ['line-held'],
        prices: { input_tokens: 1 },
      };
      expect((await admin(replicas[0].url, 'POST', '/admin/models', model)).status).toBe(201);
      const key = await ownerWithKey('concurrent-team', 100_000_000_000n);
      const keyId = (await admin(replicas[0].url, 'GET', '/admin/keys?owner=concurrent-team')).body.data[0].id;
      await admin(replicas[0].url, 'PATCH', `/admin/keys/${keyId}`, { limits: { concurrent_requests: 2 } });
      await until(async () => (await chat(replicas[1].url, key, 'no-such-model')).status === 404, 'the key known on replica B');
      await until(
        async () => (await send(replicas[1].url, 'GET', '/v1/models', key)).body?.data?.some((item: { id: string }) => item.id === 'held-chat'),
        'the model on replica B',
      );

      const holding = [chat(replicas[0].url, key, 'held-chat'), chat(replicas[0].url, key, 'held-chat')];
      await until(async () => (await remainingConcurrent(replicas[1].url, key)) === 0, 'replica B to see both calls under way on A', 3_000);
      const refused = await chat(replicas[1].url, key, 'held-chat');
      const finished = await Promise.all(holding);
      await until(async () => (await remainingConcurrent(replicas[1].url, key)) === 2, 'replica B to see them end', 3_000);
      const admitted = await chat(replicas[1].url, key);

      expect(refused.status).toBe(429);
      expect(refused.body.error.message).toContain("This key's limit of 2 concurrent requests is reached");
      expect(finished.map((answer) => answer.status)).toEqual([200, 200]);
      expect(admitted.status).toBe(200);
    } finally {
      await held.stop();
    }
  }, 30_000);

  it('serve a model added through one replica from the other within 2 s, by notification', async () => {
    const [a, b] = replicas;
    const model = { id: 'live-model', upstream_model: 'vendor-chat-2025-01', interfaces: ['chat_completions'], lines: ['line-a'], prices: { input_tokens: 1 } };
    expect((await chat(b.url, KEY, 'live-model')).status).toBe(404);

    const addedAt = Date.now();
    expect((await admin(a.url, 'POST', '/admin/models', model)).status).toBe(201);
    let servedAfter = -1;
    while (Date.now() - addedAt < 3 * CATALOG_PROPAGATION_MS) {
      const sentAt = Date.now();
      const answer = await chat(b.url, KEY, 'live-model');
      if (answer.status === 200) {
        servedAfter = sentAt - addedAt;
        break;
      }
      expect(answer.status).toBe(404);
      await sleep(25);
    }

    expect(servedAfter).toBeGreaterThanOrEqual(0);
    expect(servedAfter).toBeLessThanOrEqual(CATALOG_PROPAGATION_MS);
    process.stdout.write(`catalog across replicas: a model added through one replica served by the other after ${servedAfter} ms\n`);
  });

  it('bill every call of a load through nginx at the old or the new price across a price change, spend equal to the records', async () => {
    const [a] = replicas;
    const key = await ownerWithKey('team-price', 1_000_000_000_000n);
    const model = { id: 'repriced-model', upstream_model: 'vendor-chat-2025-01', interfaces: ['chat_completions'], lines: ['line-a'] };
    const created = await admin(a.url, 'POST', '/admin/models', { ...model, prices: { input_tokens: 1, output_tokens: 1 } });
    expect(created.status).toBe(201);
    await until(async () => (await chat(replicas[1].url, key, 'repriced-model')).status === 200, 'the other replica to serve the model');

    const load = Array.from({ length: 8 }, async () => {
      const statuses: number[] = [];
      for (let call = 0; call < 25; call++) statuses.push((await chat(nginx.url, key, 'repriced-model')).status);
      return statuses;
    });
    await sleep(150);
    const change = await admin(a.url, 'PATCH', '/admin/models/repriced-model', {
      version: created.body.version,
      prices: { input_tokens: 3, output_tokens: 3 },
    });
    const statuses = (await Promise.all(load)).flat();
    // The replica that took the change serves it at once; through nginx the call could reach the
    // other before its next catalog check, and the load may have ended before the change.
    const after = await chat(a.url, key, 'repriced-model');
    expect(after.status).toBe(200);
    const served = async () =>
      (await db.query('SELECT cost_nano FROM usage_record WHERE owner_id = $1 AND status = 200', ['team-price'])).rows.map((row) => BigInt(row.cost_nano));
    // The first call the other replica served, the load, and the call after the change.
    await until(async () => (await served()).length === 1 + statuses.length + 1, 'every record to be written', 10_000);

    const costs = await served();
    const cheapest = costs.reduce((low, cost) => (cost < low ? cost : low));
    const money = await ownerMoney('team-price');

    expect(change.status).toBe(200);
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect(cheapest).toBeGreaterThan(0n);
    expect(new Set(costs.map((cost) => (cost === cheapest ? 'old' : cost === 3n * cheapest ? 'new' : `other ${cost}`)))).toEqual(new Set(['old', 'new']));
    expect(money.spent).toBe(costs.reduce((sum, cost) => sum + cost, 0n));
    expect(money.reserved).toBe(0n);
  });

  /**
   * Polls `replica` with chat calls every 25 ms until one answers `status`; resolves to the time
   * from `since` to the start of that call. Other answers must be the opposite state's (200 or
   * 401). Gives up after three TTLs, which fails the test.
   */
  async function firstAnswer(replica: GatewayProcess, key: string, status: 200 | 401, since: number): Promise<number> {
    const other = status === 200 ? 401 : 200;
    const deadline = since + 3 * KEY_CACHE_TTL_MS;
    while (Date.now() < deadline) {
      const sentAt = Date.now();
      const answer = await chat(replica.url, key);
      if (answer.status === status) return sentAt - since;
      expect(answer.status).toBe(other);
      await sleep(25);
    }
    throw new Error(`${replica.url} did not answer ${status} within ${3 * KEY_CACHE_TTL_MS} ms`);
  }

  // Rule (docs/api.md "Video tasks"): a task lives in the database, so any replica queries and
  // cancels it; a cancelled task releases its reservation, is not billed, and is settled once
  // however many replicas and reconcilers see it end.
  it('submit a video task through one replica, query and cancel it through the other, and settle it exactly once', async () => {
    const [a, b] = replicas;
    const before = await ownerMoney('video-team');
    const settledBefore = await settledTasks(replicas, { status: 'cancelled' });
    const submitted = await send(a.url, 'POST', VENDOR_C.submit, VIDEO_KEY, {
      model: 'video-c',
      duration: 6,
      resolution: '720p',
      content: [{ type: 'text', text: 'a paper boat on a pond' }],
    });
    expect(submitted.status).toBe(200);
    const taskId: string = submitted.body.task_id;
    expect(taskId).toMatch(/^vtask_/);
    const reservation = 6n * VIDEO_C_PER_SECOND;
    expect(await ownerMoney('video-team')).toMatchObject({ spent: before.spent, reserved: before.reserved + reservation });

    const queried = await send(b.url, 'GET', VENDOR_C.query(taskId), VIDEO_KEY);
    expect(queried.status).toBe(200);
    expect(queried.body.task).toMatchObject({ id: taskId, status: 'queued' });

    // B cancels while A's clients keep querying the task and both reconcilers keep polling it:
    // whoever sees it cancelled first settles it.
    let cancelled = false;
    const watchers = [a.url, nginx.url].map(async (url) => {
      while (!cancelled) {
        const answer = await send(url, 'GET', VENDOR_C.query(taskId), VIDEO_KEY);
        expect(answer.status).toBe(200);
        await sleep(5);
      }
    });
    let cancel: Answer;
    try {
      cancel = await send(b.url, 'DELETE', VENDOR_C.cancel(taskId), VIDEO_KEY);
      await sleep(300); // the watchers and several reconciler rounds see the task cancelled
    } finally {
      cancelled = true;
    }
    await Promise.all(watchers);
    expect(cancel.status).toBe(200);

    const { rows } = await db.query('SELECT status, settled_at, settlement, cost_nano, submit_request_id, upstream_task_id FROM video_task WHERE id = $1', [
      taskId,
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'cancelled', settlement: 'not_billed', cost_nano: '0', submit_request_id: submitted.requestId });
    expect(rows[0].settled_at).not.toBeNull();
    expect(simulator.video.get(rows[0].upstream_task_id)?.cancels).toBe(1);

    const records = await db.query('SELECT cost_nano, error_code, interface FROM usage_record WHERE request_id = $1', [submitted.requestId]);
    expect(records.rows).toEqual([{ cost_nano: '0', error_code: 'task_cancelled', interface: 'video_c' }]);
    expect(await ownerMoney('video-team')).toEqual(before);
    expect((await settledTasks(replicas, { status: 'cancelled' })) - settledBefore).toBe(1);

    // Either replica shows the same final state.
    const finals = await Promise.all([a.url, b.url, nginx.url].map((url) => send(url, 'GET', VENDOR_C.query(taskId), VIDEO_KEY)));
    for (const answer of finals) {
      expect(answer.status).toBe(200);
      expect(answer.body.task).toEqual(finals[0].body.task);
    }
    expect(finals[0].body.task).toMatchObject({ id: taskId, status: 'cancelled' });
    // Settled means settled: cancelling again is refused by either.
    expect((await send(a.url, 'DELETE', VENDOR_C.cancel(taskId), VIDEO_KEY)).status).toBe(400);
  });

  it('settle video tasks that succeed exactly once while both reconcilers and clients of both replicas race to see them end', async () => {
    const [a, b] = replicas;
    const before = await ownerMoney('video-team');
    const settledBefore = await settledTasks(replicas, { status: 'succeeded' });
    const tasks: Array<{ taskId: string; requestId: string; upstreamId: string; cost: bigint }> = [];
    for (let index = 0; index < 8; index += 1) {
      const seconds = 2 + index;
      const answer = await send(index % 2 === 0 ? a.url : b.url, 'POST', VENDOR_C.submit, VIDEO_KEY, {
        model: 'video-c',
        duration: seconds,
        content: [{ type: 'text', text: `a kite, take ${index}` }],
      });
      expect(answer.status).toBe(200);
      const { rows } = await db.query('SELECT upstream_task_id FROM video_task WHERE id = $1', [answer.body.task_id]);
      tasks.push({
        taskId: answer.body.task_id,
        requestId: answer.requestId,
        upstreamId: rows[0].upstream_task_id,
        cost: BigInt(seconds - 1) * VIDEO_C_PER_SECOND,
      });
    }
    // Each reports a second less than requested, so the bill comes from the reported usage.
    for (const [index, task] of tasks.entries()) {
      simulator.video.succeed(task.upstreamId, { output_seconds: 1 + index, input_seconds: 0, input_image_count: 0 });
    }
    const looks = tasks.flatMap((task) => [a.url, b.url, nginx.url, a.url, b.url].map((url) => send(url, 'GET', VENDOR_C.query(task.taskId), VIDEO_KEY)));
    for (const answer of await Promise.all(looks)) {
      expect(answer.status).toBe(200);
      expect(answer.body.task.status).toBe('succeeded');
    }
    await until(async () => {
      const { rows } = await db.query('SELECT count(*)::int AS open FROM video_task WHERE id = ANY($1) AND settled_at IS NULL', [
        tasks.map((task) => task.taskId),
      ]);
      return rows[0].open === 0;
    }, 'every task settled');
    await sleep(300); // further reconciler rounds find nothing left to settle

    const total = tasks.reduce((sum, task) => sum + task.cost, 0n);
    expect(await ownerMoney('video-team')).toEqual({ budget: before.budget, spent: before.spent + total, reserved: before.reserved });
    expect((await settledTasks(replicas, { status: 'succeeded' })) - settledBefore).toBe(tasks.length);
    for (const task of tasks) {
      const { rows } = await db.query('SELECT status, settlement, cost_nano FROM video_task WHERE id = $1', [task.taskId]);
      expect(rows).toEqual([{ status: 'succeeded', settlement: 'usage', cost_nano: task.cost.toString() }]);
      const records = await db.query('SELECT cost_nano, error_code FROM usage_record WHERE request_id = $1', [task.requestId]);
      expect(records.rows).toEqual([{ cost_nano: task.cost.toString(), error_code: null }]);
    }
    const [onA, onB] = await Promise.all([a.url, b.url].map((url) => send(url, 'GET', VENDOR_C.query(tasks[0].taskId), VIDEO_KEY)));
    expect(onA.body.task).toEqual(onB.body.task);
  });
});
