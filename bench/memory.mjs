#!/usr/bin/env node
// `npm run bench:memory [-- --minutes 10]`: the gateway's memory under large bodies and over a
// long mixed load, on the same simulator and seeded gateway as `npm run bench`.
//
// 1. Large bodies: rounds of 8 concurrent 30 MiB requests (a chat message carrying a 30 MiB
//    base64 data URL, the shape of an image edit sent as JSON), RSS of the gateway sampled every
//    20 ms; prints the peak.
// 2. Mixed load: chat JSON, chat SSE, messages SSE and translated SSE, 32 at a time. A warm-up
//    of --warm-seconds (60) of that load, then --settle-seconds (30) without load: the start.
//    Then --minutes of the load with RSS every 10 s, and --settle-seconds without load again:
//    the end. At both, RSS is read as it stands and after a full collection of every heap of the
//    process (the main thread's and the embedded engine's worker's); the pair after the
//    collection is judged, since how much garbage the heaps hold under this load depends
//    on where V8's collections happen to stand (docs/performance.md "Like with like"). Each
//    reading also gives the main thread's V8 heap and buffers; the usage records written are
//    counted against the calls made.
//
// 3. Image edits: one 30 MiB `multipart/form-data` edit, one 30 MiB JSON edit, then
//    rounds of 8 concurrent multipart edits; peak RSS of each. `--images-only` runs just this.
//
// Exit code 1 when the peak passes --peak-limit-mib (400) or RSS once the mixed load is over is
// more than 10 % above its start (the memory target: RSS returns within 10 % of where it
// started). The pair before the collection, and the first reading under load (20 s into it), are
// printed beside it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, getJson, killOnExit, onEarlyExit, waitForPort } from './ports.mjs';
import { gatewayEnv } from './gateway-env.mjs';
import { Pool } from 'undici';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'settle-seconds': { type: 'string', default: '30' },
    'warm-seconds': { type: 'string', default: '60' },
    'body-mib': { type: 'string', default: '30' },
    concurrent: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '5' },
    'peak-limit-mib': { type: 'string', default: '400' },
    'database-url': { type: 'string' },
    'images-only': { type: 'boolean', default: false },
  },
});
const KEY = 'gk-bench-key';
const log = (line) => process.stderr.write(`[memory] ${line}\n`);
const mib = (bytes) => Math.round(bytes / 1048576);

function rssOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) * 1024;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-memory-'));
const children = [];
killOnExit(children, dataDir);
function start(args, env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}
const mockPort = await freePort();
const gatewayPort = await freePort();
const controlPort = await freePort();
start(['bench/mock-upstream.mjs', '--port', String(mockPort)], {});
const gateway = start(
  ['dist/scripts/bench-gateway.js'],
  gatewayEnv({
    PORT: String(gatewayPort),
    UPSTREAM_URL: `http://127.0.0.1:${mockPort}`,
    BENCH_CONTROL_PORT: String(controlPort),
    DATABASE_URL: opt['database-url'] ?? '',
    DATA_DIR: dataDir,
  }),
);
// A gateway that stops before the run does (it could not start, or it crashed) ends the run at once.
const stoppingGateway = onEarlyExit(gateway, (why) => {
  log(`the gateway exited (${why}) before the run ended`);
  for (const child of children) child.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
});
await Promise.all([waitForPort(mockPort), waitForPort(gatewayPort), waitForPort(controlPort)]);
const client = new Pool(`http://127.0.0.1:${gatewayPort}`, { connections: 128, bodyTimeout: 120_000, headersTimeout: 120_000 });
let failures = 0;

/** Stops the gateway and the mock and removes the run's data folder. */
async function shutDown() {
  stoppingGateway();
  for (const child of children) child.kill('SIGTERM');
  await client.close();
  await sleep(1000);
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** Peak RSS of the gateway while `work` runs, sampled every 20 ms. */
async function peakDuring(work) {
  let peak = rssOf(gateway.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(gateway.pid));
  }, 20);
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, rssOf(gateway.pid));
}

/** A 30 MiB image edit as a form (model, prompt, one PNG-typed file) and as JSON (a base64 data URL). */
function imageEditBodies(bytes) {
  const boundary = '----gateway-memory-bench';
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nimage-edit\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nMake it blue.\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="large.png"\r\ncontent-type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const form = Buffer.concat([head, Buffer.alloc(bytes - head.length - tail.length, 0x5a), tail]);
  const picture = Buffer.alloc(Math.floor((bytes * 3) / 4) - 256, 7).toString('base64');
  const json = Buffer.from(JSON.stringify({ model: 'image-edit', prompt: 'Make it blue.', images: [{ image_url: `data:image/png;base64,${picture}` }] }));
  return { form, formType: `multipart/form-data; boundary=${boundary}`, json };
}

async function imageEdits() {
  const { form, formType, json } = imageEditBodies(Number(opt['body-mib']) * 1048576);
  await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }] }));
  const idleImages = rssOf(gateway.pid);
  const timed = async (work) => {
    const started = performance.now();
    await work();
    return Math.round(performance.now() - started);
  };
  let formMs = 0;
  let jsonMs = 0;
  const single = await peakDuring(async () => {
    formMs = await timed(() => call('/v1/images/edits', form, { 'content-type': formType }));
  });
  const singleJson = await peakDuring(async () => {
    jsonMs = await timed(() => call('/v1/images/edits', json));
  });
  // The same form straight to the mock: what the transfer costs without the gateway.
  const direct = new Pool(`http://127.0.0.1:${mockPort}`);
  const directMs = await timed(async () => {
    const response = await direct.request({ path: '/v1/images/edits', method: 'POST', headers: { 'content-type': formType }, body: form });
    await response.body.dump({ limit: Infinity });
  });
  await direct.close();
  const concurrentPeak = await peakDuring(async () => {
    for (let round = 0; round < Number(opt.rounds); round++) {
      await Promise.all(Array.from({ length: Number(opt.concurrent) }, () => call('/v1/images/edits', form, { 'content-type': formType })));
    }
  });
  const result = {
    body_mib: mib(form.length),
    idle_rss_mib: mib(idleImages),
    single_form_peak_mib: mib(single),
    single_json_peak_mib: mib(singleJson),
    single_form_ms: formMs,
    single_json_ms: jsonMs,
    direct_to_upstream_form_ms: directMs,
    concurrent: Number(opt.concurrent),
    rounds: Number(opt.rounds),
    concurrent_form_peak_mib: mib(concurrentPeak),
  };
  log(
    `image edits: idle ${result.idle_rss_mib} MiB; one ${result.body_mib} MiB form: peak ${result.single_form_peak_mib} MiB; ` +
      `one JSON: ${result.single_json_peak_mib} MiB; times: form ${formMs} ms, JSON ${jsonMs} ms, form straight to the upstream ${directMs} ms; ${result.concurrent} concurrent forms: ${result.concurrent_form_peak_mib} MiB; failures ${failures}`,
  );
  return { ...result, calls: 3 + Number(opt.rounds) * Number(opt.concurrent) };
}

if (opt['images-only']) {
  const images = await imageEdits();
  const usage = await getJson(`http://127.0.0.1:${controlPort}/usage`);
  await shutDown();
  console.log(JSON.stringify({ image_edits: images, usage_records: usage.records, failures }, null, 2));
  process.exit(failures === 0 && usage.records === images.calls ? 0 : 1);
}

async function call(path, body, headers = {}) {
  const response = await client.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...headers },
    body,
  });
  await response.body.dump({ limit: Infinity });
  if (response.statusCode !== 200) failures += 1;
  return response.statusCode;
}

// ------------------------------------------------------------------ 1. large bodies
const bodyBytes = Number(opt['body-mib']) * 1048576;
const picture = Buffer.alloc(Math.floor((bodyBytes * 3) / 4), 7).toString('base64');
const large = Buffer.from(
  JSON.stringify({
    model: 'gpt-4o-mini',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Edit this picture.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${picture}` } },
        ],
      },
    ],
  }),
);
await call('/v1/chat/completions', JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'warm up' }] }));
const idle = rssOf(gateway.pid);
let peak = idle;
const sampler = setInterval(() => {
  peak = Math.max(peak, rssOf(gateway.pid));
}, 20);
const concurrent = Number(opt.concurrent);
for (let round = 0; round < Number(opt.rounds); round++) {
  const statuses = await Promise.all(Array.from({ length: concurrent }, () => call('/v1/chat/completions', large)));
  log(`round ${round + 1}: ${concurrent} × ${mib(large.length)} MiB, statuses ${[...new Set(statuses)].join(',')}, peak RSS so far ${mib(peak)} MiB`);
}
clearInterval(sampler);
await sleep(2000);
const afterLarge = rssOf(gateway.pid);
const images = await imageEdits();

// ------------------------------------------------------------------ 2. mixed load
const chatBody = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Reply with ok.' }], max_tokens: 32 });
const chatStream = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Reply with ok.' }], stream: true });
const messagesStream = JSON.stringify({
  model: 'claude-3-5-haiku-latest',
  max_tokens: 32,
  messages: [{ role: 'user', content: 'Reply with ok.' }],
  stream: true,
});
const translated = JSON.stringify({ model: 'responses-on-messages', input: 'Reply with ok.', max_output_tokens: 32, stream: true });
const kinds = [
  () => call('/v1/chat/completions', chatBody),
  () => call('/v1/chat/completions', chatStream),
  () => call('/v1/messages', messagesStream, { 'anthropic-version': '2023-06-01' }),
  () => call('/v1/responses', translated),
];
let calls = 0;
async function memoryNow(collect = false) {
  const heap = await getJson(`http://127.0.0.1:${controlPort}/memory${collect ? '/collect' : ''}`, { method: collect ? 'POST' : 'GET' });
  if (collect) await sleep(1000); // the sweeper gives the pages back
  const reading = {
    rss_mib: mib(rssOf(gateway.pid)),
    heap_used_mib: mib(heap.heapUsed),
    heap_total_mib: mib(heap.heapTotal),
    array_buffers_mib: mib(heap.arrayBuffers),
  };
  return collect ? { ...reading, heaps_collected: heap.heapsCollected } : reading;
}
const described = (reading) =>
  `RSS ${reading.rss_mib} MiB (V8 heap ${reading.heap_used_mib} of ${reading.heap_total_mib}, buffers ${reading.array_buffers_mib}` +
  `${reading.heaps_collected ? `; heaps collected: ${reading.heaps_collected}` : ''})`;

/** The mixed load for `ms`, 32 at a time; `onTick` every 10 s. */
async function mixedLoad(ms, onTick) {
  const until = Date.now() + ms;
  async function worker(index) {
    while (Date.now() < until) {
      await kinds[(index + calls) % kinds.length]().catch(() => {
        failures += 1;
      });
      calls += 1;
    }
  }
  const ticker = (async () => {
    while (onTick && Date.now() < until) {
      await sleep(Math.min(10_000, Math.max(0, until - Date.now())));
      await onTick(ms - (until - Date.now()));
    }
  })();
  await Promise.all([...Array.from({ length: 32 }, (_, index) => worker(index)), ticker]);
}

/** RSS once the load has been gone for --settle-seconds, as it stands and after a full collection. */
async function settled(what) {
  await sleep(Number(opt['settle-seconds']) * 1000);
  const reading = await memoryNow();
  const collected = await memoryNow(true);
  log(`${what}, ${opt['settle-seconds']} s without load: ${described(reading)}; after a full collection ${described(collected)}`);
  return { ...reading, collected };
}

await mixedLoad(Number(opt['warm-seconds']) * 1000);
const atStart = await settled(`warm-up of ${opt['warm-seconds']} s (${calls} calls)`);
const warmCalls = calls;
const samples = [];
await mixedLoad(Number(opt.minutes) * 60_000, async (elapsedMs) => {
  if (elapsedMs < 15_000) return; // from the second tick, 20 s in
  samples.push({ minute: Number((elapsedMs / 60_000).toFixed(2)), ...(await memoryNow()), calls: calls - warmCalls });
  const sample = samples.at(-1);
  log(`${sample.minute} min: ${described(sample)}, ${sample.calls} calls`);
});
await sleep(2000);
const endOfLoad = rssOf(gateway.pid);
const atEnd = await settled(`${opt.minutes} min of load (${calls - warmCalls} calls; ${mib(endOfLoad)} MiB when it stopped)`);
const usage = await getJson(`http://127.0.0.1:${controlPort}/usage`);

await shutDown();

/** Growth from `from` to `to` in per cent, one decimal. */
const percent = (from, to) => (from === undefined ? undefined : Number((((to - from) / from) * 100).toFixed(1)));
const growth = percent(atStart.collected.rss_mib, atEnd.collected.rss_mib);
const underLoad = samples[0]?.rss_mib;
const result = {
  large_bodies: {
    body_mib: mib(large.length),
    concurrent,
    rounds: Number(opt.rounds),
    idle_rss_mib: mib(idle),
    peak_rss_mib: mib(peak),
    rss_after_mib: mib(afterLarge),
  },
  mixed_load: {
    warm_seconds: Number(opt['warm-seconds']),
    minutes: Number(opt.minutes),
    settle_seconds: Number(opt['settle-seconds']),
    calls: calls - warmCalls,
    warm_calls: warmCalls,
    failures,
    start: atStart,
    end_of_load_rss_mib: mib(endOfLoad),
    end: atEnd,
    growth_percent: growth,
    growth_before_collection_percent: percent(atStart.rss_mib, atEnd.rss_mib),
    first_under_load_rss_mib: underLoad,
    growth_from_first_under_load_percent: percent(underLoad, atEnd.rss_mib),
    samples,
  },
  image_edits: images,
  usage_records: usage.records,
  calls_made: calls + Number(opt.rounds) * concurrent + 1 + images.calls,
};
console.log(JSON.stringify(result, null, 2));
const ok = mib(peak) < Number(opt['peak-limit-mib']) && growth <= 10 && failures === 0 && usage.records === result.calls_made;
console.log(
  `peak RSS ${mib(peak)} MiB with ${concurrent} × ${mib(large.length)} MiB bodies (limit ${opt['peak-limit-mib']}); ` +
    `mixed load ${opt.minutes} min: RSS ${atStart.collected.rss_mib} → ${atEnd.collected.rss_mib} MiB after a full collection, ${opt['settle-seconds']} s after the warm-up and after the load (${growth} %; ` +
    `before the collection ${atStart.rss_mib} → ${atEnd.rss_mib} MiB, ${percent(atStart.rss_mib, atEnd.rss_mib)} %; ` +
    `from the first reading under load, ${underLoad ?? '-'} MiB: ${percent(underLoad, atEnd.rss_mib) ?? '-'} %; ${mib(endOfLoad)} MiB when it stopped), ` +
    `${calls} calls, ${failures} failures, ${usage.records} usage records of ${result.calls_made} calls: ${ok ? 'OK' : 'FAILED'}`,
);
process.exit(ok ? 0 : 1);
