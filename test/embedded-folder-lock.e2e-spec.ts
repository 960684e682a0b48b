import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_FILE_NAME } from '../src/database/data-dir-lock';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { COMPILE_CACHE_ENV, EXIT_PATIENCE_MS, GatewayProcess, launchGateway, START_PATIENCE_MS } from './support/gateway-process';
import { migratedFolder } from './support/test-database';
import { VENDOR_KEY } from './support/test-config';

/**
 * One process per embedded folder: the built gateway and the built admin command
 * (`node dist/scripts/admin.js`, what `npm run admin` runs) on one DATA_DIR.
 */
const ROOT = join(__dirname, '..');
const ADMIN_SCRIPT = join(ROOT, 'dist', 'scripts', 'admin.js');
const ADMIN_TOKEN = 'folder-lock-admin-token';
const GATEWAY_KEY = 'gk-folder-lock-test-0001';
/** Far above what a refusal needs (it comes before the engine starts), far below an engine's first start. */
const REFUSAL_PATIENCE_MS = 20_000;

function configYaml(simulatorUrl: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulatorUrl}
    api_key: \${STARTUP_LINE_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2.5, output_tokens: 10 }
owners:
  - id: team-a
    kind: project
keys:
  - key: ${GATEWAY_KEY}
    owner: team-a
    models: ["*"]
`;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function admin(dataDir: string, args: string[]): Promise<Run> {
  const env = { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, ...COMPILE_CACHE_ENV };
  return new Promise((resolve) => {
    execFile(process.execPath, [ADMIN_SCRIPT, ...args], { cwd: ROOT, env, timeout: REFUSAL_PATIENCE_MS * 2 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

async function chatStatus(gateway: GatewayProcess): Promise<number> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'Still there?' }] }),
  });
  await response.text();
  return response.status;
}

async function ownerStatus(gateway: GatewayProcess, id: string): Promise<number> {
  const response = await fetch(`${gateway.url}/admin/owners/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  await response.text();
  return response.status;
}

function lockHolder(dataDir: string): { pid: number; token: string } | undefined {
  const path = join(dataDir, LOCK_FILE_NAME);
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

/** The refusal, as one paragraph naming the folder, the holder and the admin API, without a stack trace. */
function expectRefusal(output: string, dataDir: string, holderPid: number): void {
  expect(output).toContain(`The embedded database folder ${dataDir} is in use by process ${holderPid} (gateway) on host ${hostname()}`);
  expect(output).toContain('admin API (set ADMIN_TOKEN and use the /admin/... routes');
  expect(output).not.toMatch(/^\s+at /m);
}

describe('one process per embedded folder', () => {
  const processes: GatewayProcess[] = [];
  const folders: string[] = [];
  let simulator: UpstreamSimulator;
  let configPath: string;

  async function newFolder(prefix: string): Promise<string> {
    const folder = await mkdtemp(join(tmpdir(), prefix));
    folders.push(folder);
    return folder;
  }

  async function launch(dataDir: string): Promise<GatewayProcess> {
    const gateway = await launchGateway({ GATEWAY_CONFIG: configPath, DATA_DIR: dataDir, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY });
    processes.push(gateway);
    return gateway;
  }

  /** A folder with a migrated database: these tests are about starts that come after the first. */
  async function migratedDataDir(): Promise<string> {
    return migratedFolder(await newFolder('gateway-folder-lock-'));
  }

  beforeAll(async () => {
    if (!existsSync(ADMIN_SCRIPT)) throw new Error(`${ADMIN_SCRIPT} is missing: run \`npm run build\` first (npm test does).`);
    simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    const simulatorUrl = await simulator.start();
    const work = await newFolder('gateway-folder-lock-work-');
    configPath = join(work, 'gateway.yaml');
    await writeFile(configPath, configYaml(simulatorUrl));
  });

  afterEach(async () => {
    for (const gateway of processes.splice(0)) await gateway.kill();
  });

  afterAll(async () => {
    await simulator?.stop();
    await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
  });

  it(
    'refuses an admin command on the folder of a running gateway, writing nothing, and runs it once the gateway has stopped',
    async () => {
      const dataDir = await migratedDataDir();
      const gateway = await launch(dataDir);
      await gateway.waitUntilReady();
      const lockBefore = lockHolder(dataDir);

      const startedAt = Date.now();
      const refused = await admin(dataDir, ['owners', 'create', '--id', 'team-locked-out', '--kind', 'project']);
      const refusedAfterMs = Date.now() - startedAt;

      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expectRefusal(refused.stderr, dataDir, gateway.child.pid!);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refusedAfterMs).toBeLessThan(REFUSAL_PATIENCE_MS);
      expect(lockHolder(dataDir)).toEqual(lockBefore);
      expect(lockBefore?.pid).toBe(gateway.child.pid);
      expect(await ownerStatus(gateway, 'team-locked-out')).toBe(404);
      // Wrong use is told at once: the command checks its arguments before it opens the folder.
      const typo = await admin(dataDir, ['owners', 'craete', '--id', 'team-locked-out']);
      expect({ code: typo.code, stdout: typo.stdout }).toEqual({ code: 2, stdout: '' });
      expect(typo.stderr).toMatch(/^admin: unknown command: owners craete\n\nUsage: gateway-admin/);
      expect(await chatStatus(gateway)).toBe(200);

      expect(await gateway.stop()).toEqual({ code: 0, signal: null });
      const afterStop = await admin(dataDir, ['owners', 'create', '--id', 'team-after-stop', '--kind', 'project']);
      expect({ code: afterStop.code, stderr: afterStop.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(afterStop.stdout)).toMatchObject({ id: 'team-after-stop' });
    },
    2 * START_PATIENCE_MS + EXIT_PATIENCE_MS,
  );

  it(
    'stops a second gateway on the folder at once, while the first keeps serving',
    async () => {
      const dataDir = await migratedDataDir();
      const first = await launch(dataDir);
      await first.waitUntilReady();

      const second = await launch(dataDir);
      const exit = await second.waitForExit();

      expect(exit.code).toBe(1);
      expectRefusal(second.output, dataDir, first.child.pid!);
      expect(lockHolder(dataDir)?.pid).toBe(first.child.pid);
      expect(await chatStatus(first)).toBe(200);
      expect(await ownerStatus(first, 'team-a')).toBe(200);
      expect(await first.stop()).toEqual({ code: 0, signal: null });
    },
    START_PATIENCE_MS + 2 * EXIT_PATIENCE_MS,
  );

  it(
    'lets a new gateway take over the folder of one killed with SIGKILL, saying so',
    async () => {
      const dataDir = await migratedDataDir();
      const killed = await launch(dataDir);
      await killed.waitUntilReady();
      await killed.kill();
      const lockLeft = lockHolder(dataDir);

      const next = await launch(dataDir);
      await next.waitUntilReady();

      expect(next.output).toContain(`Took over the lock of process ${killed.child.pid} (gateway), which is no longer running`);
      expect(lockLeft?.pid).toBe(killed.child.pid);
      expect(lockHolder(dataDir)?.pid).toBe(next.child.pid);
      expect(await chatStatus(next)).toBe(200);
      expect(await next.stop()).toEqual({ code: 0, signal: null });
    },
    2 * START_PATIENCE_MS + EXIT_PATIENCE_MS,
  );

  it(
    'leaves no lock behind a gateway stopped with SIGTERM: the next one starts without a take-over',
    async () => {
      const dataDir = await migratedDataDir();
      const stopped = await launch(dataDir);
      await stopped.waitUntilReady();
      expect(lockHolder(dataDir)?.pid).toBe(stopped.child.pid);
      expect(await stopped.stop()).toEqual({ code: 0, signal: null });

      const lockLeft = existsSync(join(dataDir, LOCK_FILE_NAME));
      const next = await launch(dataDir);
      await next.waitUntilReady();

      expect(lockLeft).toBe(false);
      expect(next.output).not.toContain('Took over');
      expect(await next.stop()).toEqual({ code: 0, signal: null });
    },
    2 * START_PATIENCE_MS + EXIT_PATIENCE_MS,
  );
});
