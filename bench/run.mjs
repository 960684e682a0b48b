#!/usr/bin/env node
// `npm run bench`: what the gateway costs on top of a bare pass-through proxy, measured in one
// run on this machine. See bench/README.md. `node bench/run.mjs --help`.
//
// Starts the simulated vendor (mock-upstream.mjs), the bare proxy (bare-proxy.mjs) and the
// gateway (dist/scripts/bench-gateway.js, seeded key, embedded database unless
// --database-url), checks one call per scenario and target, loads each scenario on each
// target in turn (wrk, or autocannon without wrk), probes stream TTFB at concurrency 1, counts
// the gateway's usage records against the calls the vendor received from it, and prints one
// markdown table (+ results.json / results.md under bench/results/<timestamp>/).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { gatewayEnv as gatewayEnvOf } from './gateway-env.mjs';
import { getJson } from './ports.mjs';
import { busyPercent, busySeconds, cpuTicks, groupCpu, mainThreadCpu, ownCpu } from './proc-stats.mjs';
import { longStreamsArgs } from './long-run.mjs';
import { judge, targetsTable } from './targets.mjs';
import { probeFirstBytes } from './ttfb.mjs';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH_DIR);
const STARTED = new Date();

const HELP = `Usage: npm run bench [-- options]     (or: node bench/run.mjs [options] after npm run build)

  --quick                short run: 3 s per cell, 1 rep (about 1.5 minutes with the build)
  --duration S           seconds per measured run (default 10; --quick 3)
  --reps N               measured runs per scenario and target, alternating targets (2; --quick 1)
  --warmup S             unmeasured seconds per scenario and target before measuring (2; --quick 1)
  --scenarios LIST       comma-separated (default: all five below). A name is KIND-cN with KIND
                         one of chat, chat-sse, messages, messages-sse, translated-sse and N the
                         concurrency: chat-c1,chat-c64,chat-sse-c64,messages-sse-c64,translated-sse-c64
  --database-url URL     run the gateway on this PostgreSQL database instead of the embedded one
  --no-floor             leave out the third target, the bare proxy's work on the gateway's stack
                         (NestJS on Fastify, one controller, two guards; dist/scripts/bench-floor.js):
                         what the frameworks cost before the gateway does anything, and the base of
                         the chat JSON targets (left out, those read "not measured")
  --data-dir DIR         the embedded database's folder (default: data/ in the results folder;
                         \`memory\` keeps it in memory, as the test suites do)
  --ttfb-seconds S       per stream scenario and target: seconds of sequential streams for the TTFB
                         probe, the targets taking turns of 0.25 s (5; --quick 1)
  --chunks N             content chunks per simulated stream (20)
  --loadgen auto|wrk|autocannon    (auto: wrk when installed)
  --pin auto|on|off      taskset: load generator, simulator and runner on one CPU, the target on
                         another (auto: when taskset exists and 2+ CPUs are allowed)
  --no-long              leave out the long-stream scenarios that follow the table (bench/long-streams.mjs,
                         about 20 minutes: 5,000 chat and messages streams, 2,000 translated, the
                         RSS slope, the default pool; with this run's --database-url, --data-dir and
                         --pin, results in <out>/long-streams). --quick and --scenarios leave them
                         out unless --long
  --out DIR              results folder (default bench/results/<timestamp>)
  -h, --help
`;

const { values: opt } = parseArgs({
  allowNegative: true,
  options: {
    help: { type: 'boolean', short: 'h' },
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    reps: { type: 'string' },
    warmup: { type: 'string' },
    scenarios: { type: 'string' },
    long: { type: 'boolean' },
    'database-url': { type: 'string' },
    floor: { type: 'boolean', default: true },
    'data-dir': { type: 'string' },
    'ttfb-seconds': { type: 'string' },
    chunks: { type: 'string', default: '20' },
    loadgen: { type: 'string', default: 'auto' },
    pin: { type: 'string', default: 'auto' },
    out: { type: 'string' },
  },
});
if (opt.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}
function numberOption(name, normal, quick) {
  const text = opt[name] ?? String(opt.quick ? quick : normal);
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) fail(`--${name} must be a non-negative number, got ${text}`);
  return value;
}
const DURATION = Math.max(1, Math.round(numberOption('duration', 10, 3))); // wrk takes whole seconds
const REPS = Math.max(1, Math.floor(numberOption('reps', 2, 1)));
const WARMUP = Math.round(numberOption('warmup', 2, 1));
const FIRST_WARMUP = 2; // once per target and request kind: lets the JIT settle
const TTFB_SECONDS = numberOption('ttfb-seconds', 5, 1);
const CHUNKS = Math.max(1, Math.floor(numberOption('chunks', 20, 20)));
const log = (line) => process.stderr.write(`[bench] ${line}\n`);

// ------------------------------------------------------------------ scenarios and requests
const SYSTEM = 'You are a terse assistant.';
const PROMPT = 'Reply with ok.';
const GATEWAY_KEY = 'gk-bench-key';
const VENDOR_KEY = 'bench-vendor-key'; // what the gateway sends upstream (scripts/bench-gateway.ts)
const ADMIN_TOKEN = 'bench-admin-token';

const KINDS = {
  chat: { label: 'chat JSON', stream: false },
  'chat-sse': { label: `chat SSE (${CHUNKS} chunks)`, stream: true },
  messages: { label: 'messages JSON', stream: false },
  'messages-sse': { label: 'messages SSE', stream: true },
  'translated-sse': { label: 'responses→messages SSE', stream: true },
};
const SCENARIOS = (opt.scenarios ?? 'chat-c1,chat-c64,chat-sse-c64,messages-sse-c64,translated-sse-c64')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)
  .map((name) => {
    const match = /^(chat|chat-sse|messages|messages-sse|translated-sse)-c(\d+)$/.exec(name);
    if (!match || Number(match[2]) < 1) fail(`unknown scenario ${name} (see --help)`);
    return { name, kind: match[1], connections: Number(match[2]), ...KINDS[match[1]], label: `${KINDS[match[1]].label} c=${match[2]}` };
  });

const chatCall = (model, stream) => ({
  path: '/v1/chat/completions',
  check: stream ? 'chat-sse' : 'chat',
  body: {
    model,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: PROMPT },
    ],
    max_tokens: 32,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  },
});
const messagesCall = (model, stream) => ({
  path: '/v1/messages',
  check: stream ? 'messages-sse' : 'messages',
  body: { model, system: SYSTEM, messages: [{ role: 'user', content: PROMPT }], max_tokens: 32, ...(stream ? { stream: true } : {}) },
});

/** The bare proxy's calls. It cannot translate: its baseline for the translated scenario is the
 * same upstream exchange (messages SSE) passed through. */
function passThroughCall(kind) {
  if (kind === 'chat' || kind === 'chat-sse') return chatCall('gpt-4o-mini', kind === 'chat-sse');
  return messagesCall('claude-3-5-haiku-latest', kind !== 'messages');
}

/** What each target is sent for a request kind. */
const TARGETS = [
  { name: 'bare-proxy', call: passThroughCall, headers: () => ({}) },
  ...(opt.floor ? [{ name: 'stack-floor', call: passThroughCall, headers: () => ({}) }] : []),
  {
    name: 'gateway',
    call(kind) {
      if (kind === 'chat' || kind === 'chat-sse') return chatCall('gpt-4o-mini', kind === 'chat-sse');
      if (kind === 'translated-sse') {
        return {
          path: '/v1/responses',
          check: 'responses-sse',
          body: { model: 'responses-on-messages', instructions: SYSTEM, input: PROMPT, max_output_tokens: 32, stream: true },
        };
      }
      return messagesCall('claude-3-5-haiku-latest', kind === 'messages-sse');
    },
    headers: (call) =>
      call.path === '/v1/messages' ? { 'x-api-key': GATEWAY_KEY, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${GATEWAY_KEY}` },
  },
];
function requestFor(target, scenario) {
  const call = target.call(scenario.kind);
  const headers = { 'content-type': 'application/json', ...target.headers(call) };
  if (scenario.stream) headers.accept = 'text/event-stream';
  return { url: target.url + call.path, path: call.path, check: call.check, headers, body: JSON.stringify(call.body) };
}

// ------------------------------------------------------------------ machine
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
const LOADGEN = opt.loadgen === 'auto' ? (has('wrk') ? 'wrk' : 'autocannon') : opt.loadgen;
if (!['wrk', 'autocannon'].includes(LOADGEN)) fail(`--loadgen must be auto, wrk or autocannon, got ${opt.loadgen}`);
if (LOADGEN === 'wrk' && !has('wrk')) fail('--loadgen wrk, but wrk is not installed (Debian: apt-get install wrk)');
const AUTOCANNON = path.join(ROOT, 'node_modules/autocannon/autocannon.js');
if (LOADGEN === 'autocannon' && !fs.existsSync(AUTOCANNON)) fail('no wrk and no autocannon: run npm ci (autocannon is a devDependency) or install wrk');

function allowedCpus() {
  const list = /^Cpus_allowed_list:\s*(.+)$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '';
  return list.split(',').flatMap((part) => {
    const [low, high = low] = part.split('-').map(Number);
    return Array.from({ length: high - low + 1 }, (_, i) => low + i);
  });
}
const CPUS = allowedCpus();
const PIN = opt.pin === 'on' || (opt.pin === 'auto' && has('taskset') && CPUS.length >= 2);
if (PIN && (!has('taskset') || CPUS.length < 2)) fail('--pin on needs taskset and two allowed CPUs');
const HARNESS_CPU = PIN ? String(CPUS[0]) : null; // runner, load generator, simulator
const TARGET_CPU = PIN ? String(CPUS[1]) : null; // the target under load (only one target is loaded at a time)

const round = (x, digits = 1) => (x == null || !Number.isFinite(x) ? null : Math.round(x * 10 ** digits) / 10 ** digits);

// ------------------------------------------------------------------ processes
const OUT = path.resolve(opt.out ?? path.join(BENCH_DIR, 'results', STARTED.toISOString().replace(/[:.]/g, '-')));
const LOGS = path.join(OUT, 'logs');
fs.mkdirSync(LOGS, { recursive: true });
const processes = [];

/** Starts a long-lived process as the leader of its own process group, output to logs/NAME.log. */
function start(name, args, { cpu, env = {} } = {}) {
  const out = fs.openSync(path.join(LOGS, `${name}.log`), 'a');
  const [file, argv] = cpu == null ? [process.execPath, args] : ['taskset', ['-c', cpu, process.execPath, ...args]];
  const child = spawn(file, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', out, out], detached: true });
  fs.closeSync(out);
  const proc = { name, pid: child.pid, exit: null };
  child.on('exit', (code, signal) => {
    proc.exit = { code, signal };
  });
  processes.push(proc);
  return proc;
}
async function stopAll() {
  for (const p of processes)
    if (!p.exit)
      try {
        process.kill(-p.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
  const deadline = Date.now() + 8000; // the gateway writes its queued usage records on SIGTERM
  while (Date.now() < deadline && processes.some((p) => !p.exit)) await sleep(50);
  for (const p of processes)
    try {
      process.kill(-p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  processes.length = 0;
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping what this run started`);
    void stopAll().then(() => process.exit(130));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
async function waitForPort(port, proc, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exit) throw new Error(`${proc.name} exited (${JSON.stringify(proc.exit)}); see ${LOGS}/${proc.name}.log`);
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`${proc.name} did not listen on ${port} within ${timeoutMs / 1000} s; see ${LOGS}/${proc.name}.log`);
}

// ------------------------------------------------------------------ checks
function sseEvents(text) {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim())
    .map((block) => {
      let event = null;
      let data = '';
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      return { event, data };
    });
}
const parsed = (data) => {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
};

/** Returns null when the answer is complete and well-formed, else what is wrong. */
function problemWith(check, status, contentType, text) {
  if (status !== 200) return `HTTP ${status}: ${text.slice(0, 200)}`;
  const isSse = String(contentType).includes('text/event-stream');
  if (check === 'chat' || check === 'messages') {
    const body = parsed(text);
    const ok =
      check === 'chat'
        ? typeof body?.choices?.[0]?.message?.content === 'string' && Number.isFinite(body?.usage?.total_tokens)
        : typeof body?.content?.[0]?.text === 'string' && Number.isFinite(body?.usage?.output_tokens);
    return ok ? null : `unexpected body ${text.slice(0, 200)}`;
  }
  if (!isSse) return `content-type ${contentType}`;
  const events = sseEvents(text);
  if (check === 'chat-sse') {
    const chunks = events.filter((e) => e.data !== '[DONE]').map((e) => parsed(e.data));
    const content = chunks.filter((c) => typeof c?.choices?.[0]?.delta?.content === 'string').length;
    const usage = chunks.some((c) => c?.usage?.total_tokens > 0);
    const done = events.at(-1)?.data === '[DONE]';
    return content === CHUNKS && usage && done ? null : `${content}/${CHUNKS} content chunks, usage chunk ${usage}, [DONE] ${done}`;
  }
  const types = events.map((e) => e.event ?? parsed(e.data)?.type);
  if (check === 'messages-sse') {
    const deltas = types.filter((t) => t === 'content_block_delta').length;
    const usage = events.some((e) => parsed(e.data)?.type === 'message_delta' && parsed(e.data)?.usage?.output_tokens > 0);
    return types[0] === 'message_start' && types.at(-1) === 'message_stop' && deltas === CHUNKS && usage
      ? null
      : `${deltas}/${CHUNKS} deltas, message_delta usage ${usage}, events ${[...new Set(types)].join(',')}`;
  }
  // responses-sse
  const deltas = types.filter((t) => t === 'response.output_text.delta').length;
  const completed = events.map((e) => parsed(e.data)).find((d) => d?.type === 'response.completed');
  const usage = completed?.response?.usage?.total_tokens > 0;
  return types[0] === 'response.created' && completed && usage && deltas === CHUNKS
    ? null
    : `${deltas}/${CHUNKS} output_text deltas, response.completed ${Boolean(completed)}, usage ${usage}, events ${[...new Set(types)].join(',')}`;
}

async function checkOne(target, scenario, mockUrl) {
  const req = requestFor(target, scenario);
  const before = (await getJson(`${mockUrl}/stats`)).requests;
  try {
    const response = await request(req.url, { method: 'POST', headers: req.headers, body: req.body });
    const text = await response.body.text();
    const problem = problemWith(req.check, response.statusCode, response.headers['content-type'], text);
    const reached = (await getJson(`${mockUrl}/stats`)).requests - before;
    if (problem) return problem;
    return reached === 1 ? null : `the simulator received ${reached} requests for one call`;
  } catch (error) {
    return `request failed: ${error.message}`;
  }
}

// ------------------------------------------------------------------ load generation
function luaString(text) {
  let eq = '';
  while (text.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${text}]${eq}]`;
}
let scriptSerial = 0;
/** One closed-loop run. Returns requests, rps, latency p50/p99 (ms), errors. */
async function load({ url, headers, body }, connections, duration) {
  const seconds = Math.max(1, Math.round(duration)); // wrk takes whole seconds
  let file;
  let args;
  if (LOADGEN === 'wrk') {
    const script = path.join(LOGS, `wrk-${++scriptSerial}.lua`);
    fs.writeFileSync(
      script,
      [
        'wrk.method = "POST"',
        `wrk.body = ${luaString(body)}`,
        ...Object.entries(headers).map(([k, v]) => `wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`),
        'done = function(summary, latency, requests)',
        '  local e = summary.errors',
        '  io.write(string.format("RESULT %d %d %d %d %d %d %d %.1f %.1f %.1f\\n", summary.requests, summary.duration,',
        '    e.connect, e.read, e.write, e.status, e.timeout, latency:percentile(50), latency:percentile(99), latency.max))',
        'end',
      ].join('\n') + '\n',
    );
    [file, args] = ['wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url]];
  } else {
    [file, args] = [
      process.execPath,
      [
        AUTOCANNON,
        '-j',
        '-c',
        String(connections),
        '-d',
        String(seconds),
        '-t',
        '10',
        '-m',
        'POST',
        '-b',
        body,
        ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
        url,
      ],
    ];
  }
  if (PIN) [file, args] = ['taskset', ['-c', HARNESS_CPU, file, ...args]];
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (LOADGEN === 'wrk') {
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    if (!line) throw new Error(`wrk failed (exit ${code}): ${stderr.slice(-300)} ${stdout.slice(-300)}`);
    const [requests, durationUs, connect, read, write, status, timeout, p50, p99, max] = line.split(' ').slice(1).map(Number);
    const errors = connect + read + write + status + timeout;
    return {
      requests,
      seconds: durationUs / 1e6,
      rps: requests / (durationUs / 1e6),
      p50_ms: p50 / 1000,
      p99_ms: p99 / 1000,
      max_ms: max / 1000,
      errors,
      error_detail: { connect, read, write, status, timeout },
    };
  }
  const result = parsed(stdout.trim().split('\n').at(-1));
  if (!result) throw new Error(`autocannon failed (exit ${code}): ${stderr.slice(-300)}`);
  const requests = result.requests.total;
  const errors = result.errors + result.non2xx;
  return {
    requests,
    seconds: result.duration,
    rps: requests / result.duration,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    max_ms: result.latency.max,
    errors,
    error_detail: { errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx },
  };
}

/** Sequential streams over one kept-alive connection: time to the first body byte. */
// ------------------------------------------------------------------ the run
async function main() {
  for (const script of ['bench-gateway.js', ...(opt.floor ? ['bench-floor.js'] : [])]) {
    if (!fs.existsSync(path.join(ROOT, 'dist/scripts', script))) fail(`dist/scripts/${script} is missing: run npm run build (npm run bench does)`);
  }
  const notes = [];

  const t0 = cpuTicks();
  await sleep(500);
  const idle = busyPercent(t0, cpuTicks());
  if (Math.max(...Object.values(idle)) >= 15) {
    notes.push(`The machine was busy before the run (${JSON.stringify(idle)} % per CPU): figures may be disturbed.`);
    log(`WARNING: machine busy before start ${JSON.stringify(idle)}`);
  }
  if (PIN) spawnSync('taskset', ['-a', '-p', '-c', HARNESS_CPU, String(process.pid)], { stdio: 'ignore' });

  const mockPort = await freePort();
  const mockUrl = `http://127.0.0.1:${mockPort}`;
  const mock = start('mock-upstream', [path.join(BENCH_DIR, 'mock-upstream.mjs'), '--port', String(mockPort), '--chunks', String(CHUNKS)], {
    cpu: HARNESS_CPU,
  });
  const barePort = await freePort();
  const bare = start('bare-proxy', [path.join(BENCH_DIR, 'bare-proxy.mjs'), '--port', String(barePort)], { cpu: TARGET_CPU, env: { UPSTREAM_URL: mockUrl } });
  const floorPort = opt.floor ? await freePort() : null;
  const floor = opt.floor
    ? start('stack-floor', [path.join(ROOT, 'dist/scripts/bench-floor.js')], { cpu: TARGET_CPU, env: { UPSTREAM_URL: mockUrl, PORT: String(floorPort) } })
    : null;
  const [gatewayPort, controlPort] = [await freePort(), await freePort()];
  // The embedded database as a deployment runs it (on disk), in a folder of this run.
  const gatewayEnv = {
    PORT: String(gatewayPort),
    UPSTREAM_URL: mockUrl,
    BENCH_CONTROL_PORT: String(controlPort),
    ADMIN_TOKEN,
    BENCH_KEY: GATEWAY_KEY,
    DATA_DIR: opt['data-dir'] ?? path.join(OUT, 'data'),
    DATABASE_URL: opt['database-url'] ?? '',
  };
  const gateway = start('gateway', [path.join(ROOT, 'dist/scripts/bench-gateway.js')], { cpu: TARGET_CPU, env: gatewayEnvOf(gatewayEnv) });
  await Promise.all([
    waitForPort(mockPort, mock),
    waitForPort(barePort, bare),
    waitForPort(gatewayPort, gateway),
    waitForPort(controlPort, gateway),
    ...(floor ? [waitForPort(floorPort, floor)] : []),
  ]);
  const listening = { 'bare-proxy': [barePort, bare], 'stack-floor': [floorPort, floor], gateway: [gatewayPort, gateway] };
  const targets = TARGETS.map((t) => ({ ...t, url: `http://127.0.0.1:${listening[t.name][0]}`, proc: listening[t.name][1] }));
  const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const spentBefore = (await getJson(`http://127.0.0.1:${gatewayPort}/admin/owners/bench`, { headers: adminHeaders })).spent;
  log(
    `simulator :${mockPort}, bare proxy :${barePort}, ${floor ? `stack floor :${floorPort}, ` : ''}gateway :${gatewayPort} (${opt['database-url'] ? 'PostgreSQL' : 'embedded database'}); load generator ${LOADGEN}; ${PIN ? `pinned: harness CPU ${HARNESS_CPU}, target CPU ${TARGET_CPU}` : 'not pinned'}`,
  );

  // one call per scenario and target, before any load
  const checks = {};
  for (const scenario of SCENARIOS) {
    for (const target of targets) {
      const problem = await checkOne(target, scenario, mockUrl);
      checks[`${scenario.name}/${target.name}`] = problem ?? 'ok';
      if (problem) log(`check ${scenario.name} on ${target.name} FAILED: ${problem}`);
    }
  }
  const live = (scenario) => targets.filter((t) => checks[`${scenario.name}/${t.name}`] === 'ok');

  const kinds = [...new Map(SCENARIOS.map((s) => [s.kind, s])).values()];
  const perTarget = SCENARIOS.reduce((sum, s) => sum + WARMUP + REPS * (DURATION + 0.4) + (s.stream ? TTFB_SECONDS : 0), kinds.length * FIRST_WARMUP);
  log(`${SCENARIOS.length} scenarios x ${targets.length} targets x ${REPS} x ${DURATION} s: about ${Math.round(targets.length * perTarget)} s of load`);
  const maxConnections = Math.max(...SCENARIOS.map((s) => s.connections));
  for (const scenario of kinds) {
    for (const target of live(scenario)) await load(requestFor(target, scenario), maxConnections, FIRST_WARMUP);
  }

  const runs = [];
  const ttfb = {};
  for (const scenario of SCENARIOS) {
    const cellTargets = live(scenario);
    for (const target of cellTargets) if (WARMUP > 0) await load(requestFor(target, scenario), scenario.connections, WARMUP);
    for (let rep = 1; rep <= REPS; rep++) {
      for (const target of cellTargets) {
        if (target.proc.exit) throw new Error(`${target.name} exited (${JSON.stringify(target.proc.exit)}); see ${LOGS}/${target.proc.name}.log`);
        const others = targets.filter((t) => t !== target);
        const wall0 = Date.now();
        const [cpu0, main0, ticks0, own0, mock0, others0] = [
          groupCpu(target.proc.pid),
          mainThreadCpu(target.proc.pid),
          cpuTicks(),
          ownCpu(),
          groupCpu(mock.pid),
          others.map((t) => groupCpu(t.proc.pid)),
        ];
        const result = await load(requestFor(target, scenario), scenario.connections, DURATION);
        const ticksLoaded = cpuTicks();
        await sleep(300); // in-flight answers and the gateway's next usage batch land in this run
        const [cpu1, main1, ticks1, own1, mock1, others1] = [
          groupCpu(target.proc.pid),
          mainThreadCpu(target.proc.pid),
          cpuTicks(),
          ownCpu(),
          groupCpu(mock.pid),
          others.map((t) => groupCpu(t.proc.pid)),
        ];
        const ours = cpu1 - cpu0 + (own1 - own0) + (mock1 - mock0) + others1.reduce((s, v, i) => s + v - others0[i], 0);
        const run = {
          scenario: scenario.name,
          target: target.name,
          rep,
          ...result,
          rps: round(result.rps),
          p50_ms: round(result.p50_ms, 3),
          p99_ms: round(result.p99_ms, 3),
          max_ms: round(result.max_ms, 3),
          cpu_us_per_req: result.requests ? round(((cpu1 - cpu0) * 1e6) / result.requests) : null,
          main_thread_cpu_us_per_req: result.requests ? round(((main1 - main0) * 1e6) / result.requests) : null,
          cpu_busy_pct: busyPercent(ticks0, ticksLoaded),
          other_load_pct: round((100 * (busySeconds(ticks0, ticks1) - ours)) / ((Date.now() - wall0) / 1000)),
        };
        runs.push(run);
        log(
          `${scenario.name.padEnd(20)} ${target.name.padEnd(10)} rep ${rep}: ${Math.round(run.rps)} req/s, p50 ${round(run.p50_ms, 2)} ms, p99 ${round(run.p99_ms, 2)} ms, ${Math.round(run.cpu_us_per_req)} µs CPU/req, errors ${run.errors}, busy ${JSON.stringify(run.cpu_busy_pct)}, other ${Math.round(run.other_load_pct)}%`,
        );
      }
    }
    if (scenario.stream && TTFB_SECONDS > 0) {
      // Interleaved in short turns (ttfb.mjs): a slow spell of the machine falls on every target alike.
      const probed = await probeFirstBytes(Object.fromEntries(cellTargets.map((target) => [target.name, requestFor(target, scenario)])), TTFB_SECONDS);
      for (const target of cellTargets) ttfb[`${scenario.name}/${target.name}`] = probed[target.name];
    }
  }

  // usage records: every call the simulator received from the gateway must have one
  await sleep(500);
  const usage = await getJson(`http://127.0.0.1:${controlPort}/usage`);
  const vendor = await getJson(`${mockUrl}/stats`);
  const spentAfter = (await getJson(`http://127.0.0.1:${gatewayPort}/admin/owners/bench`, { headers: adminHeaders })).spent;
  const calls = vendor.by_key[VENDOR_KEY] ?? 0;
  const usageReport = {
    records: usage.records,
    calls,
    queued: usage.queued,
    groups: usage.groups,
    records_cost: Number(usage.cost_nano) / 1e9,
    owner_spent_delta: round(spentAfter - spentBefore, 9),
    audit: usage.audit,
  };

  const summary = summarize(runs, ttfb, targets);
  const meta = {
    started_at: STARTED.toISOString(),
    wall_s: Math.round((Date.now() - STARTED) / 1000),
    node: process.version,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model,
    kernel: os.release(),
    loadgen: LOADGEN,
    pinning: PIN ? { harness_cpu: HARNESS_CPU, target_cpu: TARGET_CPU } : null,
    database: opt['database-url'] ? 'postgresql' : 'embedded',
    duration_s: DURATION,
    reps: REPS,
    warmup_s: WARMUP,
    chunks: CHUNKS,
    scenarios: SCENARIOS.map((s) => s.name),
    busy_before_start_pct: idle,
  };
  const verdicts = judge(summary, usageReport, meta.database, { oneCore: PIN });
  const result = { meta, checks, summary, verdicts, ttfb, usage: usageReport, notes, runs };
  const markdown = report(result);
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(result, null, 2) + '\n');
  fs.writeFileSync(path.join(OUT, 'results.md'), markdown);
  process.stdout.write(markdown);
  log(`wrote ${path.relative(process.cwd(), OUT) || OUT}/results.{json,md} in ${meta.wall_s} s`);
  const failedChecks = Object.values(checks).some((c) => c !== 'ok');
  return failedChecks || usage.records !== calls || usage.audit.differences > 0 ? 1 : 0;
}

function summarize(runs, ttfb, targets) {
  const rows = [];
  for (const scenario of SCENARIOS) {
    const cell = (target) => {
      const rs = runs.filter((r) => r.scenario === scenario.name && r.target === target.name);
      if (!rs.length) return null;
      const mean = (f) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
      const requests = rs.reduce((s, r) => s + r.requests, 0);
      const rps = rs.map((r) => r.rps);
      const probe = ttfb[`${scenario.name}/${target.name}`];
      const harnessBusy = PIN ? Math.round(mean((r) => r.cpu_busy_pct[`cpu${HARNESS_CPU}`] ?? 0)) : null;
      const targetBusy = PIN ? Math.round(mean((r) => r.cpu_busy_pct[`cpu${TARGET_CPU}`] ?? 0)) : null;
      const flags = [];
      const errors = rs.reduce((s, r) => s + r.errors, 0);
      if (errors) flags.push(`${errors} errors`);
      if (PIN && harnessBusy >= 95) {
        flags.push(
          targetBusy < 90
            ? `harness CPU ${harnessBusy}% busy, target ${targetBusy}%: capacity ≥ shown`
            : `harness CPU ${harnessBusy}% busy too: at the harness ceiling`,
        );
      }
      const other = Math.max(...rs.map((r) => r.other_load_pct));
      if (other >= 15) flags.push(`other load ${Math.round(other)}% of a CPU: disturbed`);
      if (rs.length > 1 && (Math.max(...rps) - Math.min(...rps)) / mean((r) => r.rps) >= 0.15)
        flags.push(`rep spread ${Math.round((100 * (Math.max(...rps) - Math.min(...rps))) / mean((r) => r.rps))}%`);
      return {
        scenario: scenario.name,
        label: scenario.label,
        target: target.name,
        requests,
        errors,
        rps: round(mean((r) => r.rps)),
        rps_reps: rps.map((x) => Math.round(x)),
        p50_ms: round(
          mean((r) => r.p50_ms),
          3,
        ),
        p99_ms: round(
          mean((r) => r.p99_ms),
          3,
        ),
        cpu_us_per_req: round(rs.reduce((s, r) => s + r.cpu_us_per_req * r.requests, 0) / Math.max(1, requests)),
        main_thread_cpu_us_per_req: round(rs.reduce((s, r) => s + r.main_thread_cpu_us_per_req * r.requests, 0) / Math.max(1, requests)),
        ttfb_p50_ms: round(probe?.ttfb_p50_ms, 3),
        ttfb_p99_ms: round(probe?.ttfb_p99_ms, 3),
        harness_cpu_busy_pct: harnessBusy,
        target_cpu_busy_pct: targetBusy,
        other_load_pct_max: Math.round(other),
        flags,
      };
    };
    const cells = targets.map(cell);
    const bare = cells[targets.findIndex((t) => t.name === 'bare-proxy')];
    const floor = cells[targets.findIndex((t) => t.name === 'stack-floor')];
    for (const c of cells) {
      if (!c) continue;
      if (bare) {
        c.vs_bare = {
          cpu_ratio: round(c.cpu_us_per_req / bare.cpu_us_per_req, 3),
          throughput_ratio: round(c.rps / bare.rps, 3),
          added_p50_ms: round(c.p50_ms - bare.p50_ms, 3),
          added_p99_ms: round(c.p99_ms - bare.p99_ms, 3),
          added_ttfb_ms: c.ttfb_p50_ms != null && bare.ttfb_p50_ms != null ? round(c.ttfb_p50_ms - bare.ttfb_p50_ms, 3) : null,
        };
      }
      if (floor) c.vs_floor = { cpu_ratio: round(c.cpu_us_per_req / floor.cpu_us_per_req, 3), throughput_ratio: round(c.rps / floor.rps, 3) };
      rows.push(c);
    }
  }
  return rows;
}

function report({ meta, checks, summary, verdicts, usage, notes }) {
  const f = (x, digits = 2) =>
    x == null || !Number.isFinite(x) ? '–' : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(digits);
  const signed = (x) => (x == null || !Number.isFinite(x) ? '–' : `${x >= 0 ? '+' : ''}${f(x)}`);
  const ratio = (x) => (x == null || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);
  const L = [];
  L.push(`# Gateway vs bare proxy, ${meta.started_at}`, '');
  L.push(
    `${meta.cpus} CPUs (${meta.cpu_model}), Node ${meta.node}, load generator ${meta.loadgen} (closed loop), ` +
      `${meta.pinning ? `harness on CPU ${meta.pinning.harness_cpu}, target on CPU ${meta.pinning.target_cpu}` : 'no pinning'}, ` +
      `gateway on the ${meta.database} database. ${meta.reps} × ${meta.duration_s} s per cell after ${meta.warmup_s} s warm-up; ` +
      `streams carry ${meta.chunks} content chunks. Wall time ${meta.wall_s} s.`,
    '',
  );
  if (meta.loadgen === 'autocannon') L.push('autocannon records whole milliseconds: sub-millisecond p50/p99 read as 0 or 1. Install wrk for latency.', '');
  L.push(
    '| scenario | target | req/s | p50 ms | p99 ms | CPU µs/req | of it main thread | TTFB c=1 ms | CPU ÷ bare | req/s ÷ bare | CPU ÷ floor | +p50 ms | +p99 ms | +TTFB ms | notes |',
  );
  L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of summary) {
    const v = r.vs_bare ?? {};
    L.push(
      `| ${r.label} | ${r.target} | ${Math.round(r.rps).toLocaleString('en-US')} | ${f(r.p50_ms)} | ${f(r.p99_ms)} | ${f(r.cpu_us_per_req, 0)} | ${f(r.main_thread_cpu_us_per_req, 0)} | ${f(r.ttfb_p50_ms)} | ` +
        `${ratio(v.cpu_ratio)} | ${ratio(v.throughput_ratio)} | ${ratio(r.vs_floor?.cpu_ratio)} | ${signed(v.added_p50_ms)} | ${signed(v.added_p99_ms)} | ${signed(v.added_ttfb_ms)} | ${r.flags.join('; ')} |`,
    );
  }
  for (const [cell, outcome] of Object.entries(checks))
    if (outcome !== 'ok') L.push(`| ${cell.replace('/', ' | ')} | skipped: ${outcome.replace(/\|/g, '/').slice(0, 160)} |||||||||||||`);
  L.push('');
  if (summary.some((r) => r.scenario.startsWith('translated')))
    L.push(
      `The bare proxy cannot translate: its row${summary.some((r) => r.target === 'stack-floor') ? " (and the stack floor's)" : ''} in the translated scenario passes the same messages SSE exchange through.`,
      '',
    );
  if (summary.some((r) => r.target === 'stack-floor')) {
    L.push(
      "stack-floor: the bare proxy's work on the gateway's stack (NestJS on Fastify, one controller, two guards, raw body, hijacked reply), " +
        "none of the gateway's own. Per scenario, what the frameworks cost over the bare proxy and what the gateway's own work costs over them (CPU per call):",
      '',
    );
    for (const scenario of new Set(summary.map((r) => r.scenario))) {
      const cell = (target) => summary.find((r) => r.scenario === scenario && r.target === target);
      const [bare, floor, gateway] = [cell('bare-proxy'), cell('stack-floor'), cell('gateway')];
      if (!bare || !floor || !gateway) continue;
      L.push(
        `- ${floor.label}: frameworks ${signed(floor.cpu_us_per_req - bare.cpu_us_per_req)} µs (${ratio(floor.vs_bare.cpu_ratio)} the bare proxy), ` +
          `the gateway's own work ${signed(gateway.cpu_us_per_req - floor.cpu_us_per_req)} µs (main thread ${signed(gateway.main_thread_cpu_us_per_req - floor.main_thread_cpu_us_per_req)} µs)`,
      );
    }
    L.push('');
  }
  const match = usage.records === usage.calls ? '' : ' MISMATCH';
  L.push(
    `usage records: ${usage.records} of ${usage.calls} calls${match} (calls = requests the simulator received from the gateway; ` +
      `${usage.queued} still queued; records cost ${usage.records_cost.toFixed(6)}, owner spent +${Number(usage.owner_spent_delta).toFixed(6)})`,
    '',
    `spend audit (GET /admin/usage/verify?owner=bench): ${usage.audit.records_checked} records checked, ` +
      `${usage.audit.records_without_prices} without prices, ${usage.audit.differences} differences${usage.audit.differences > 0 ? ' MISMATCH' : ''}`,
    '',
  );
  if (match)
    L.push(
      'Records by model / interface / status:',
      '',
      ...usage.groups.map(
        (g) => `- ${g.model} ${g.interface}${g.translated_to ? `→${g.translated_to}` : ''} stream=${g.stream} status ${g.status}: ${g.records}`,
      ),
      '',
    );
  L.push(targetsTable(verdicts, meta.database), '');
  for (const note of notes) L.push(`- ${note}`);
  return L.join('\n') + '\n';
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`FAILED: ${error.stack ?? error.message}`);
} finally {
  await stopAll();
  if (!opt['data-dir']) fs.rmSync(path.join(OUT, 'data'), { recursive: true, force: true });
}
// The long streams run on a quiet machine: after this run's processes have stopped, with the
// CPUs this run started with (it pinned itself to the harness CPU; they pin their own).
const longArgs = longStreamsArgs(opt, OUT);
if (longArgs) {
  if (PIN) spawnSync('taskset', ['-a', '-p', '-c', CPUS.join(','), String(process.pid)], { stdio: 'ignore' });
  log(`long streams: node bench/long-streams.mjs ${longArgs.join(' ')}`);
  const long = spawnSync(process.execPath, [path.join(BENCH_DIR, 'long-streams.mjs'), ...longArgs], { stdio: 'inherit' });
  code = Math.max(code, long.status ?? 1);
}
process.exit(code);
