#!/usr/bin/env node
// `npm run bench:streams`: thousands of long, slow streams through one gateway replica and
// through the bare proxy, in one run on this machine. See bench/README.md "Long streams".
// `node bench/long-streams.mjs --help`.
//
// Starts the simulated vendor pacing its streams (mock-upstream.mjs --chunks 120 --chunk-ms 250:
// about 30 s a stream), the bare proxy and the seeded bench gateway, both with as many upstream
// sockets as the run has streams, and per scenario loads the bare proxy, then the gateway, from a
// client process of its own (stream-client.mjs): the streams opened evenly over --ramp-seconds,
// every content chunk's arrival noted. Per target: errors, usage records against calls, peak and
// settled RSS, CPU per chunk, the gaps between chunks the client sees, the gateway's event-loop
// delay; then the targets with met / NOT MET, the RSS slope from --small to --streams streams,
// and the same chat scenario on a gateway with the default LINE_CONNECTIONS (no cap).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { gatewayEnv } from './gateway-env.mjs';
import { summarizeProfile, topShares } from './profile-summary.mjs';
import { freePort, getJson, waitForPort } from './ports.mjs';
import { busyPercent, busySeconds, cpuTicks, groupCpu, mainThreadCpu, rssOf } from './proc-stats.mjs';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH_DIR);
const STARTED = new Date();

const HELP = `Usage: npm run bench:streams [-- options]   (or: node bench/long-streams.mjs [options] after npm run build)

  --streams N            native streams per chat and messages scenario (5000)
  --translated N         streams of the translated scenario (2000)
  --small N              the smaller chat run the RSS slope starts from (500)
  --chunks N             content chunks per stream (120)
  --chunk-ms MS          the simulator's time between two chunks of a stream (250)
  --ramp-seconds S       the streams of a scenario are opened evenly over this long (5)
  --settle-seconds S     settled RSS: this long after the last stream ended (10)
  --scenarios LIST       comma-separated, in this order by default:
                           chat-small         chat completions, --small streams (the slope's start)
                           chat               chat completions, --streams streams
                           messages           messages, --streams streams
                           translated         responses on a messages-only model, --translated streams
                                              (the bare proxy passes the same messages streams through)
                           chat-default-pool  chat, --streams streams, on a second gateway with the
                                              default LINE_CONNECTIONS (no cap on upstream sockets): gateway only
                         and, not in the default list:
                           chat-hold          chat, --streams streams held open for --hold-minutes (each
                                              stream that ends is followed by a new one): RSS every 10 s,
                                              and after a full collection at the first minute and at the end
  --hold-minutes M       how long chat-hold keeps its streams open (10; at least 2)
  --line-connections N   LINE_CONNECTIONS of the gateway and upstream sockets of the bare proxy
                         (default: the most streams of a scenario of the run)
  --database-url URL     run the gateway on this PostgreSQL database instead of the embedded one
  --data-dir DIR         the embedded database's folder (default: data/ in the results folder)
  --profile              V8 CPU profiles of each gateway run, one per phase (ramp, steady, ending),
                         self time by package and function in the results, the .cpuprofiles beside
                         (the profiler's own cost is then in the run's figures)
  --pin auto|on|off      taskset: client, simulator and runner on one CPU, the targets on another
                         (auto: when taskset exists and 2+ CPUs are allowed)
  --out DIR              results folder (default bench/results/streams-<timestamp>)
  -h, --help
`;

const { values: opt } = parseArgs({
  options: {
    help: { type: 'boolean', short: 'h' },
    streams: { type: 'string', default: '5000' },
    translated: { type: 'string', default: '2000' },
    small: { type: 'string', default: '500' },
    chunks: { type: 'string', default: '120' },
    'chunk-ms': { type: 'string', default: '250' },
    'ramp-seconds': { type: 'string', default: '5' },
    'settle-seconds': { type: 'string', default: '10' },
    scenarios: { type: 'string', default: 'chat-small,chat,messages,translated,chat-default-pool' },
    'hold-minutes': { type: 'string', default: '10' },
    'line-connections': { type: 'string' },
    'database-url': { type: 'string' },
    'data-dir': { type: 'string' },
    pin: { type: 'string', default: 'auto' },
    profile: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
if (opt.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
function fail(message) {
  process.stderr.write(`bench:streams: ${message}\n`);
  process.exit(2);
}
function wholeOption(name, min = 1) {
  const value = Number(opt[name]);
  if (!Number.isInteger(value) || value < min) fail(`--${name} must be a whole number of at least ${min}, got ${opt[name]}`);
  return value;
}
const STREAMS = wholeOption('streams');
const TRANSLATED = wholeOption('translated');
const SMALL = wholeOption('small');
const CHUNKS = wholeOption('chunks');
const CHUNK_MS = wholeOption('chunk-ms');
const RAMP_S = wholeOption('ramp-seconds', 0);
const SETTLE_S = wholeOption('settle-seconds', 0);
const HOLD_S = wholeOption('hold-minutes', 2) * 60;
const HOLD_FIRST_S = 60; // chat-hold's first full collection: the streams of the ramp have begun to end and be followed
const STREAM_S = ((CHUNKS - 1) * CHUNK_MS) / 1000; // the first chunk comes with the headers
const PHASES = ['ramp', 'steady', 'ending']; // of a run, as the client splits its gaps (stream-client.mjs)
const DEFAULT_LINE_CONNECTIONS = 0; // the gateway's LINE_CONNECTIONS default, no cap (src/config/gateway-options.ts)
const log = (line) => process.stderr.write(`[streams] ${line}\n`);

// ------------------------------------------------------------------ the targets and their limits
/** The issue's targets: limits of the gateway's figures, per scenario. */
const LIMITS = {
  errors: 0,
  peak_rss_mib: 1024,
  added_gap_p99_ms: 5,
  cpu_ratio: { chat: 2, messages: 2, translated: 4 },
  hold_growth_pct: 10, // RSS after a full collection, at the hold's end against its first minute (as bench/memory.mjs judges)
};

const SCENARIOS = {
  'chat-small': { kind: 'chat', streams: SMALL, targets: ['bare-proxy', 'gateway'] },
  chat: { kind: 'chat', streams: STREAMS, targets: ['bare-proxy', 'gateway'] },
  messages: { kind: 'messages', streams: STREAMS, targets: ['bare-proxy', 'gateway'] },
  translated: { kind: 'translated', streams: TRANSLATED, targets: ['bare-proxy', 'gateway'] },
  'chat-default-pool': { kind: 'chat', streams: STREAMS, targets: ['gateway-default-pool'] },
  'chat-hold': { kind: 'chat', streams: STREAMS, targets: ['gateway'], holdSeconds: HOLD_S },
};
const RUN = opt.scenarios
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)
  .map((name) => {
    if (!SCENARIOS[name]) fail(`unknown scenario ${name} (see --help)`);
    return { name, ...SCENARIOS[name] };
  });
const MOST_STREAMS = Math.max(...RUN.map((s) => s.streams));
const LINE_CONNECTIONS = opt['line-connections'] ? wholeOption('line-connections') : MOST_STREAMS;

// ------------------------------------------------------------------ requests
const SYSTEM = 'You are a terse assistant.';
const PROMPT = 'Reply with ok.';
const GATEWAY_KEY = 'gk-bench-key';
const VENDOR_KEY = 'bench-vendor-key'; // what the gateway sends upstream (scripts/bench-gateway.ts)
const ADMIN_TOKEN = 'bench-admin-token';

const chatCall = () => ({
  path: '/v1/chat/completions',
  protocol: 'chat',
  body: {
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: PROMPT },
    ],
    max_tokens: 32,
    stream: true,
    stream_options: { include_usage: true },
  },
});
const messagesCall = () => ({
  path: '/v1/messages',
  protocol: 'messages',
  body: { model: 'claude-3-5-haiku-latest', system: SYSTEM, messages: [{ role: 'user', content: PROMPT }], max_tokens: 32, stream: true },
});
const translatedCall = () => ({
  path: '/v1/responses',
  protocol: 'responses',
  body: { model: 'responses-on-messages', instructions: SYSTEM, input: PROMPT, max_output_tokens: 32, stream: true },
});

/** What a target is sent for a scenario kind: the bare proxy cannot translate, it passes the same messages streams through. */
function callFor(target, kind) {
  if (kind === 'chat') return chatCall();
  if (kind === 'translated' && target !== 'bare-proxy') return translatedCall();
  return messagesCall();
}
function headersFor(target, call) {
  const headers = { 'content-type': 'application/json', accept: 'text/event-stream' };
  if (target === 'bare-proxy') return headers;
  if (call.path === '/v1/messages') return { ...headers, 'x-api-key': GATEWAY_KEY, 'anthropic-version': '2023-06-01' };
  return { ...headers, authorization: `Bearer ${GATEWAY_KEY}` };
}

// ------------------------------------------------------------------ machine
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
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
const HARNESS_CPU = PIN ? String(CPUS[0]) : null; // runner, client, simulator
const TARGET_CPU = PIN ? String(CPUS[1]) : null; // the bare proxy and the gateway (one loaded at a time)

/**
 * The machine's TCP counters of full accept queues (/proc/net/netstat): ListenOverflows (a
 * handshake completed while the listener's queue was full: the client's ACK is dropped, or with
 * SYN cookies its request meets a reset) and SyncookiesSent (the SYN queue overflowed).
 */
function tcpCounters() {
  const [names, values] = fs
    .readFileSync('/proc/net/netstat', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('TcpExt:'))
    .map((line) => line.split(/\s+/).slice(1));
  const pick = (name) => Number(values[names.indexOf(name)] ?? 0);
  return { listen_overflows: pick('ListenOverflows'), syncookies_sent: pick('SyncookiesSent'), syncookies_failed: pick('SyncookiesFailed') };
}
const mib = (bytes) => Math.round((bytes / 1048576) * 10) / 10;
const round = (x, digits = 1) => (x == null || !Number.isFinite(x) ? null : Math.round(x * 10 ** digits) / 10 ** digits);

// The limit is per process: a stream holds a socket in the client and two in a target (client
// side, upstream side), and the simulator one per stream of the target loaded plus the idle
// target's kept-alive pool; the busiest process needs two per stream.
const FILES_NEEDED = 2 * MOST_STREAMS + 1024;
function openFilesLimit() {
  const line = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  const value = (text) => (text === 'unlimited' ? Infinity : Number(text));
  return { soft: value(line[1]), hard: value(line[2]) };
}
const FILES = openFilesLimit();
// A soft limit below what the run needs is raised in each child (`ulimit -n` in bash before exec), up to
// the hard limit (raising that needs CAP_SYS_RESOURCE, which a container's root may lack).
const RAISE_FILES = FILES.soft >= FILES_NEEDED ? null : FILES.hard > FILES.soft ? Math.min(FILES.hard, FILES_NEEDED) : null;

// ------------------------------------------------------------------ processes
const OUT = path.resolve(opt.out ?? path.join(BENCH_DIR, 'results', `streams-${STARTED.toISOString().replace(/[:.]/g, '-')}`));
const LOGS = path.join(OUT, 'logs');
fs.mkdirSync(LOGS, { recursive: true });
const DATA_DIR = opt['data-dir'] ?? path.join(OUT, 'data');
const processes = [];

/** The command line of a child: pinned to `cpu` with taskset, its open-files limit raised with bash's ulimit. */
function commandFor(args, cpu) {
  let argv = [process.execPath, ...args];
  if (cpu != null) argv = ['taskset', '-c', cpu, ...argv];
  if (RAISE_FILES) argv = ['bash', '-c', `ulimit -n ${RAISE_FILES} && exec "$0" "$@"`, ...argv];
  return argv;
}

/** Starts a process as the leader of its own process group; its output to logs/NAME.log unless `stdout: 'pipe'`. */
function start(name, args, { cpu, env = {}, stdout } = {}) {
  const out = fs.openSync(path.join(LOGS, `${name}.log`), 'a');
  const [file, ...argv] = commandFor(args, cpu);
  const child = spawn(file, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', stdout ?? out, out], detached: true });
  fs.closeSync(out);
  const proc = { name, pid: child.pid, child, exit: null };
  proc.exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      proc.exit = { code, signal };
      resolve();
    }),
  );
  processes.push(proc);
  return proc;
}
async function stop(proc) {
  if (!proc.exit)
    try {
      process.kill(-proc.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  // the gateway writes its queued usage records on SIGTERM
  await Promise.race([proc.exited, sleep(10_000)]);
  try {
    process.kill(-proc.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  processes.splice(processes.indexOf(proc), 1);
}
const stopAll = () => Promise.all([...processes].map(stop));
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping what this run started`);
    void stopAll().then(() => process.exit(130));
  });
}

async function listening(proc, ...ports) {
  await Promise.race([
    Promise.all(ports.map((port) => waitForPort(port))),
    proc.exited.then(() => {
      throw new Error(`${proc.name} exited (${JSON.stringify(proc.exit)}); see ${LOGS}/${proc.name}.log`);
    }),
  ]);
}

/** A gateway with LINE_CONNECTIONS = `lineConnections` (undefined: the gateway's default). */
async function startGateway(name, mockUrl, lineConnections) {
  const [port, controlPort] = [await freePort(), await freePort()];
  const env = {
    PORT: String(port),
    UPSTREAM_URL: mockUrl,
    BENCH_CONTROL_PORT: String(controlPort),
    ADMIN_TOKEN,
    BENCH_KEY: GATEWAY_KEY,
    DATA_DIR,
    DATABASE_URL: opt['database-url'] ?? '',
    ...(lineConnections ? { LINE_CONNECTIONS: String(lineConnections) } : {}),
    // SIGUSR2 starts the profiler, the next writes the profile here (scripts/bench-gateway.ts).
    ...(opt.profile ? { BENCH_CPU_PROFILE: path.join(OUT, `${name}.cpuprofile`) } : {}),
  };
  const proc = start(name, [path.join(ROOT, 'dist/scripts/bench-gateway.js')], {
    cpu: TARGET_CPU,
    env: gatewayEnv(env),
  });
  await listening(proc, port, controlPort);
  return {
    name,
    proc,
    url: `http://127.0.0.1:${port}`,
    control: `http://127.0.0.1:${controlPort}`,
    lineConnections: lineConnections ?? DEFAULT_LINE_CONNECTIONS,
  };
}

// ------------------------------------------------------------------ one scenario on one target
let clientSerial = 0;
/** Runs the client; `onStarted` / `onEnded` are awaited when it says STARTED / ENDED. Resolves to its figures. */
async function runClient(spec, { onStarted, onEnded }) {
  const proc = start(`client-${++clientSerial}`, [path.join(BENCH_DIR, 'stream-client.mjs'), '--spec', JSON.stringify(spec)], {
    cpu: HARNESS_CPU,
    stdout: 'pipe',
  });
  let result = null;
  const pending = [];
  for await (const line of readline.createInterface({ input: proc.child.stdout })) {
    if (line === 'STARTED') pending.push(onStarted());
    else if (line === 'ENDED') pending.push(onEnded());
    else if (line.startsWith('{')) result = JSON.parse(line);
  }
  await Promise.all(pending);
  await stop(proc);
  if (!result) throw new Error(`the client gave no result (exit ${JSON.stringify(proc.exit)}); see ${LOGS}/${proc.name}.log`);
  return result;
}

async function measure(scenario, target, mock) {
  const gateway = target.control !== undefined;
  const call = callFor(target.name === 'bare-proxy' ? 'bare-proxy' : 'gateway', scenario.kind);
  const upstreamKey = gateway ? VENDOR_KEY : 'none';
  const usageBefore = gateway ? await getJson(`${target.control}/usage`) : null; // writes what is queued
  const upstreamBefore = (await getJson(`${mock.url}/stats`)).by_key[upstreamKey] ?? 0;
  if (gateway) await getJson(`${target.control}/loop`); // a new measure of the loop's delay from here
  await getJson(`${mock.url}/pacing`); // and of the simulator's lateness

  const pid = target.proc.pid;
  let peak = rssOf(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 100);
  const at = {};
  // The idle target (and the first gateway's group until it is gone): ours too, for the machine's other load.
  const others = processes.filter((p) => p !== target.proc && p !== mock.proc && !p.name.startsWith('client'));
  const read = () => ({
    cpu: groupCpu(pid),
    main: mainThreadCpu(pid),
    mock: groupCpu(mock.proc.pid),
    others: others.reduce((sum, p) => sum + groupCpu(p.pid), 0),
    runner: process.cpuUsage(),
    ticks: cpuTicks(),
    wall: Date.now(),
  });
  const cap = target.lineConnections ?? LINE_CONNECTIONS;
  const waves = cap > 0 ? Math.ceil(scenario.streams / cap) : 1;
  const spec = {
    url: target.url + call.path,
    headers: headersFor(target.name, call),
    body: JSON.stringify(call.body),
    kind: call.protocol,
    streams: scenario.streams,
    chunks: CHUNKS,
    rampSeconds: RAMP_S,
    streamSeconds: STREAM_S,
    holdSeconds: scenario.holdSeconds,
    timeoutSeconds: Math.ceil(RAMP_S + (scenario.holdSeconds ?? 0) + waves * STREAM_S * 4 + 120), // a saturated machine stretches the streams
  };
  const steadyEnd = Math.max(STREAM_S, scenario.holdSeconds ?? 0);
  const hold = gateway && scenario.holdSeconds ? holdWatch(target, scenario.holdSeconds) : null;
  // By phase, as the client splits the gaps (while the streams are being opened, while all are
  // open, while they end): how busy each CPU was and the gateway's loop delay.
  const phases = {};
  const phaseEnds = async (name) => {
    phases[name] = { ticks: cpuTicks(), loop: gateway ? await getJson(`${target.control}/loop`) : null };
  };
  const phaseTimers = [];
  const profiler = gateway && opt.profile ? phaseProfiler(target, scenario) : null;
  const result = await runClient(spec, {
    onStarted: async () => {
      at.start = { ...read(), tcp: tcpCounters() };
      profiler?.begin(steadyEnd > RAMP_S ? 'ramp' : 'whole');
      if (steadyEnd > RAMP_S)
        phaseTimers.push(
          setTimeout(() => {
            profiler?.next('steady');
            return phaseEnds('ramp');
          }, RAMP_S * 1000),
          setTimeout(() => {
            profiler?.next('ending');
            return phaseEnds('steady');
          }, steadyEnd * 1000),
        );
      hold?.begin();
    },
    onEnded: async () => {
      at.streamsEnded = { ticks: cpuTicks() };
      await sleep(300); // the gateway's next usage batch, written after the last stream closed
      at.end = { ...read(), tcp: tcpCounters() };
      phaseTimers.forEach(clearTimeout);
      hold?.stop();
      profiler?.next(null);
      await phaseEnds(phases.steady ? 'ending' : 'whole');
    },
  });
  const profile = profiler ? await profiler.summaries() : null;
  await sleep(SETTLE_S * 1000);
  const settled = rssOf(pid);
  clearInterval(sampler);
  peak = Math.max(peak, settled);
  const pacing = await getJson(`${mock.url}/pacing`);
  const heap = gateway ? await getJson(`${target.control}/memory`) : null;
  const usage = gateway ? await getJson(`${target.control}/usage`) : null;
  const upstream = ((await getJson(`${mock.url}/stats`)).by_key[upstreamKey] ?? 0) - upstreamBefore;

  const chunks = result.content_chunks;
  const perChunk = (seconds) => (chunks ? round((seconds * 1e6) / chunks, 2) : null);
  const busy = busyPercent(at.start.ticks, at.streamsEnded.ticks);
  const phaseNames = Object.keys(phases);
  const busyByPhase = Object.fromEntries(
    phaseNames.map((name, i) => [name, busyPercent(i === 0 ? at.start.ticks : phases[phaseNames[i - 1]].ticks, phases[name].ticks)]),
  );
  const tcp = Object.fromEntries(Object.keys(at.end.tcp).map((k) => [k, at.end.tcp[k] - at.start.tcp[k]]));
  // The machine's busy time that none of this run's processes account for: a build, a test run beside it.
  const runner = process.cpuUsage(at.start.runner);
  const ours =
    at.end.cpu - at.start.cpu + (at.end.mock - at.start.mock) + (at.end.others - at.start.others) + result.client_cpu_s + (runner.user + runner.system) / 1e6;
  const otherLoad = (100 * (busySeconds(at.start.ticks, at.end.ticks) - ours)) / ((at.end.wall - at.start.wall) / 1000);
  const run = {
    scenario: scenario.name,
    kind: scenario.kind,
    target: target.name,
    line_connections: target.lineConnections ?? LINE_CONNECTIONS,
    streams: scenario.streams,
    errors: result.errors,
    error_kinds: result.error_kinds,
    error_examples: result.error_examples,
    completed: result.completed,
    calls_upstream: upstream,
    records: usage ? usage.records - usageBefore.records : null,
    audit: usage?.audit ?? null,
    peak_rss_mib: mib(peak),
    settled_rss_mib: mib(settled),
    heap_used_settled_mib: heap ? mib(heap.heapUsed) : null,
    chunks,
    window_s: result.window_s,
    cpu_us_per_chunk: perChunk(at.end.cpu - at.start.cpu),
    main_thread_cpu_us_per_chunk: perChunk(at.end.main - at.start.main),
    target_cpu_s: round(at.end.cpu - at.start.cpu, 2),
    mock_cpu_us_per_chunk: perChunk(at.end.mock - at.start.mock),
    mock_lateness_ms: pacing, // how late the simulator sent the chunks after their time
    client_cpu_us_per_chunk: perChunk(result.client_cpu_s),
    gaps_ms: result.gaps_ms,
    headers_ms: result.headers_ms,
    first_chunk_ms: result.first_chunk_ms,
    // by phase: ramp, steady, ending (or whole when the ramp is as long as a stream)
    loop_delay_ms: gateway ? Object.fromEntries(phaseNames.map((name) => [name, phases[name].loop])) : null,
    gaps_by_phase_ms: result.gaps_by_phase_ms,
    client_loop_delay_ms: result.client_loop_delay_ms,
    cpu_busy_pct: busy,
    harness_cpu_busy_pct: PIN ? busy[`cpu${HARNESS_CPU}`] : null,
    target_cpu_busy_pct: PIN ? busy[`cpu${TARGET_CPU}`] : null,
    cpu_busy_by_phase_pct: busyByPhase,
    other_load_pct: Math.round(otherLoad), // of one CPU
    tcp, // the whole machine's: connections refused or reset for a full accept queue (the target's, or the simulator's)
    profile, // --profile: per phase, the main thread's self time by package and function
    hold: hold ? await hold.figures() : null, // chat-hold: RSS over the hold
  };
  log(
    `${scenario.name} ${target.name}: ${run.completed}/${run.streams} complete, ${run.errors} errors${run.errors ? ` ${JSON.stringify(run.error_kinds)}` : ''}, ` +
      `${run.cpu_us_per_chunk} µs CPU/chunk, gaps p50/p99/max ${run.gaps_ms.p50}/${run.gaps_ms.p99}/${run.gaps_ms.max} ms, RSS peak ${run.peak_rss_mib} settled ${run.settled_rss_mib} MiB, ` +
      `${run.records === null ? '' : `records ${run.records} of ${run.streams} calls (${upstream} upstream), `}busy ${JSON.stringify(busy)}, window ${run.window_s} s`,
  );
  return run;
}

/**
 * chat-hold: the gateway's RSS every 10 s while the streams are held open, and RSS and the main
 * thread's heap after a full collection of every heap (`POST /memory/collect`, then 1 s for the
 * sweeper to give pages back, as bench/memory.mjs reads them) at HOLD_FIRST_S and at the hold's
 * end. The collections pause the gateway's loop: the gaps of this scenario are not its figure.
 */
function holdWatch(target, holdSeconds) {
  const series = [];
  const collected = {};
  const timers = [];
  let startedAt = 0;
  const collect = async (name) => {
    const t = (Date.now() - startedAt) / 1000;
    const heap = await getJson(`${target.control}/memory/collect`, { method: 'POST' });
    await sleep(1000);
    collected[name] = { at_s: round(t, 0), rss_mib: mib(rssOf(target.proc.pid)), heap_used_mib: mib(heap.heapUsed) };
  };
  let pending = [];
  return {
    begin() {
      startedAt = Date.now();
      timers.push(
        setInterval(() => series.push([10 * (series.length + 1), mib(rssOf(target.proc.pid))]), 10_000),
        setTimeout(() => pending.push(collect('first')), HOLD_FIRST_S * 1000),
        setTimeout(() => pending.push(collect('end')), holdSeconds * 1000),
      );
    },
    stop() {
      timers.forEach((t) => (clearInterval(t), clearTimeout(t)));
    },
    async figures() {
      await Promise.all(pending);
      pending = [];
      const { first, end } = collected;
      // Least squares over the samples between the two collections: MiB per minute.
      const inside = series.filter(([t]) => first && end && t >= first.at_s && t <= end.at_s);
      const mean = (pick) => inside.reduce((sum, x) => sum + pick(x), 0) / inside.length;
      const [mt, mr] = [mean(([t]) => t), mean(([, r]) => r)];
      const slope = inside.reduce((sum, [t, r]) => sum + (t - mt) * (r - mr), 0) / inside.reduce((sum, [t]) => sum + (t - mt) ** 2, 0);
      return {
        seconds: holdSeconds,
        rss_series: series,
        collected,
        growth_pct: first && end ? round((100 * (end.rss_mib - first.rss_mib)) / first.rss_mib, 1) : null,
        slope_mib_per_min: inside.length >= 3 ? round(slope * 60, 2) : null,
      };
    },
  };
}

/**
 * `--profile`: the gateway's V8 CPU profiler over each phase of one scenario (SIGUSR2 starts it
 * and the next writes the profile, scripts/bench-gateway.ts), kept as
 * `<target>-<scenario>-<phase>.cpuprofile`. Phases follow one another in a chain, so a profile is
 * written and put aside before the next one starts.
 */
function phaseProfiler(target, scenario) {
  const written = path.join(OUT, `${target.name}.cpuprofile`);
  const kept = {};
  let chain = Promise.resolve();
  let current = null;
  const signal = () => process.kill(target.proc.pid, 'SIGUSR2');
  const start = (phase) => {
    fs.rmSync(written, { force: true });
    signal();
    current = { phase, startedAt: Date.now() };
  };
  const stop = async () => {
    const { phase, startedAt } = current;
    current = null;
    signal();
    const seconds = (Date.now() - startedAt) / 1000;
    for (let waited = 0; !fs.existsSync(written) && waited < 30_000; waited += 50) await sleep(50);
    await sleep(200); // written in one call, but perhaps not yet closed
    const file = path.join(OUT, `${target.name}-${scenario.name}-${phase}.cpuprofile`);
    fs.renameSync(written, file);
    kept[phase] = { file, seconds };
  };
  return {
    begin(phase) {
      chain = chain.then(() => start(phase));
    },
    /** Ends the phase being profiled and begins `phase` (none: null). */
    next(phase) {
      chain = chain.then(async () => {
        if (current) await stop();
        if (phase) start(phase);
      });
    },
    async summaries() {
      await chain;
      return Object.fromEntries(Object.entries(kept).map(([phase, { file, seconds }]) => [phase, summaryOf(file, seconds)]));
    },
  };
}

/** A profile's self time by package and function, in shares of the main thread's busy time (the idle loop left out). */
function summaryOf(file, seconds) {
  const { total, packages, functions } = summarizeProfile(JSON.parse(fs.readFileSync(file, 'utf8')));
  const idle = packages.get('((idle))') ?? 0;
  packages.delete('((idle))');
  functions.delete('(idle) ');
  const share = (map, limit) => topShares(map, total - idle, limit).map(([name, percent]) => ({ name, percent: round(percent, 1) }));
  return {
    file: path.relative(ROOT, file),
    window_s: round(seconds, 1),
    busy_s: round((total - idle) / 1e6, 1),
    packages: share(packages, 12),
    functions: share(functions, 25),
  };
}

// ------------------------------------------------------------------ the run
async function main() {
  if (!fs.existsSync(path.join(ROOT, 'dist/scripts/bench-gateway.js')))
    fail('dist/scripts/bench-gateway.js is missing: run npm run build (npm run bench:streams does)');
  const notes = [];
  if (FILES.soft < FILES_NEEDED && !RAISE_FILES) notes.push(`open files limited to ${FILES.soft} (the run needs about ${FILES_NEEDED}): expect EMFILE errors`);
  else if (RAISE_FILES && RAISE_FILES < FILES_NEEDED)
    notes.push(`open files raised to the hard limit ${RAISE_FILES} only (the run needs about ${FILES_NEEDED})`);

  const t0 = cpuTicks();
  await sleep(500);
  const idle = busyPercent(t0, cpuTicks());
  if (Math.max(...Object.values(idle)) >= 15) {
    notes.push(`The machine was busy before the run (${JSON.stringify(idle)} % per CPU): figures may be disturbed.`);
    log(`WARNING: machine busy before start ${JSON.stringify(idle)}`);
  }
  if (PIN) spawnSync('taskset', ['-a', '-p', '-c', HARNESS_CPU, String(process.pid)], { stdio: 'ignore' });

  const mockPort = await freePort();
  const mock = {
    url: `http://127.0.0.1:${mockPort}`,
    proc: start(
      'mock-upstream',
      [path.join(BENCH_DIR, 'mock-upstream.mjs'), '--port', String(mockPort), '--chunks', String(CHUNKS), '--chunk-ms', String(CHUNK_MS)],
      { cpu: HARNESS_CPU },
    ),
  };
  const barePort = await freePort();
  const bare = {
    name: 'bare-proxy',
    url: `http://127.0.0.1:${barePort}`,
    lineConnections: LINE_CONNECTIONS,
    proc: start('bare-proxy', [path.join(BENCH_DIR, 'bare-proxy.mjs'), '--port', String(barePort), '--connections', String(LINE_CONNECTIONS)], {
      cpu: TARGET_CPU,
      env: { UPSTREAM_URL: mock.url },
    }),
  };
  await Promise.all([listening(mock.proc, mockPort), listening(bare.proc, barePort)]);
  let gateway = RUN.some((s) => s.targets.includes('gateway')) ? await startGateway('gateway', mock.url, LINE_CONNECTIONS) : null;
  log(
    `simulator ${mock.url} (${CHUNKS} chunks, one every ${CHUNK_MS} ms: ${STREAM_S} s a stream), bare proxy ${bare.url}` +
      `${gateway ? `, gateway ${gateway.url} (${opt['database-url'] ? 'PostgreSQL' : 'embedded database'})` : ''}, ` +
      `LINE_CONNECTIONS ${LINE_CONNECTIONS}; ${PIN ? `pinned: harness CPU ${HARNESS_CPU}, targets CPU ${TARGET_CPU}` : 'not pinned'}; ` +
      `open files ${RAISE_FILES ? `raised to ${RAISE_FILES}` : FILES.soft}`,
  );

  const runs = [];
  let lastUsage = null;
  for (const scenario of RUN) {
    for (const name of scenario.targets) {
      let target;
      if (name === 'bare-proxy') target = bare;
      else if (name === 'gateway') target = gateway;
      else {
        // The default pool: the first gateway goes (its records are counted), a second one starts on the same data.
        if (gateway) {
          lastUsage = await getJson(`${gateway.control}/usage`);
          await stop(gateway.proc);
        }
        gateway = await startGateway('gateway-default-pool', mock.url);
        target = gateway;
      }
      for (const proc of [mock.proc, target.proc])
        if (proc.exit) throw new Error(`${proc.name} exited (${JSON.stringify(proc.exit)}); see ${LOGS}/${proc.name}.log`);
      runs.push(await measure(scenario, target, mock));
    }
  }
  if (gateway) lastUsage = await getJson(`${gateway.control}/usage`);

  const summary = summarize(runs);
  const verdicts = judge(runs);
  const meta = {
    started_at: STARTED.toISOString(),
    wall_s: Math.round((Date.now() - STARTED) / 1000),
    node: process.version,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model,
    memory_gib: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    pinning: PIN ? { harness_cpu: HARNESS_CPU, target_cpu: TARGET_CPU } : null,
    database: opt['database-url'] ? 'postgresql' : 'embedded',
    chunks: CHUNKS,
    chunk_ms: CHUNK_MS,
    stream_s: STREAM_S,
    ramp_s: RAMP_S,
    settle_s: SETTLE_S,
    line_connections: LINE_CONNECTIONS,
    open_files: RAISE_FILES ?? FILES.soft,
    scenarios: RUN.map((s) => s.name),
    busy_before_start_pct: idle,
  };
  const audit = lastUsage?.audit ?? null;
  const result = { meta, summary, verdicts, audit, notes, runs };
  const markdown = report(result);
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(result, null, 2) + '\n');
  fs.writeFileSync(path.join(OUT, 'results.md'), markdown);
  process.stdout.write(markdown);
  log(`wrote ${path.relative(process.cwd(), OUT) || OUT}/results.{json,md} in ${meta.wall_s} s`);
  const unrecorded = runs.some((r) => r.records !== null && r.records !== r.calls_upstream);
  const notMet = verdicts.some((v) => v.met !== true);
  return notMet || unrecorded || (audit?.differences ?? 0) > 0 ? 1 : 0;
}

// ------------------------------------------------------------------ figures
/** The gateway's figures beside the bare proxy's of the same scenario; the slope; the pools compared. */
function summarize(runs) {
  const find = (scenario, target) => runs.find((r) => r.scenario === scenario && r.target === target);
  for (const run of runs) {
    const bare = run.target === 'bare-proxy' ? null : find(run.scenario === 'chat-default-pool' ? 'chat' : run.scenario, 'bare-proxy');
    if (!bare) continue;
    run.vs_bare = {
      cpu_ratio: bare.cpu_us_per_chunk ? round(run.cpu_us_per_chunk / bare.cpu_us_per_chunk, 3) : null,
      added_gap_ms: Object.fromEntries(['p50', 'p99', 'max'].map((p) => [p, round(run.gaps_ms[p] - bare.gaps_ms[p], 3)])),
      added_gap_p99_by_phase_ms: Object.fromEntries(
        PHASES.map((phase) => [phase, round(run.gaps_by_phase_ms[phase].p99 - bare.gaps_by_phase_ms[phase].p99, 3)]),
      ),
      bare_errors: bare.errors,
    };
  }
  const slope = {};
  for (const target of ['bare-proxy', 'gateway']) {
    const [small, large] = [find('chat-small', target), find('chat', target)];
    if (!small || !large || large.streams === small.streams) continue;
    slope[target] = {
      streams: [small.streams, large.streams],
      peak_rss_mib: [small.peak_rss_mib, large.peak_rss_mib],
      kib_per_stream: round(((large.peak_rss_mib - small.peak_rss_mib) * 1024) / (large.streams - small.streams), 1),
      cpu_us_per_chunk: [small.cpu_us_per_chunk, large.cpu_us_per_chunk],
    };
  }
  const pools =
    find('chat', 'gateway') && find('chat-default-pool', 'gateway-default-pool')
      ? [find('chat', 'gateway'), find('chat-default-pool', 'gateway-default-pool')]
      : null;
  return { slope, pools };
}

/** The targets, on the gateway's runs of chat and messages at --streams and of the translated scenario. */
function judge(runs) {
  const verdicts = [];
  for (const scenario of ['chat', 'messages', 'translated']) {
    const run = runs.find((r) => r.scenario === scenario && r.target === 'gateway');
    if (!run) continue;
    const label = `${scenario === 'translated' ? 'translated (responses on messages)' : `native ${scenario}`}, ${run.streams.toLocaleString('en-US')} streams`;
    const verdict = (target, value, limit, met) => verdicts.push({ scenario, label, target, value, limit, met: met ?? null });
    const ratio = run.vs_bare?.cpu_ratio ?? null;
    const added = run.vs_bare?.added_gap_ms.p99 ?? null;
    verdict('errors', run.errors, '0', run.errors === LIMITS.errors);
    verdict('every call recorded', `${run.records} of ${run.calls_upstream}`, 'all', run.records === run.calls_upstream);
    verdict('peak RSS', `${run.peak_rss_mib} MiB`, `≤ ${LIMITS.peak_rss_mib} MiB`, run.peak_rss_mib <= LIMITS.peak_rss_mib);
    verdict(
      'CPU per chunk ÷ bare proxy',
      ratio === null ? null : `${ratio.toFixed(2)}×`,
      `≤ ${LIMITS.cpu_ratio[scenario]}×`,
      ratio === null ? null : ratio <= LIMITS.cpu_ratio[scenario],
    );
    verdict(
      'added inter-chunk delay, p99',
      added === null ? null : `${signed(added)} ms`,
      `≤ ${LIMITS.added_gap_p99_ms} ms`,
      added === null ? null : added <= LIMITS.added_gap_p99_ms,
    );
  }
  const held = runs.find((r) => r.scenario === 'chat-hold');
  if (held) {
    const label = `chat, ${held.streams.toLocaleString('en-US')} streams held ${held.hold.seconds / 60} min`;
    const verdict = (target, value, limit, met) => verdicts.push({ scenario: 'chat-hold', label, target, value, limit, met: met ?? null });
    const { first, end } = held.hold.collected;
    verdict('errors', held.errors, '0', held.errors === LIMITS.errors);
    verdict('every call recorded', `${held.records} of ${held.calls_upstream}`, 'all', held.records === held.calls_upstream);
    verdict(
      'RSS after a full collection, end against first minute',
      held.hold.growth_pct === null ? null : `${f(first.rss_mib, 0)} → ${f(end.rss_mib, 0)} MiB (${signed(held.hold.growth_pct)} %)`,
      `≤ +${LIMITS.hold_growth_pct} %`,
      held.hold.growth_pct === null ? null : held.hold.growth_pct <= LIMITS.hold_growth_pct,
    );
  }
  return verdicts;
}

// ------------------------------------------------------------------ the report
const f = (x, digits = 1) =>
  x == null || !Number.isFinite(x) ? '–' : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const signed = (x, digits = 1) => (x == null || !Number.isFinite(x) ? '–' : `${x >= 0 ? '+' : ''}${f(x, digits)}`);
const triple = (o, pick = (x) => x, digits = 1) => (o ? ['p50', 'p99', 'max'].map((p) => f(pick(o[p]), digits)).join(' / ') : '–');
const signedTriple = (o) => (o ? ['p50', 'p99', 'max'].map((p) => signed(o[p])).join(' / ') : '–');
/** What kept a run from measuring the target alone: a saturated CPU, streams that took longer than the simulator sends them. */
function saturation(r, meta) {
  const flags = [];
  if (r.other_load_pct >= 15)
    flags.push(
      `other load ${r.other_load_pct} % of a CPU${meta.database === 'postgresql' ? " (PostgreSQL's work is part of it)" : ''}: ${meta.database === 'postgresql' ? 'check for other work' : 'disturbed, rerun'}`,
    );
  if (r.harness_cpu_busy_pct >= 90) flags.push(`harness CPU ${r.harness_cpu_busy_pct} % busy: the gaps are partly the harness's`);
  if (r.mock_lateness_ms.p99_ms > 10) flags.push(`the simulator sent 1 % of the chunks more than ${f(r.mock_lateness_ms.p99_ms)} ms late`);
  if (r.target_cpu_busy_pct >= 90) flags.push(`target CPU ${r.target_cpu_busy_pct} % busy: saturated`);
  const steadyBusy = PIN ? r.cpu_busy_by_phase_pct.steady?.[`cpu${TARGET_CPU}`] : undefined;
  if (steadyBusy >= 90 && r.target_cpu_busy_pct < 90) flags.push(`target CPU ${steadyBusy} % busy while every stream was open: saturated`);
  const expected = meta.ramp_s + meta.stream_s + (r.hold?.seconds ?? 0);
  if (r.scenario !== 'chat-default-pool' && r.window_s > expected * 1.1) flags.push(`streams took ${f(r.window_s)} s against ${f(expected)} s: behind`);
  return flags;
}

/** How late the loop's timer fired (a reading of `GET /loop`, less its resolution). */
const late = (reading, key) => (reading?.samples ? reading[key] - reading.resolution_ms : null);
/** The highest of a run's phases. */
const loopLate = (r, key) => {
  const values = Object.values(r.loop_delay_ms ?? {})
    .map((reading) => late(reading, key))
    .filter((x) => x !== null);
  return values.length ? Math.max(...values) : null;
};
const scenarioLabel = (r) =>
  ({
    'chat-small': 'chat',
    chat: 'chat',
    messages: 'messages',
    translated: r.target === 'bare-proxy' ? 'translated (bare: messages)' : 'translated (responses→messages)',
    'chat-default-pool': 'chat, default pool',
    'chat-hold': `chat, held ${r.hold?.seconds / 60} min`,
  })[r.scenario];

function report({ meta, summary, verdicts, audit, notes, runs }) {
  const L = [];
  L.push(`# Long streams: gateway vs bare proxy, ${meta.started_at}`, '');
  L.push(
    `${meta.cpus} CPUs (${meta.cpu_model}), ${meta.memory_gib} GiB, Node ${meta.node}, ` +
      `${meta.pinning ? `client, simulator and runner on CPU ${meta.pinning.harness_cpu}, targets on CPU ${meta.pinning.target_cpu}` : 'no pinning'}, ` +
      `gateway on the ${meta.database} database. Streams of ${meta.chunks} content chunks, one every ${meta.chunk_ms} ms (${meta.stream_s} s), ` +
      `opened evenly over ${meta.ramp_s} s; LINE_CONNECTIONS ${meta.line_connections.toLocaleString('en-US')} (the bare proxy: as many upstream sockets). ` +
      `Settled RSS ${meta.settle_s} s after the last stream ended. Wall time ${meta.wall_s} s.`,
    '',
  );
  L.push(
    '| scenario | target | streams | errors | records / calls | peak RSS MiB | settled RSS MiB | CPU µs/chunk | of it main thread | CPU ÷ bare | gap p50 / p99 / max ms | added p50 / p99 / max ms | first chunk p50 / p99 / max ms | loop delay p99 / max ms |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of runs) {
    const loopDelay = r.loop_delay_ms ? `${f(loopLate(r, 'p99_ms'))} / ${f(loopLate(r, 'max_ms'))}` : '–';
    L.push(
      `| ${scenarioLabel(r)} | ${r.target} | ${r.streams.toLocaleString('en-US')} | ${r.errors} | ${r.records === null ? '–' : `${r.records.toLocaleString('en-US')} / ${r.calls_upstream.toLocaleString('en-US')}`} | ` +
        `${f(r.peak_rss_mib, 0)} | ${f(r.settled_rss_mib, 0)} | ${f(r.cpu_us_per_chunk)} | ${f(r.main_thread_cpu_us_per_chunk)} | ${r.vs_bare?.cpu_ratio == null ? '–' : `${r.vs_bare.cpu_ratio.toFixed(2)}×`} | ` +
        `${triple(r.gaps_ms)} | ${signedTriple(r.vs_bare?.added_gap_ms)} | ${triple(r.first_chunk_ms, (x) => x, 0)} | ${loopDelay} |`,
    );
  }
  L.push('');
  L.push(
    'records / calls: usage records the gateway wrote against the calls the simulator received from it (a call refused before the gateway read it is an error, not a call). ' +
      "CPU µs/chunk: CPU time (user + system) of the target's process group from the first call to 0.3 s after the last stream ended, per content chunk delivered. " +
      "Gaps: between two pieces of one stream's body holding content, as the client reads them; added: the gateway's gap minus the bare proxy's at the same percentile " +
      "(in the default-pool row, against the bare proxy's chat run). Loop delay: how late the gateway's 10 ms event-loop timer fired (`GET /loop` on the control port, less its 10 ms), " +
      'the highest of the three phases below. ' +
      "The translated scenario's bare proxy passes the same messages streams through (it cannot translate).",
    '',
  );
  const phased = runs.filter((r) => r.gaps_by_phase_ms.steady.count > 0);
  if (phased.length) {
    L.push(
      `By phase: ramp (the first ${meta.ramp_s} s, streams being opened), steady (every stream open, up to ${meta.stream_s} s; a held scenario: to the hold's end), ending (streams ending, usage records written):`,
      '',
      '| scenario | target | streams | gap p99 ms: ramp / steady / ending | added p99 ms: ramp / steady / ending | loop delay p99 ms: ramp / steady / ending | loop delay max ms: ramp / steady / ending | target CPU busy %: ramp / steady / ending |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of phased) {
      const byPhase = (pick) => PHASES.map((phase) => f(pick(phase))).join(' / ');
      const loop = r.loop_delay_ms?.steady ? r.loop_delay_ms : null;
      L.push(
        `| ${scenarioLabel(r)} | ${r.target} | ${r.streams.toLocaleString('en-US')} | ${byPhase((p) => r.gaps_by_phase_ms[p].p99)} | ` +
          `${r.vs_bare ? PHASES.map((p) => signed(r.vs_bare.added_gap_p99_by_phase_ms[p])).join(' / ') : '–'} | ` +
          `${loop ? byPhase((p) => late(loop[p], 'p99_ms')) : '–'} | ${loop ? byPhase((p) => late(loop[p], 'max_ms')) : '–'} | ` +
          `${PIN && r.cpu_busy_by_phase_pct.steady ? PHASES.map((p) => r.cpu_busy_by_phase_pct[p][`cpu${TARGET_CPU}`]).join(' / ') : '–'} |`,
      );
    }
    L.push('');
  }
  for (const r of runs.filter((x) => x.errors > 0))
    L.push(`- ${r.scenario} / ${r.target} errors: ${JSON.stringify(r.error_kinds)}; e.g. ${r.error_examples.join(' | ').slice(0, 300)}`);
  if (runs.some((x) => x.errors > 0)) L.push('');

  L.push('The harness, per run (the simulator and the client share one CPU when pinned; when it is saturated the gaps measure the harness):', '');
  L.push(
    '| scenario | target | streaming window s | chunks | simulator µs/chunk | simulator late p99 / max ms | client µs/chunk | client loop delay p99 ms | harness CPU busy | target CPU busy | accept queue overflows | notes |',
  );
  L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of runs) {
    L.push(
      `| ${scenarioLabel(r)} | ${r.target} | ${f(r.window_s)} | ${r.chunks.toLocaleString('en-US')} | ${f(r.mock_cpu_us_per_chunk)} | ${f(r.mock_lateness_ms.p99_ms)} / ${f(r.mock_lateness_ms.max_ms)} | ${f(r.client_cpu_us_per_chunk)} | ` +
        `${f(r.client_loop_delay_ms.p99 - 10)} | ${r.harness_cpu_busy_pct ?? '–'} % | ${r.target_cpu_busy_pct ?? '–'} % | ${r.tcp.listen_overflows.toLocaleString('en-US')} | ${saturation(r, meta).join('; ')} |`,
    );
  }
  L.push('');

  L.push('## Targets', '', '| scenario | target | gateway | limit | verdict |', '|---|---|---:|---:|---|');
  for (const v of verdicts)
    L.push(
      `| ${v.label} | ${v.target} | ${v.value ?? '–'} | ${v.limit} | ${v.met === true ? 'met' : v.met === false ? '**NOT MET**' : 'no figure: NOT MET'} |`,
    );
  if (audit)
    L.push(
      `| all runs | spend audit of owner bench | ${audit.differences} differences in ${audit.records_checked.toLocaleString('en-US')} records | 0 | ${audit.differences === 0 ? 'met' : '**NOT MET**'} |`,
    );
  L.push('');

  const slopes = Object.entries(summary.slope);
  if (slopes.length) {
    L.push(
      '## From fewer to more streams (chat)',
      '',
      '| target | streams | peak RSS MiB | RSS slope KiB per stream | CPU µs/chunk |',
      '|---|---:|---:|---:|---:|',
    );
    for (const [target, s] of slopes)
      L.push(
        `| ${target} | ${s.streams.map((x) => x.toLocaleString('en-US')).join(' → ')} | ${s.peak_rss_mib.map((x) => f(x, 0)).join(' → ')} | ${f(s.kib_per_stream)} | ${s.cpu_us_per_chunk.map((x) => f(x)).join(' → ')} |`,
      );
    L.push('', 'Slope = (peak RSS at the larger run − peak RSS at the smaller) / (difference in streams).', '');
  }

  for (const r of runs.filter((x) => x.hold)) {
    const { collected, rss_series: series, slope_mib_per_min: slope } = r.hold;
    const minutes = series.filter(([t], i) => t % 60 === 0 || i === series.length - 1);
    L.push(
      `## ${r.streams.toLocaleString('en-US')} chat streams held open for ${r.hold.seconds / 60} minutes`,
      '',
      `${r.completed.toLocaleString('en-US')} streams in all, each followed by a new one as it ended. RSS after a full collection of every heap: ` +
        `${f(collected.first?.rss_mib, 0)} MiB at ${collected.first?.at_s} s (heap ${f(collected.first?.heap_used_mib, 0)} MiB), ` +
        `${f(collected.end?.rss_mib, 0)} MiB at ${collected.end?.at_s} s (heap ${f(collected.end?.heap_used_mib, 0)} MiB); ` +
        `RSS between them ${signed(slope, 2)} MiB a minute (least squares over the 10 s samples). RSS by minute:`,
      '',
      `| s | ${minutes.map(([t]) => t).join(' | ')} |`,
      `|---|${minutes.map(() => '---:').join('|')}|`,
      `| RSS MiB | ${minutes.map(([, rss]) => f(rss, 0)).join(' | ')} |`,
      '',
    );
  }

  if (summary.pools) {
    const [wide, narrow] = summary.pools;
    const sockets = (n) => (n > 0 ? n.toLocaleString('en-US') : '0 (no cap)');
    L.push(
      `## LINE_CONNECTIONS ${sockets(wide.line_connections)} against the default ${sockets(narrow.line_connections)} (chat, ${narrow.streams.toLocaleString('en-US')} streams)`,
      '',
      '| LINE_CONNECTIONS | errors | records / calls | streaming window s | headers p50 / p99 / max s | first chunk p50 / p99 / max s | peak RSS MiB | CPU µs/chunk | added gap p50 / p99 / max ms | loop delay p99 ms |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const r of [wide, narrow])
      L.push(
        `| ${sockets(r.line_connections)} | ${r.errors} | ${r.records} / ${r.calls_upstream} | ${f(r.window_s)} | ${triple(r.headers_ms, (x) => x / 1000)} | ${triple(r.first_chunk_ms, (x) => x / 1000)} | ` +
          `${f(r.peak_rss_mib, 0)} | ${f(r.cpu_us_per_chunk)} | ${signedTriple(r.vs_bare?.added_gap_ms)} | ${f(loopLate(r, 'p99_ms'))} |`,
      );
    if (narrow.line_connections > 0)
      L.push(
        '',
        `With ${sockets(narrow.line_connections)} sockets a line carries ${sockets(narrow.line_connections)} streams at a time: the others wait in the pool's queue, without an answer, until a stream ends.`,
        '',
      );
    else L.push('');
  }
  for (const r of runs.filter((x) => x.profile))
    for (const [phase, profile] of Object.entries(r.profile)) {
      L.push(
        `## Where the gateway's CPU went: ${scenarioLabel(r)}, ${phase}`,
        '',
        `The main thread was busy ${profile.busy_s} s of ${profile.window_s} s (\`${profile.file}\`: Chrome DevTools or speedscope). Self time, in % of that:`,
        '',
        '| package | % | function | % |',
        '|---|---:|---|---:|',
      );
      for (let i = 0; i < Math.max(profile.packages.length, profile.functions.length); i++) {
        const p = profile.packages[i];
        const fn = profile.functions[i];
        L.push(`| ${p ? `${p.name} | ${p.percent}` : ' | '} | ${fn ? `${fn.name.replace(/\|/g, '\\|')} | ${fn.percent}` : ' | '} |`);
      }
      L.push('');
    }
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
process.exit(code);
