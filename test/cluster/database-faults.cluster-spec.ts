import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { UpstreamSimulator } from '../simulator/upstream-simulator';
import { GatewayProcess, launchGateway } from '../support/gateway-process';
import { PgCluster } from '../support/pg-cluster';
import { PgProxy } from '../support/pg-proxy';
import { parseSse } from '../support/sse';
import { VENDOR_KEY } from '../support/test-config';
import { until } from '../support/until';

/**
 * PostgreSQL stopped under steady load and started again (DESIGN.md section 4:
 * usage records are written off the hot path in batches, retried while the database is away,
 * and flushed on shutdown; a forwarded, billed call is never lost).
 *
 * One gateway process per scenario, one quota owner per scenario (so its spend and records are
 * its own), steady load from six clients (chat and messages, JSON and SSE) with their keys and
 * owner read before the outage. The caches' TTLs are far shorter than the outage, so the calls
 * made while the database is away run on stale entries, not on fresh ones.
 */

const KEY_CACHE_TTL_MS = 300;
const BALANCE_CACHE_TTL_MS = 200;
/** Load before the stop, the outage itself, and load after the start. */
const BEFORE_MS = 1_500;
const OUTAGE_MS = 4_000;
const AFTER_MS = 1_500;
/** Upper bounds of waits: far above what a healthy run needs, not timings under test. */
const PATIENCE_MS = 30_000;
/** Pause between the SSE events of the simulator, so streams are in flight when the database stops. */
const CHUNK_DELAY_MS = 15;
/** Small batches: the outage's backlog is several batches, so full batches queue while writes fail. */
const USAGE_BATCH_SIZE = 100;
/**
 * Failed batch writes a 4 s outage may cost: the writer's back-off (200, 400, 800, 1600, 3200 ms,
 * then 5 s) allows about six; writing at every new record, as without back-off, would be hundreds.
 */
const MAX_FAILED_WRITES_IN_OUTAGE = 10;

const SCENARIOS = ['fast', 'immediate', 'cut', 'term'] as const;
type Scenario = (typeof SCENARIOS)[number];
const warmKey = (scenario: Scenario) => `gk-faults-${scenario}-warm-0001`;
const coldKey = (scenario: Scenario) => `gk-faults-${scenario}-cold-0002`;
const ownerOf = (scenario: Scenario) => `team-${scenario}`;

function configYaml(simulatorUrl: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulatorUrl}
    api_key: \${FAULTS_LINE_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2.5, output_tokens: 10 }
  - id: messages-model
    upstream_model: vendor-messages-2025-02
    interfaces: [messages]
    lines: [line-a]
    prices: { input_tokens: 3, output_tokens: 15 }
owners:
${SCENARIOS.map((scenario) => `  - { id: ${ownerOf(scenario)}, kind: project, budget: 1000 }`).join('\n')}
keys:
${SCENARIOS.map(
  (scenario) => `  - { key: ${warmKey(scenario)}, owner: ${ownerOf(scenario)}, models: ["*"] }
  - { key: ${coldKey(scenario)}, owner: ${ownerOf(scenario)}, models: ["*"] }`,
).join('\n')}
`;
}

type Kind = 'chat' | 'chat-sse' | 'messages' | 'messages-sse';
/** The six clients of the steady load. */
const CLIENTS: Kind[] = ['chat', 'chat', 'chat-sse', 'chat-sse', 'messages', 'messages-sse'];

interface Call {
  kind: Kind;
  status: number;
  requestId: string;
  /** Why the answer is not a whole 200 answer; undefined when it is. */
  problem?: string;
  sentAt: number;
  endedAt: number;
}

interface Answer {
  status: number;
  requestId: string;
  retryAfter: string | null;
  body: any;
}

/** A chat or messages request with `key` in its protocol's header; `stream` for the SSE kinds. */
function send(baseUrl: string, kind: Kind, key: string, prompt: string, maxTokens: number): Promise<Response> {
  const messages = kind.startsWith('messages');
  return fetch(`${baseUrl}${messages ? '/v1/messages' : '/v1/chat/completions'}`, {
    method: 'POST',
    headers: messages
      ? { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
      : { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: messages ? 'messages-model' : 'chat-model',
      ...(messages ? { max_tokens: maxTokens } : {}),
      messages: [{ role: 'user', content: prompt }],
      stream: kind.endsWith('-sse'),
    }),
    signal: AbortSignal.timeout(PATIENCE_MS),
  });
}

/** One call of `kind`, read to its end and checked for completeness. */
async function call(baseUrl: string, kind: Kind, key: string, prompt: string): Promise<Call> {
  const sentAt = Date.now();
  try {
    const response = await send(baseUrl, kind, key, prompt, 256);
    const text = await response.text();
    const requestId = response.headers.get('x-request-id') ?? '';
    const problem = response.status !== 200 ? `status ${response.status}: ${text.slice(0, 300)}` : incompleteness(kind, text, prompt);
    return { kind, status: response.status, requestId, problem, sentAt, endedAt: Date.now() };
  } catch (error) {
    return { kind, status: 0, requestId: '', problem: `no answer: ${String(error)}`, sentAt, endedAt: Date.now() };
  }
}

/** Why a 200 answer is not the whole answer the simulator gives, or undefined. */
function incompleteness(kind: Kind, text: string, prompt: string): string | undefined {
  try {
    let said = '';
    if (kind === 'chat') said = JSON.parse(text).choices[0].message.content;
    if (kind === 'messages') said = JSON.parse(text).content[0].text;
    if (kind === 'chat-sse') {
      const items = parseSse(text);
      if (items.at(-1)?.data !== '[DONE]') return `chat stream without [DONE]: ${text.slice(-200)}`;
      said = items
        .slice(0, -1)
        .map((item) => JSON.parse(item.data).choices[0]?.delta?.content ?? '')
        .join('');
    }
    if (kind === 'messages-sse') {
      const items = parseSse(text);
      if (items.at(-1)?.event !== 'message_stop') return `messages stream without message_stop: ${text.slice(-200)}`;
      said = items
        .filter((item) => item.event === 'content_block_delta')
        .map((item) => JSON.parse(item.data).delta.text ?? '')
        .join('');
    }
    return said.endsWith(prompt) ? undefined : `answer "${said}" does not end with "${prompt}"`;
  } catch (error) {
    return `unreadable ${kind} answer (${String(error)}): ${text.slice(0, 300)}`;
  }
}

/** A refused call: status, request id, Retry-After and the parsed error body. */
async function refused(baseUrl: string, kind: 'chat' | 'messages', key: string): Promise<Answer> {
  const response = await send(baseUrl, kind, key, 'new key', 64).catch((error: unknown) => new Response(`no answer: ${String(error)}`, { status: 599 }));
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text: the assertion shows it
  }
  return { status: response.status, requestId: response.headers.get('x-request-id') ?? '', retryAfter: response.headers.get('retry-after'), body };
}

/** Six clients calling back to back until stopped; every call is kept. */
class SteadyLoad {
  readonly calls: Call[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(baseUrl: string, key: string) {
    this.loops = CLIENTS.map(async (kind, client) => {
      for (let index = 0; this.running; index++) {
        this.calls.push(await call(baseUrl, kind, key, `load ${client} call ${index}`));
        await sleep(5);
      }
    });
  }

  async stop(): Promise<Call[]> {
    this.running = false;
    await Promise.all(this.loops);
    return this.calls;
  }
}

interface ReadinessSample {
  sentAt: number;
  receivedAt: number;
  status: number;
}

/** GET /health/ready every 50 ms until stopped. */
class ReadinessWatch {
  readonly samples: ReadinessSample[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(gateway: GatewayProcess) {
    this.loop = (async () => {
      while (this.running) {
        const sentAt = Date.now();
        const status = await gateway.readiness();
        this.samples.push({ sentAt, receivedAt: Date.now(), status });
        await sleep(50);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A gauge or counter of GET /metrics without labels. */
async function metric(gateway: GatewayProcess, name: string): Promise<number> {
  if (!gateway.running)
    throw new Error(`the gateway exited (${gateway.child.exitCode ?? gateway.child.signalCode}); it printed:\n${gateway.output.slice(-3_000)}`);
  const text = await (await fetch(`${gateway.url}/metrics`, { signal: AbortSignal.timeout(PATIENCE_MS) })).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  if (!line) throw new Error(`${name} missing from /metrics`);
  return Number(line.split(' ')[1]);
}

/**
 * What a gateway printed after its start that is not a warning of its JSON log: lines at error
 * level or above (a failed request, a usage record set aside as refused by the database, which a
 * retried batch meeting its own committed rows must not cause) and anything printed outside the
 * log (an uncaught exception's stack, a runtime warning). A database outage is worth warnings only.
 */
function troubles(output: string): string[] {
  return output.split('\n').filter((line) => {
    if (line.trim() === '') return false;
    try {
      return !((JSON.parse(line) as { level?: number }).level! < 50);
    } catch {
      return true;
    }
  });
}

interface Ledger {
  records: Array<{ request_id: string; status: number; error_code: string | null; cost_nano: string }>;
  duplicates: number;
  spentNano: bigint;
  reservedNano: bigint;
  recordCost: bigint;
  daily: { calls: bigint; failedCalls: bigint; costNano: bigint; inputTokens: string; outputTokens: string };
  recordFigures: { inputTokens: string; outputTokens: string };
}

describe('PostgreSQL stopped and started under steady load', () => {
  let cluster: PgCluster;
  let simulator: UpstreamSimulator;
  let folder: string;
  let config: string;
  let database: Client | undefined;
  const gateways: GatewayProcess[] = [];
  const figures: string[] = [];
  /** How much each gateway had printed when it was ready: its start-up is not under test here. */
  const startOutput = new Map<GatewayProcess, number>();
  const printedSinceStart = (gateway: GatewayProcess) => gateway.output.slice(startOutput.get(gateway) ?? 0);

  beforeAll(async () => {
    cluster = await PgCluster.create();
    await cluster.createDatabase('faults');
    simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY, chunkDelayMs: CHUNK_DELAY_MS });
    const simulatorUrl = await simulator.start();
    folder = await mkdtemp(join(tmpdir(), 'gateway-faults-'));
    config = join(folder, 'gateway.yaml');
    await writeFile(config, configYaml(simulatorUrl));
  });

  afterAll(async () => {
    await database?.end().catch(() => undefined);
    await Promise.all(gateways.map((gateway) => gateway.kill()));
    await simulator?.stop();
    await cluster?.destroy();
    if (folder) await rm(folder, { recursive: true, force: true });
    if (figures.length > 0) process.stdout.write(`\ndatabase faults, figures of this run:\n${figures.map((line) => `  ${line}`).join('\n')}\n`);
  });

  async function startGateway(databaseUrl: string, env: Record<string, string> = {}): Promise<GatewayProcess> {
    const gateway = await launchGateway({
      GATEWAY_CONFIG: config,
      DATABASE_URL: databaseUrl,
      FAULTS_LINE_KEY: VENDOR_KEY,
      KEY_CACHE_TTL_MS: String(KEY_CACHE_TTL_MS),
      BALANCE_CACHE_TTL_MS: String(BALANCE_CACHE_TTL_MS),
      LOG_LEVEL: 'warn',
      ...env,
    });
    gateways.push(gateway);
    await gateway.waitUntilReady();
    startOutput.set(gateway, gateway.output.length);
    return gateway;
  }

  /** A query on the gateway's database; the test's own connection is made again after a restart. */
  async function query<T = any>(sql: string, parameters: unknown[] = []): Promise<T[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (!database) {
          const client = new Client({ connectionString: cluster.urlOf('faults') });
          client.on('error', () => undefined); // a restart ends the connection; the next query makes another
          await client.connect();
          database = client;
        }
        return (await database.query(sql, parameters)).rows as T[];
      } catch (error) {
        await database?.end().catch(() => undefined);
        database = undefined;
        if (attempt === 2) throw error;
      }
    }
  }

  async function ledger(owner: string): Promise<Ledger> {
    const records = await query('SELECT request_id, status, error_code, cost_nano::text FROM usage_record WHERE owner_id = $1', [owner]);
    const [{ duplicates }] = await query('SELECT count(*) - count(DISTINCT request_id) AS duplicates FROM usage_record WHERE owner_id = $1', [owner]);
    const [balance] = await query('SELECT spent_nano::text, reserved_nano::text FROM quota_owner WHERE id = $1', [owner]);
    const [daily] = await query(
      `SELECT coalesce(sum(calls), 0)::text AS calls, coalesce(sum(failed_calls), 0)::text AS failed_calls,
              coalesce(sum(cost_nano), 0)::text AS cost_nano,
              coalesce(sum((usage ->> 'input_tokens')::numeric), 0)::text AS input_tokens,
              coalesce(sum((usage ->> 'output_tokens')::numeric), 0)::text AS output_tokens
         FROM usage_daily WHERE owner_id = $1`,
      [owner],
    );
    const [figuresOfRecords] = await query(
      `SELECT coalesce(sum((usage ->> 'input_tokens')::numeric), 0)::text AS input_tokens,
              coalesce(sum((usage ->> 'output_tokens')::numeric), 0)::text AS output_tokens
         FROM usage_record WHERE owner_id = $1`,
      [owner],
    );
    return {
      records,
      duplicates: Number(duplicates),
      spentNano: BigInt(balance.spent_nano),
      reservedNano: BigInt(balance.reserved_nano),
      recordCost: records.reduce((sum, record) => sum + BigInt(record.cost_nano), 0n),
      daily: {
        calls: BigInt(daily.calls),
        failedCalls: BigInt(daily.failed_calls),
        costNano: BigInt(daily.cost_nano),
        inputTokens: daily.input_tokens,
        outputTokens: daily.output_tokens,
      },
      recordFigures: { inputTokens: figuresOfRecords.input_tokens, outputTokens: figuresOfRecords.output_tokens },
    };
  }

  /** Waits until the writer's queue is empty and the owner has at least `expected` records. */
  async function drained(gateway: GatewayProcess, owner: string, expected: number): Promise<void> {
    await until(
      async () => {
        if ((await metric(gateway, 'gateway_usage_writer_queue_depth')) !== 0) return false;
        const [{ count }] = await query('SELECT count(*)::int AS count FROM usage_record WHERE owner_id = $1', [owner]);
        return count >= expected;
      },
      `the usage records of ${owner}`,
      PATIENCE_MS,
    ).catch(() => undefined); // the comparison below names what is missing
  }

  /** The request ids of the calls that reached the upstream and got a whole 200 answer. */
  function forwardedIds(calls: Call[]): string[] {
    return calls.filter((entry) => entry.status === 200 && entry.requestId !== '').map((entry) => entry.requestId);
  }

  /** Exactly one record per forwarded call, billed once, summed once into the daily totals. */
  function expectOneRecordPerCall(book: Ledger, forwarded: string[]): void {
    const stored = new Set(book.records.map((record) => record.request_id));
    const expected = new Set(forwarded);
    expect({
      missing: forwarded.filter((id) => !stored.has(id)),
      unexpected: [...stored].filter((id) => !expected.has(id)),
    }).toEqual({ missing: [], unexpected: [] });
    expect(book.records).toHaveLength(forwarded.length);
    // request_id is the table's primary key: this holds as long as the schema says so.
    expect(book.duplicates).toBe(0);
    expect(book.records.filter((record) => record.status !== 200 || record.error_code !== null || BigInt(record.cost_nano) <= 0n)).toEqual([]);
    // Billed once: the owner's spend is the sum of its records, nothing reserved is left over.
    expect(book.spentNano).toBe(book.recordCost);
    expect(book.reservedNano).toBe(0n);
    // The daily totals summed each record once as well.
    expect(book.daily).toEqual({
      calls: BigInt(forwarded.length),
      failedCalls: 0n,
      costNano: book.recordCost,
      inputTokens: book.recordFigures.inputTokens,
      outputTokens: book.recordFigures.outputTokens,
    });
  }

  describe.each(['fast', 'immediate'] as const)('stopped %s', (mode) => {
    const scenario: Scenario = mode;
    const owner = ownerOf(scenario);
    let gateway: GatewayProcess;
    let calls: Call[];
    let readiness: ReadinessSample[];
    let stopCalledAt: number;
    let stoppedAt: number;
    let startCalledAt: number;
    let startedAt: number;
    let queuedWhileDown: number;
    let failedBeforeStop: number;
    let failedWhileDown: number;
    let coldWhileDown: Answer[];
    let coldAfter: Call[];
    let book: Ledger;

    beforeAll(async () => {
      gateway = await startGateway(cluster.urlOf('faults'), { USAGE_BATCH_SIZE: String(USAGE_BATCH_SIZE) });
      // Keys and owner read once before the outage (the warm-up calls are calls like the others).
      const warmUp = await Promise.all(
        (['chat', 'chat-sse', 'messages', 'messages-sse'] as const).map((kind) => call(gateway.url, kind, warmKey(scenario), `warm ${kind}`)),
      );
      const watch = new ReadinessWatch(gateway);
      const load = new SteadyLoad(gateway.url, warmKey(scenario));
      let recoveredAt: number;
      let backlogWrittenAt: number;
      try {
        await sleep(BEFORE_MS);
        failedBeforeStop = await metric(gateway, 'gateway_usage_writer_failed_writes_total');
        stopCalledAt = Date.now();
        await cluster.stop(mode);
        stoppedAt = Date.now();
        try {
          await sleep(OUTAGE_MS / 4);
          // A key this process never looked up cannot be checked while the database is away.
          coldWhileDown = [await refused(gateway.url, 'chat', coldKey(scenario)), await refused(gateway.url, 'messages', coldKey(scenario))];
          await sleep((OUTAGE_MS * 3) / 4);
          queuedWhileDown = await metric(gateway, 'gateway_usage_writer_queue_depth');
          failedWhileDown = (await metric(gateway, 'gateway_usage_writer_failed_writes_total')) - failedBeforeStop;
        } finally {
          startCalledAt = Date.now();
          await cluster.start();
          startedAt = Date.now();
        }
        const readyAgain = () => watch.samples.find((sample) => sample.sentAt >= startedAt && sample.status === 200);
        await until(() => readyAgain() !== undefined, 'readiness after the start', PATIENCE_MS);
        recoveredAt = readyAgain()!.receivedAt;
        // The outage's backlog: the records of every call answered before the restart.
        const backlog = forwardedIds([...warmUp, ...load.calls.filter((entry) => entry.endedAt < startCalledAt)]);
        const stored = async () => (await query('SELECT count(*)::int AS count FROM usage_record WHERE request_id = ANY($1)', [backlog]))[0].count;
        await until(async () => (await stored()) === backlog.length, 'the records of the outage', PATIENCE_MS).catch(() => undefined);
        backlogWrittenAt = Date.now();
        await sleep(Math.max(0, AFTER_MS - (Date.now() - startedAt)));
      } finally {
        calls = [...warmUp, ...(await load.stop())];
        await watch.stop();
      }
      readiness = watch.samples;
      coldAfter = [await call(gateway.url, 'chat', coldKey(scenario), 'cold chat'), await call(gateway.url, 'messages', coldKey(scenario), 'cold messages')];
      const forwarded = forwardedIds([...calls, ...coldAfter]);
      await drained(gateway, owner, forwarded.length);
      book = await ledger(owner);

      const duringOutage = calls.filter((entry) => entry.sentAt >= stoppedAt && entry.endedAt <= startCalledAt);
      figures.push(
        `${mode} stop: ${calls.length + coldAfter.length} calls answered, ${duringOutage.length} of them while PostgreSQL was down ` +
          `(${OUTAGE_MS} ms); ${queuedWhileDown} records queued at the restart, after ${failedWhileDown} failed batch writes; ` +
          `readiness 200 again ${recoveredAt - startedAt} ms after PostgreSQL accepted connections (pg_ctl start: ` +
          `${startedAt - startCalledAt} ms); the outage's records all stored ${backlogWrittenAt - startedAt} ms after it; ` +
          `${book.records.length} records for ${forwarded.length} forwarded calls`,
      );
    });

    afterAll(async () => {
      await gateway?.kill();
    });

    it('answers every call completely, before, during and after the outage', () => {
      expect(calls.filter((entry) => entry.problem !== undefined)).toEqual([]);
      // Streams were in flight when the stop began.
      const spanning = calls.filter((entry) => entry.kind.endsWith('-sse') && entry.sentAt < stopCalledAt && entry.endedAt > stopCalledAt);
      expect(spanning.length).toBeGreaterThan(0);
      // The load ran through the outage, on cache entries older than their TTL: stale, not fresh.
      const late = calls.filter((entry) => entry.sentAt >= stoppedAt + KEY_CACHE_TTL_MS + BALANCE_CACHE_TTL_MS && entry.endedAt <= startCalledAt);
      expect(new Set(late.map((entry) => entry.kind))).toEqual(new Set(CLIENTS));
    });

    it('reports not ready while PostgreSQL is down and ready again once it is back', () => {
      const whileDown = readiness.filter((sample) => sample.sentAt >= stoppedAt && sample.receivedAt <= startCalledAt);
      expect(whileDown.length).toBeGreaterThan(0);
      expect(whileDown.filter((sample) => sample.status !== 503)).toEqual([]);
      expect(readiness.filter((sample) => sample.receivedAt < stopCalledAt && sample.status !== 200)).toEqual([]);
      expect(readiness.filter((sample) => sample.sentAt >= startedAt).at(-1)?.status).toBe(200);
    });

    it("refuses a key it never saw with 503 in the called protocol's shape while down, and serves it once back", async () => {
      const [chat, messages] = coldWhileDown;
      expect(chat).toMatchObject({ status: 503, retryAfter: '1', body: { error: { type: 'upstream_error', code: 'service_unavailable' } } });
      expect(messages).toMatchObject({
        status: 503,
        retryAfter: '1',
        body: { type: 'error', error: { type: 'overloaded_error', code: 'service_unavailable' } },
      });
      expect(coldAfter.map((entry) => [entry.status, entry.problem])).toEqual([
        [200, undefined],
        [200, undefined],
      ]);
      // Refused before forwarding: no usage record.
      const refusedIds = coldWhileDown.map((answer) => answer.requestId).filter((id) => id !== '');
      expect(refusedIds).toHaveLength(2);
      expect(await query('SELECT request_id FROM usage_record WHERE request_id = ANY($1)', [refusedIds])).toEqual([]);
    });

    it('queued the records of the outage and stores exactly one per forwarded call once PostgreSQL is back', () => {
      expect(queuedWhileDown).toBeGreaterThan(0);
      expectOneRecordPerCall(book, forwardedIds([...calls, ...coldAfter]));
    });

    it('retries the usage writes with back-off while down, not at every new record', () => {
      expect(queuedWhileDown).toBeGreaterThan(USAGE_BATCH_SIZE);
      expect(failedWhileDown).toBeGreaterThan(0);
      expect(failedWhileDown).toBeLessThanOrEqual(MAX_FAILED_WRITES_IN_OUTAGE);
    });

    it('keeps running, printing warnings only: no error, no uncaught exception, no record set aside', () => {
      expect(gateway.running).toBe(true);
      expect(troubles(printedSinceStart(gateway))).toEqual([]);
    });
  });

  describe('a usage batch whose COMMIT went through but whose answer was lost', () => {
    const owner = ownerOf('cut');
    const CUTS = 3;
    let proxy: PgProxy;
    let gateway: GatewayProcess;
    let calls: Call[];
    let failedWrites: number;
    let book: Ledger;

    beforeAll(async () => {
      // The gateway reaches PostgreSQL through a relay that drops the connection of a usage
      // batch right after the server committed it, before the gateway hears of the commit. A
      // batch is marked by its statement: `COPY usage_record (request_id, …) FROM STDIN`, or on
      // a retry `INSERT INTO usage_record (request_id, …) SELECT … FROM usage_incoming`.
      proxy = await PgProxy.start(cluster.port, 'usage_record (request_id');
      gateway = await startGateway(proxy.urlOf('faults'));
      const load = new SteadyLoad(gateway.url, warmKey('cut'));
      try {
        await sleep(BEFORE_MS / 2);
        proxy.cutNextCommits(CUTS);
        await until(() => proxy.cuts === CUTS, `${CUTS} lost COMMIT answers`, PATIENCE_MS).catch(() => undefined);
        await sleep(BEFORE_MS / 2);
      } finally {
        calls = await load.stop();
      }
      await drained(gateway, owner, forwardedIds(calls).length);
      failedWrites = await metric(gateway, 'gateway_usage_writer_failed_writes_total');
      book = await ledger(owner);
      figures.push(
        `lost COMMIT answers: ${proxy.cuts} batches committed unseen and retried; ${book.records.length} records for ${forwardedIds(calls).length} forwarded calls`,
      );
    });

    afterAll(async () => {
      await gateway?.kill();
      await proxy?.stop();
    });

    it('retried each such batch', () => {
      expect(proxy.cuts).toBe(CUTS);
      expect(failedWrites).toBeGreaterThanOrEqual(CUTS);
      expect(calls.filter((entry) => entry.problem !== undefined)).toEqual([]);
    });

    it('stores and bills every call once all the same, setting no record aside', () => {
      expectOneRecordPerCall(book, forwardedIds(calls));
      expect(troubles(printedSinceStart(gateway))).toEqual([]);
    });
  });

  describe('SIGTERM while PostgreSQL is still down', () => {
    const owner = ownerOf('term');
    let calls: Call[];
    let queuedAtSignal: number;
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    let output: string;
    let logged: Map<string, Record<string, unknown>>;
    let book: Ledger;

    beforeAll(async () => {
      const gateway = await startGateway(cluster.urlOf('faults'), { USAGE_SHUTDOWN_DEADLINE_MS: '1000' });
      const load = new SteadyLoad(gateway.url, warmKey('term'));
      try {
        await sleep(BEFORE_MS);
        await cluster.stop('fast');
        try {
          await sleep(OUTAGE_MS / 2);
          calls = await load.stop();
          queuedAtSignal = await metric(gateway, 'gateway_usage_writer_queue_depth');
          exit = await gateway.stop();
          output = printedSinceStart(gateway);
        } finally {
          await cluster.start();
        }
      } finally {
        await load.stop();
      }
      logged = new Map();
      for (const line of output.split('\n')) {
        let message: unknown;
        try {
          message = JSON.parse(line).msg;
        } catch {
          continue;
        }
        const found = typeof message === 'string' ? /^usage record (\S+) not written before shutdown: (\{.*\})$/.exec(message) : null;
        if (found) logged.set(found[1], JSON.parse(found[2]));
      }
      book = await ledger(owner);
      figures.push(
        `SIGTERM while down: ${forwardedIds(calls).length} forwarded calls, ${book.records.length} records stored before the stop, ${logged.size} logged at the exit`,
      );
    });

    it('exits 0 after its shutdown deadline, with no trouble but the records it could not write', () => {
      expect(exit).toEqual({ code: 0, signal: null });
      expect(queuedAtSignal).toBeGreaterThan(0);
      expect(troubles(output).filter((line) => !/could not be written before shutdown|not written before shutdown/.test(line))).toEqual([]);
    });

    it('names every record it could not write in its log, with what billing needs', () => {
      expect(logged.size).toBe(queuedAtSignal);
      expect(output).toContain(`${queuedAtSignal} usage records could not be written before shutdown`);
      for (const record of logged.values()) {
        expect(record).toMatchObject({ ownerId: owner, model: expect.any(String), status: 200, costNano: expect.stringMatching(/^[1-9]\d*$/) });
        expect(record.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
      }
    });

    it('loses no call: each forwarded call is in the database or in the log, never both, and only stored ones are billed', () => {
      const stored = new Set(book.records.map((record) => record.request_id));
      const forwarded = forwardedIds(calls);
      const known = new Set(forwarded);
      expect(forwarded.filter((id) => stored.has(id) === logged.has(id))).toEqual([]);
      expect([...stored, ...logged.keys()].filter((id) => !known.has(id))).toEqual([]);
      expect(book.spentNano).toBe(book.recordCost);
      expect(book.daily.calls).toBe(BigInt(stored.size));
      expect(calls.filter((entry) => entry.problem !== undefined)).toEqual([]);
    });
  });
});
