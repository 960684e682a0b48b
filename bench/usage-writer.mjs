#!/usr/bin/env node
// `npm run bench:usage-writer [-- --records 200000]`: how many usage records per second the
// batched writer stores, with every index and the daily roll-up trigger in
// place. DATABASE_URL set: that PostgreSQL server (a fresh database is made and dropped);
// unset: a throwaway PostgreSQL cluster from the machine's binaries (as `npm run test:pg`),
// or `--embedded` for PGlite in memory.
//
// The records are enqueued as fast as the writer takes them (20 owners, 10 models, two days),
// then flushed; the figure is records / (time from the first enqueue to the last commit).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { freePort } from './ports.mjs';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const require = createRequire(import.meta.url);
const { values: opt } = parseArgs({
  options: {
    records: { type: 'string', default: '200000' },
    'batch-size': { type: 'string', default: '500' },
    embedded: { type: 'boolean', default: false },
    // For comparison: the same run without the daily roll-up trigger and the query indexes.
    bare: { type: 'boolean', default: false },
  },
});
const RECORDS = Number(opt.records);

const { openDataSource } = require(path.join(ROOT, 'dist/src/database/data-source.js'));
const { UsageWriter } = require(path.join(ROOT, 'dist/src/metering/usage-writer.service.js'));
const { QuotaService } = require(path.join(ROOT, 'dist/src/metering/quota.service.js'));
const { Clock } = require(path.join(ROOT, 'dist/src/common/clock.js'));
const { RateLimiter } = require(path.join(ROOT, 'dist/src/governance/rate-limiter.js'));
const { Client } = require('pg');

/** A throwaway cluster as scripts/test-pg.sh makes one; returns its URL and a stop function. */
async function throwawayCluster() {
  const versions = fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b)) : [];
  if (versions.length === 0) throw new Error('no PostgreSQL binaries (apt-get install postgresql), and DATABASE_URL is unset; or pass --embedded');
  const bin = `/usr/lib/postgresql/${versions.at(-1)}/bin`;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-bench-pg.'));
  const root = process.getuid?.() === 0;
  const asOwner = (command, args) => (root ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args]);
  if (root) execFileSync('chown', ['postgres', work]);
  const port = await freePort();
  const run = (command, args) => {
    const [file, argv] = asOwner(command, args);
    const result = spawnSync(file, argv, { stdio: 'pipe' });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
  };
  run(`${bin}/initdb`, ['-D', `${work}/data`, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  // Durable commits (fsync on): the figure is what a real server gives, not a RAM disk's.
  run(`${bin}/pg_ctl`, ['-D', `${work}/data`, '-l', `${work}/server.log`, '-w', '-o', `-p ${port} -k ${work} -c listen_addresses=127.0.0.1`, 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => {
      try {
        run(`${bin}/pg_ctl`, ['-D', `${work}/data`, '-m', 'fast', 'stop']);
      } finally {
        fs.rmSync(work, { recursive: true, force: true });
      }
    },
  };
}

async function withServerDatabase(serverUrl, work) {
  const name = `usage_bench_${Date.now()}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    return await work({ url: url.toString(), dataDir: 'memory', poolSize: 10 });
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

async function measure(settings) {
  const dataSource = await openDataSource(settings);
  if (opt.bare) {
    await dataSource.query(`DROP TRIGGER usage_daily_add ON usage_record`);
    for (const index of ['usage_record_time', 'usage_record_key_time', 'usage_record_model_time']) await dataSource.query(`DROP INDEX ${index}`);
  }
  const owners = Array.from({ length: 20 }, (_, index) => `bench-owner-${index}`);
  for (const owner of owners) await dataSource.query(`INSERT INTO quota_owner (id, kind) VALUES ($1, 'project')`, [owner]);
  const clock = new Clock();
  const quota = new QuotaService(dataSource, clock, { balanceTtlMs: 1000 });
  // No alerts to deliver: the writer only nudges the delivery after a batch.
  const alerts = { nudge: () => undefined };
  const writerSettings = { flushIntervalMs: 200, batchSize: Number(opt['batch-size']), shutdownDeadlineMs: 10_000 };
  const writer = new UsageWriter(dataSource, quota, new RateLimiter(clock), clock, alerts, writerSettings);
  const keyId = randomUUID();
  const start = performance.now();
  const now = Date.now();
  for (let index = 0; index < RECORDS; index++) {
    writer.enqueue({
      requestId: randomUUID(),
      clientRequestId: index % 3 === 0 ? `client-${index}` : null,
      keyId,
      ownerId: owners[index % owners.length],
      model: `model-${index % 10}`,
      interface: 'chat_completions',
      line: 'line-a',
      translatedTo: null,
      status: index % 50 === 0 ? 429 : 200,
      errorCode: index % 50 === 0 ? 'rate_limit_exceeded' : null,
      stream: index % 2 === 0,
      usage: { input_tokens: 1200 + (index % 100), output_tokens: 300 + (index % 40), cached_input_tokens: index % 7 },
      costNano: 4_500_000n + BigInt(index % 1000),
      startedAt: new Date(now - (index % 2) * 86_400_000),
      durationMs: 800,
      upstreamHeadersMs: 200,
      tags: null,
      endUser: null,
      linesTried: null,
      priceSheet: null,
      priceBasis: null,
    });
    // Let the writer run while records keep coming, as they do under load.
    if (index % 5000 === 4999) await new Promise((resolve) => setImmediate(resolve));
  }
  await writer.flush();
  while (writer.depth > 0) await writer.flush();
  const seconds = (performance.now() - start) / 1000;
  const [{ rows }] = await dataSource.query(`SELECT count(*)::int AS rows FROM usage_record`);
  const [{ calls }] = await dataSource.query(`SELECT sum(calls)::int AS calls FROM usage_daily`);
  writer.onModuleDestroy();
  await dataSource.destroy();
  if (rows !== RECORDS || (!opt.bare && calls !== RECORDS)) throw new Error(`stored ${rows} records and ${calls} calls in the totals, expected ${RECORDS}`);
  return seconds;
}

let seconds;
let where;
if (opt.embedded) {
  where = 'embedded PGlite (memory)';
  seconds = await measure({ dataDir: 'memory' });
} else if (process.env.DATABASE_URL) {
  where = 'PostgreSQL at DATABASE_URL';
  seconds = await withServerDatabase(process.env.DATABASE_URL, measure);
} else {
  const cluster = await throwawayCluster();
  where = 'throwaway PostgreSQL cluster (fsync on)';
  try {
    seconds = await withServerDatabase(cluster.url, measure);
  } finally {
    cluster.stop();
  }
}
console.log(
  `${RECORDS} usage records on ${where}${opt.bare ? ' without roll-up trigger and query indexes' : ''}: ${seconds.toFixed(1)} s, ${Math.round(RECORDS / seconds)} records/s (batches of ${opt['batch-size']}, ${os.cpus().length} cores)`,
);
