/**
 * Starts one gateway for a benchmark run (`npm run bench`, bench/run.mjs): upstream =
 * $UPSTREAM_URL (the bench mock), key $BENCH_KEY (default `gk-bench-key`), models
 * `gpt-4o-mini` (chat), `claude-3-5-haiku-latest` (messages) and `responses-on-messages`
 * (messages only, for translated calls on the responses entry), embedded database unless
 * DATABASE_URL is set, admin API on with $ADMIN_TOKEN. $BENCH_KEY_LIMITS (a YAML mapping such as
 * `{ requests_per_minute: 1000000000 }`) gives the key rate limits, to measure what counting costs.
 *
 * The embedded database is kept in $DATA_DIR; without it, in a new folder on disk that is removed
 * when the process exits, as a deployment keeps its data on disk (`DATA_DIR=memory` is the
 * tests' in-memory engine, a different engine to measure).
 *
 * With $BENCH_CONTROL_PORT it also listens on that loopback port, apart from the gateway's own
 * server, for the runner: `GET /usage` writes the queued usage records and answers how many
 * records of owner `bench` were started since this process began, and their cost; `GET /memory`
 * answers `process.memoryUsage()` (the main thread's), and `POST /memory/collect` does so after
 * a full collection of the heaps of the main thread and of the embedded engine's worker (V8's
 * low-memory collection, the inspector's `collectGarbage`). `GET /loop` answers the main
 * thread's event-loop delay since the previous `/loop` (or since the start), in milliseconds
 * (`perf_hooks.monitorEventLoopDelay`, resolution 10 ms), and starts a new measure.
 */
import 'reflect-metadata';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { createGatewayApp } from '../src/app.factory';
import { loadGatewayConfig } from '../src/config/config.loader';
import { databaseSettingsFromEnv } from '../src/config/settings/database.settings';
import { defaultSettings } from '../src/config/gateway-options';
import { installGracefulShutdown } from '../src/common/graceful-shutdown';
import { UsageWriter } from '../src/metering/usage-writer.service';
import { AdminService } from '../src/admin/admin.service';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';

const yaml = `
upstreams:
  - id: mock
    base_url: \${UPSTREAM_URL}
    api_key: bench-vendor-key
models:
  - id: gpt-4o-mini
    upstream_model: gpt-4o-mini-upstream
    interfaces: [chat_completions]
    lines: [mock]
    prices: { input_tokens: 0.15, output_tokens: 0.6 }
  - id: claude-3-5-haiku-latest
    upstream_model: claude-3-5-haiku-upstream
    interfaces: [messages]
    lines: [mock]
    prices: { input_tokens: 0.8, output_tokens: 4 }
  - id: responses-on-messages
    upstream_model: responses-on-messages-upstream
    interfaces: [messages]
    lines: [mock]
    prices: { input_tokens: 0.8, output_tokens: 4 }
  - id: image-edit
    upstream_model: image-edit-upstream
    interfaces: [images_a]
    lines: [mock]
    prices: { input_text_tokens: 5, input_image_tokens: 10, output_image_tokens: 40 }
owners:
  - id: bench
    kind: project
    budget: 1000000
keys:
  - key: \${BENCH_KEY}
    owner: bench
    models: ["*"]
${process.env.BENCH_KEY_LIMITS ? `    limits: ${process.env.BENCH_KEY_LIMITS}\n` : ''}`;

/**
 * The runner's side door: flush the usage writer, then count this process's records and audit
 * the owner's spend (`/usage`); the process's memory (`/memory`); the event loop's delay (`/loop`).
 */
function listenControl(app: NestFastifyApplication, port: number, since: Date): void {
  const writer = app.get(UsageWriter);
  const dataSource = app.get(DataSource);
  let collect: (() => Promise<number>) | undefined;
  // How late a 10 ms timer of the main thread fires: how long the loop was kept from other work.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/loop') {
      // Each sample is the time from one timer callback to the next: 10 ms when nothing held the loop.
      const ms = (ns: number) => (loopDelay.count > 0 ? Math.round(ns / 1e3) / 1e3 : null);
      const body = JSON.stringify({
        resolution_ms: 10,
        samples: loopDelay.count,
        min_ms: ms(loopDelay.min),
        mean_ms: ms(loopDelay.mean),
        p50_ms: ms(loopDelay.percentile(50)),
        p90_ms: ms(loopDelay.percentile(90)),
        p99_ms: ms(loopDelay.percentile(99)),
        p999_ms: ms(loopDelay.percentile(99.9)),
        max_ms: ms(loopDelay.max),
      });
      loopDelay.reset();
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    // The main thread's V8 heap and buffers (bench/memory.mjs samples them next to RSS).
    const answerMemory = (heapsCollected?: number) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...process.memoryUsage(), heapsCollected }));
    if (request.method === 'GET' && request.url === '/memory') {
      answerMemory();
      return;
    }
    if (request.method === 'POST' && request.url === '/memory/collect') {
      collect ??= fullCollection();
      collect().then(answerMemory, (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error)));
      return;
    }
    if (request.method !== 'GET' || request.url !== '/usage') {
      response.writeHead(404).end();
      return;
    }
    void (async () => {
      await writer.flush();
      const rows: Array<{ records: string; cost_nano: string }> = await dataSource.query(
        `SELECT count(*)::text AS records, coalesce(sum(cost_nano), 0)::text AS cost_nano
           FROM usage_record WHERE owner_id = 'bench' AND started_at >= $1`,
        [since],
      );
      const groups: Array<Record<string, unknown>> = await dataSource.query(
        `SELECT model, interface, translated_to, stream, status, count(*)::int AS records
           FROM usage_record WHERE owner_id = 'bench' AND started_at >= $1
          GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 5`,
        [since],
      );
      // The spend audit of the bench's owner: every record's cost again from its prices, spent against the records.
      const audit = await app.get(AdminService).verifySpend({ owner: 'bench' });
      const body = JSON.stringify({
        records: Number(rows[0].records),
        cost_nano: rows[0].cost_nano,
        queued: writer.depth,
        groups,
        audit: {
          records_checked: audit.records_checked,
          records_without_prices: audit.records_without_prices,
          differences: audit.differences.length + audit.unlisted_differences,
        },
      });
      response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    })().catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  server.listen(port, '127.0.0.1');
  server.unref();
}

/** Collects every heap of the process: the main thread's, then each worker's through the inspector's NodeWorker domain. */
function fullCollection(): () => Promise<number> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}) =>
    new Promise<void>((resolve, reject) => session.post(method, params, (error) => (error ? reject(error) : resolve())));
  const workers = new Set<string>();
  const waiting = new Map<number, () => void>();
  let nextId = 1;
  session.on('NodeWorker.attachedToWorker', ({ params }: { params: { sessionId: string } }) => workers.add(params.sessionId));
  session.on('NodeWorker.detachedFromWorker', ({ params }: { params: { sessionId: string } }) => workers.delete(params.sessionId));
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }: { params: { message: string } }) => {
    const { id } = JSON.parse(params.message) as { id?: number };
    if (id !== undefined) waiting.get(id)?.();
  });
  const inWorker = (sessionId: string) =>
    new Promise<void>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, () => {
        waiting.delete(id);
        resolve();
      });
      post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }) }).catch(reject);
    });
  const attached = post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  return async () => {
    await attached;
    await post('HeapProfiler.collectGarbage');
    for (const sessionId of workers) await inWorker(sessionId);
    return 1 + workers.size;
  };
}

/**
 * With $BENCH_CPU_PROFILE (a file name), SIGUSR2 starts the V8 CPU profiler and the next
 * SIGUSR2 writes the profile there (bench/profile.mjs: only the measured load, no start-up).
 * With $BENCH_HEAP_PROFILE instead, the same signals start and stop V8's sampling heap profiler
 * over every allocation, collected garbage included (`bench/profile.mjs --allocations`), or with
 * $BENCH_HEAP_SURVIVORS set only over what outlived a young-generation collection (`--survivors`).
 */
function listenProfileSignal(file: string, kind: 'cpu' | 'allocations', survivorsOnly = false): void {
  const session = new Session();
  session.connect();
  let running = false;
  const write = (error: Error | null, result: { profile: unknown }) => {
    if (!error) writeFileSync(file, JSON.stringify(result.profile));
  };
  process.on('SIGUSR2', () => {
    running = !running;
    if (kind === 'cpu') {
      if (running) session.post('Profiler.enable', () => session.post('Profiler.start'));
      else session.post('Profiler.stop', write);
    } else if (running) {
      const sampling = { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !survivorsOnly };
      session.post('HeapProfiler.enable', () => session.post('HeapProfiler.startSampling', sampling));
    } else {
      session.post('HeapProfiler.stopSampling', write);
    }
  });
}

/** A new data folder for this process only, removed when it exits. */
function temporaryDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gateway-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function main(): Promise<void> {
  const since = new Date();
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_KEY: process.env.BENCH_KEY ?? 'gk-bench-key' };
  const config = loadGatewayConfig(yaml, env);
  const settings = databaseSettingsFromEnv(env);
  const database = settings.url || env.DATA_DIR ? settings : { ...settings, dataDir: temporaryDataDir() };
  const app = await createGatewayApp({ config, database, adminToken: env.ADMIN_TOKEN, ...defaultSettings(env) }, { logger: ['error', 'warn'] });
  installGracefulShutdown(app, 5_000);
  await app.listen(Number(env.PORT ?? 8080), '127.0.0.1');
  if (env.BENCH_CPU_PROFILE) listenProfileSignal(env.BENCH_CPU_PROFILE, 'cpu');
  else if (env.BENCH_HEAP_PROFILE) listenProfileSignal(env.BENCH_HEAP_PROFILE, 'allocations', env.BENCH_HEAP_SURVIVORS === '1');
  if (env.BENCH_CONTROL_PORT) listenControl(app, Number(env.BENCH_CONTROL_PORT), since);
}

void main().catch((error) => {
  process.stderr.write(`bench gateway failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
