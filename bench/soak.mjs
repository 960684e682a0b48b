#!/usr/bin/env node
// `npm run soak [-- --minutes 10 --concurrency 32 --database-url postgres://…]`: a mixed load on
// the gateway for a set time (not part of CI). Starts the bench mock upstream
// and the seeded bench gateway (scripts/bench-gateway.ts), then keeps --concurrency clients
// busy with chat JSON, chat SSE, messages SSE, translated responses SSE and, now and then, a
// call the gateway must refuse (a wrong key, an unknown model). Every --every seconds it prints
// requests, errors, requests per second and the gateway's RSS; at the end, the usage records
// written against the calls that went upstream, and the spend audit of the bench owner.
//
// Exit code 1 when any call that should succeed failed, records written ≠ calls forwarded, or the
// spend audit finds a difference.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { freePort, getJson, killOnExit, waitForPort } from './ports.mjs';
import { gatewayEnv } from './gateway-env.mjs';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    every: { type: 'string', default: '10' },
    'database-url': { type: 'string' },
  },
});
const KEY = 'gk-bench-key';
const mib = (bytes) => Math.round(bytes / 1048576);
const rssOf = (pid) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-soak-'));
const children = [];
killOnExit(children, dataDir);
function start(args, env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}
const [mockPort, gatewayPort, controlPort] = [await freePort(), await freePort(), await freePort()];
start(['bench/mock-upstream.mjs', '--port', String(mockPort)], {});
const gateway = start(
  ['dist/scripts/bench-gateway.js'],
  gatewayEnv({
    PORT: String(gatewayPort),
    UPSTREAM_URL: `http://127.0.0.1:${mockPort}`,
    BENCH_CONTROL_PORT: String(controlPort),
    DATABASE_URL: opt['database-url'] ?? '',
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  }),
);
await Promise.all([waitForPort(mockPort), waitForPort(gatewayPort), waitForPort(controlPort)]);
const client = new Pool(`http://127.0.0.1:${gatewayPort}`, { connections: Number(opt.concurrency) * 2 });

const json = (value) => JSON.stringify(value);
/** What the load is made of: [name, path, body, extra headers, expected status, goes upstream]. */
const KINDS = [
  ['chat', '/v1/chat/completions', json({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Reply with ok.' }], max_tokens: 32 }), {}, 200, true],
  ['chat-sse', '/v1/chat/completions', json({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Reply with ok.' }], stream: true }), {}, 200, true],
  [
    'messages-sse',
    '/v1/messages',
    json({ model: 'claude-3-5-haiku-latest', max_tokens: 32, messages: [{ role: 'user', content: 'Reply with ok.' }], stream: true }),
    { 'anthropic-version': '2023-06-01' },
    200,
    true,
  ],
  ['translated-sse', '/v1/responses', json({ model: 'responses-on-messages', input: 'Reply with ok.', max_output_tokens: 32, stream: true }), {}, 200, true],
];
const REFUSED = [
  ['wrong-key', '/v1/chat/completions', KINDS[0][2], { authorization: 'Bearer gk-not-a-key' }, 401, false],
  ['unknown-model', '/v1/chat/completions', json({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }), {}, 404, false],
];

const totals = { requests: 0, errors: 0, forwarded: 0, byKind: {} };
async function once(kind) {
  const [name, urlPath, body, headers, expected, upstream] = kind;
  const tally = (totals.byKind[name] ??= { requests: 0, errors: 0 });
  totals.requests += 1;
  tally.requests += 1;
  try {
    const response = await client.request({
      path: urlPath,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers },
      body,
    });
    await response.body.dump({ limit: Infinity });
    if (response.statusCode !== expected) throw new Error(`status ${response.statusCode}`);
    if (upstream) totals.forwarded += 1;
  } catch {
    totals.errors += 1;
    tally.errors += 1;
  }
}

const startedAt = Date.now();
const endAt = startedAt + Number(opt.minutes) * 60_000;
async function worker(index) {
  for (let turn = index; Date.now() < endAt; turn++) {
    await once(turn % 50 === 49 ? REFUSED[turn % REFUSED.length] : KINDS[turn % KINDS.length]);
  }
}
const samples = [];
const ticker = (async () => {
  let last = { at: startedAt, requests: 0 };
  while (Date.now() < endAt) {
    await sleep(Math.min(Number(opt.every) * 1000, Math.max(0, endAt - Date.now())));
    const now = Date.now();
    const sample = {
      minute: Number(((now - startedAt) / 60_000).toFixed(2)),
      requests: totals.requests,
      errors: totals.errors,
      per_second: Math.round((totals.requests - last.requests) / ((now - last.at) / 1000)),
      rss_mib: mib(rssOf(gateway.pid)),
    };
    samples.push(sample);
    last = { at: now, requests: totals.requests };
    process.stderr.write(
      `[soak] ${sample.minute} min: ${sample.requests} requests, ${sample.errors} errors, ${sample.per_second}/s, RSS ${sample.rss_mib} MiB\n`,
    );
  }
})();
await Promise.all([...Array.from({ length: Number(opt.concurrency) }, (_, index) => worker(index)), ticker]);

const usage = await getJson(`http://127.0.0.1:${controlPort}/usage`);
for (const child of children) child.kill('SIGTERM');
await client.close();
await sleep(1000);
fs.rmSync(dataDir, { recursive: true, force: true });

const ok = totals.errors === 0 && usage.records === totals.forwarded && usage.audit.differences === 0;
console.log(
  JSON.stringify(
    { minutes: Number(opt.minutes), concurrency: Number(opt.concurrency), ...totals, usage_records: usage.records, audit: usage.audit, samples },
    null,
    2,
  ),
);
console.log(
  `soak ${opt.minutes} min: ${totals.requests} requests, ${totals.errors} errors, RSS ${samples[0]?.rss_mib ?? '?'} → ${samples.at(-1)?.rss_mib ?? '?'} MiB, ` +
    `${usage.records} usage records of ${totals.forwarded} calls forwarded, spend audit ${usage.audit.differences} differences in ${usage.audit.records_checked} records: ${ok ? 'OK' : 'FAILED'}`,
);
process.exit(ok ? 0 : 1);
