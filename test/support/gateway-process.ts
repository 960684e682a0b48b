import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { resolve } from 'node:path';

/**
 * The built gateway as an operator runs it (DESIGN.md section 2): `node dist/src/main.js` with
 * its settings in the environment. `npm test` builds before jest runs; `npm run build` does it
 * by hand.
 */
export const GATEWAY_MAIN = resolve(__dirname, '..', '..', 'dist', 'src', 'main.js');
/** Bounds of polls and waits, far above what a healthy start needs; not measured timings. */
export const START_PATIENCE_MS = 90_000;
export const EXIT_PATIENCE_MS = 30_000;

/** Settings a test must not inherit from the shell that runs jest. */
const GATEWAY_VARIABLES = ['DATABASE_URL', 'DATA_DIR', 'ADMIN_TOKEN', 'GATEWAY_CONFIG', 'PORT', 'HOST', 'STARTUP_LINE_KEY'];

/** Node's compile cache (jest.config.js sets it), for processes started with an environment of their own making. */
export const COMPILE_CACHE_ENV: Record<string, string> = process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

/** A started gateway process and everything it printed. */
export class GatewayProcess {
  output = '';
  readonly exited: Promise<ExitStatus>;

  constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString('utf8')));
    // `close` comes after the process's output has all been read, so a failure message is never cut short.
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async waitForExit(): Promise<ExitStatus> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the gateway did not exit in time; it printed:\n${this.output}`)), EXIT_PATIENCE_MS);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Polls GET /health/ready until 200; fails if the process exits or the bound passes. */
  async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + START_PATIENCE_MS;
    while (Date.now() < deadline) {
      if (!this.running) {
        const status = await this.exited;
        throw new Error(`the gateway exited (${JSON.stringify(status)}) before it was ready; it printed:\n${this.output}`);
      }
      if ((await this.readiness()) === 200) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the gateway was not ready in time; it printed:\n${this.output}`);
  }

  /** The status of GET /health/ready, 0 when the process does not answer. */
  readiness(): Promise<number> {
    return fetch(`${this.url}/health/ready`, { signal: AbortSignal.timeout(5_000) }).then(
      (response) => response.text().then(() => response.status),
      () => 0,
    );
  }

  /** SIGTERM, then waits for the exit. */
  async stop(): Promise<ExitStatus> {
    if (this.running) this.child.kill('SIGTERM');
    return this.waitForExit();
  }

  /** SIGKILL for clean-up after a failed test; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** The kernel's range of ports for outgoing connections (and `listen(0)`). */
function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 0 && high >= low) return [low, high];
  } catch {
    // Not Linux: the range IANA suggests.
  }
  return [49152, 65535];
}

function listensOn(port: number): Promise<number | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const taken = (server.address() as AddressInfo).port;
      server.close(() => resolve(taken));
    });
  });
}

/**
 * A port free on 127.0.0.1 for a process started next. It is drawn below the ephemeral range:
 * between this check and the process's own bind, any outgoing connection of a suite running
 * alongside may be given an ephemeral port, which would make the process fail with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralPorts();
  const floor = Math.max(1024, low - 12_000);
  for (let attempt = 0; attempt < 50 && low > floor; attempt += 1) {
    const free = await listensOn(floor + Math.floor(Math.random() * (low - floor)));
    if (free !== undefined) return free;
  }
  return (await listensOn(0))!;
}

/**
 * Starts `node dist/src/main.js` on loopback with the test runner's environment minus the
 * gateway's own variables, plus `env` (a value of undefined removes the variable).
 */
export async function launchGateway(env: Record<string, string | undefined>): Promise<GatewayProcess> {
  if (!existsSync(GATEWAY_MAIN)) throw new Error(`${GATEWAY_MAIN} is missing: run \`npm run build\` first (\`npm test\` does it)`);
  const port = env.PORT ?? String(await freePort());
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of GATEWAY_VARIABLES) delete base[name];
  const merged: NodeJS.ProcessEnv = { ...base, HOST: '127.0.0.1', PORT: port, ...env };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  const child = spawn(process.execPath, [GATEWAY_MAIN], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  return new GatewayProcess(child, `http://127.0.0.1:${port}`);
}
