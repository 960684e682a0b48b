#!/usr/bin/env node
// `node bench/profile.mjs [--scenario chat-c64] [--seconds 10] [--top 40] [--allocations [--survivors]]
// [--database-url URL | --data-dir DIR]`: where the
// gateway's CPU goes under one benchmark scenario (or, with --allocations, what it allocates: every
// allocation sampled, garbage included, by V8's sampling heap profiler; garbage collection's cost
// follows the bytes allocated; with --survivors only what outlived a young-generation collection,
// the bytes the old generation gets and its collector's work). Starts the simulator and the gateway (pinned like
// `npm run bench`), warms it up, profiles only the measured load (V8's sampling profiler, started
// and stopped by SIGUSR2), and prints the
// profile's self time (bytes) grouped by package and by function. The raw `.cpuprofile` or
// `.heapprofile` (open it in Chrome DevTools or speedscope) stays under bench/results/profile-*/.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, onEarlyExit, waitForPort } from './ports.mjs';
import { gatewayEnv } from './gateway-env.mjs';
import { summarizeProfile, topShares } from './profile-summary.mjs';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { values: opt } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'chat-c64' },
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '40' },
    allocations: { type: 'boolean', default: false },
    survivors: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    'data-dir': { type: 'string' },
  },
});
const OUT = path.join(ROOT, 'bench/results', `profile-${new Date().toISOString().replace(/[:.]/g, '-')}`);
fs.mkdirSync(OUT, { recursive: true });

const KEY = 'gk-bench-key';
const bodies = {
  chat: { path: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Reply with ok.' }], max_tokens: 32 } },
  'chat-sse': {
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Reply with ok.' }],
      max_tokens: 32,
      stream: true,
      stream_options: { include_usage: true },
    },
  },
  'messages-sse': {
    path: '/v1/messages',
    body: { model: 'claude-3-5-haiku-latest', messages: [{ role: 'user', content: 'Reply with ok.' }], max_tokens: 32, stream: true },
  },
  'translated-sse': { path: '/v1/responses', body: { model: 'responses-on-messages', input: 'Reply with ok.', max_output_tokens: 32, stream: true } },
};
const match = /^(chat|chat-sse|messages-sse|translated-sse)-c(\d+)$/.exec(opt.scenario);
if (!match) throw new Error(`unknown scenario ${opt.scenario}`);
const call = bodies[match[1]];

function start(cpu, args, env) {
  const log = fs.openSync(path.join(OUT, `${path.basename(args.at(-1))}.log`), 'a');
  return spawn('taskset', ['-c', cpu, process.execPath, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
}

const mockPort = await freePort();
const gatewayPort = await freePort();
const mock = start('0', ['bench/mock-upstream.mjs', '--port', String(mockPort)], {});
await waitForPort(mockPort);
const allocations = opt.allocations;
const profileFile = path.join(OUT, allocations ? 'gateway.heapprofile' : 'gateway.cpuprofile');
const gateway = start(
  '1',
  ['dist/scripts/bench-gateway.js'],
  gatewayEnv({
    [allocations ? 'BENCH_HEAP_PROFILE' : 'BENCH_CPU_PROFILE']: profileFile,
    ...(opt.survivors ? { BENCH_HEAP_SURVIVORS: '1' } : {}),
    PORT: String(gatewayPort),
    UPSTREAM_URL: `http://127.0.0.1:${mockPort}`,
    DATABASE_URL: opt['database-url'] ?? '',
    // On disk, as `npm run bench` and a deployment keep it: in memory the engine's file system grows
    // files by copying them, and its worker thread collects garbage far more often.
    DATA_DIR: opt['data-dir'] ?? path.join(OUT, 'data'),
  }),
);
// A gateway that stops before the profile is written (it could not start, or it crashed) ends the run at once.
const stoppingGateway = onEarlyExit(gateway, (why) => {
  process.stderr.write(`the gateway exited (${why}) before the profile was written; its log: ${path.join(OUT, 'bench-gateway.js.log')}\n`);
  mock.kill('SIGTERM');
  if (!opt['data-dir']) fs.rmSync(path.join(OUT, 'data'), { recursive: true, force: true });
  process.exit(1);
});
await waitForPort(gatewayPort);

const headers = call.path === '/v1/messages' ? { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${KEY}` };
const script = path.join(OUT, 'wrk.lua');
fs.writeFileSync(
  script,
  [
    'wrk.method = "POST"',
    `wrk.body = [==[${JSON.stringify(call.body)}]==]`,
    'wrk.headers["content-type"] = "application/json"',
    ...Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = "${v}"`),
  ].join('\n'),
);
const wrk = (seconds) => {
  const run = spawnSync('taskset', ['-c', '0', 'wrk', '-t1', `-c${match[2]}`, `-d${seconds}s`, '-s', script, `http://127.0.0.1:${gatewayPort}${call.path}`], {
    encoding: 'utf8',
  });
  if (run.status !== 0 || !/\d+ requests in/.test(run.stdout)) {
    // Without a load there is nothing to profile: stop instead of printing an idle profile.
    stoppingGateway();
    gateway.kill('SIGTERM');
    mock.kill('SIGTERM');
    throw new Error(`wrk failed (exit ${run.status}; needs wrk installed, Debian: apt-get install wrk): ${run.stderr.slice(-300)}${run.stdout.slice(-300)}`);
  }
  return run;
};
wrk(3); // JIT warm-up
gateway.kill('SIGUSR2'); // the profiler starts
const run = wrk(Number(opt.seconds));
gateway.kill('SIGUSR2'); // ... and writes the profile
process.stderr.write(run.stdout);
while (!fs.existsSync(profileFile)) await sleep(100);
await sleep(500);
stoppingGateway();
gateway.kill('SIGTERM');
await new Promise((resolve) => gateway.on('exit', resolve));
mock.kill('SIGTERM');
if (!opt['data-dir']) fs.rmSync(path.join(OUT, 'data'), { recursive: true, force: true });

const file = path.basename(profileFile);
const profile = JSON.parse(fs.readFileSync(profileFile, 'utf8'));
const { total, packages, functions } = summarizeProfile(profile, { allocations });
const print = (title, map, limit) => {
  console.log(`\n${title}`);
  for (const [name, share] of topShares(map, total, limit)) console.log(`${share.toFixed(1).padStart(5)} %  ${name}`);
};
const calls = Number(/(\d+) requests in/.exec(run.stdout)?.[1] ?? NaN);
if (allocations) {
  const kept = opt.survivors ? ' that outlived a young-generation collection' : '';
  console.log(`profile ${path.join(OUT, file)}: ${(total / 2 ** 20).toFixed(0)} MiB allocated${kept}, ${(total / calls / 1024).toFixed(1)} KiB per call`);
} else {
  console.log(`profile ${path.join(OUT, file)}: ${(total / 1e6).toFixed(1)} s sampled`);
}
const what = allocations ? 'bytes allocated' : 'self time';
print(`${what} by package`, packages, 30);
print(`${what} by function`, functions, Number(opt.top));
