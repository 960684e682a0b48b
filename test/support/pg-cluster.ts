import { execFile } from 'node:child_process';
import { chown, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './gateway-process';

const run = promisify(execFile);

/**
 * A throwaway PostgreSQL cluster that a test owns: made from the machine's server binaries
 * (Debian: apt-get install postgresql) in a temporary folder, listening on loopback only, and
 * stopped and started again by the test (database faults). initdb refuses to run as root, so
 * under root the cluster runs as the `postgres` user.
 */
export class PgCluster {
  private running = false;
  private paused = false;

  private constructor(
    private readonly bin: string,
    private readonly folder: string,
    readonly port: number,
  ) {}

  /** The folder of the newest installed PostgreSQL's binaries, or undefined. */
  static async binaries(): Promise<string | undefined> {
    const versions = await readdir('/usr/lib/postgresql').catch(() => [] as string[]);
    const newest = versions
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(a) - Number(b))
      .at(-1);
    return newest ? `/usr/lib/postgresql/${newest}/bin` : undefined;
  }

  static async create(): Promise<PgCluster> {
    const bin = await PgCluster.binaries();
    if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql (Debian: apt-get install -y postgresql)');
    const folder = await mkdtemp(join(tmpdir(), 'gateway-cluster-'));
    if (isRoot()) await chown(folder, ...(await postgresIds()));
    const cluster = new PgCluster(bin, folder, await freePort());
    await cluster.asOwner('initdb', ['-D', cluster.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await cluster.start();
    return cluster;
  }

  /** The cluster's `postgres` database; tests create their own databases in it. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** A URL of another database on this cluster. */
  urlOf(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Creates an empty database on this cluster and answers its URL. */
  async createDatabase(name: string): Promise<string> {
    const client = new Client({ connectionString: this.url });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    return this.urlOf(name);
  }

  private get dataDir(): string {
    return join(this.folder, 'data');
  }

  /** Starts the server on the same port and waits until it accepts connections. */
  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await this.asOwner('pg_ctl', ['-D', this.dataDir, '-l', join(this.folder, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
    this.running = true;
  }

  /**
   * Stops the server. `fast` (the default) ends every session and shuts down cleanly, as an
   * operator's restart does; `immediate` is a crash: no checkpoint, recovery at the next start.
   */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.asOwner('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
    this.running = false;
  }

  /**
   * Freezes the server without ending anything: SIGSTOP to the postmaster, so open sessions go on
   * while new connections wait in the listen queue; resume() lets them all in at once (replicas
   * that start together then reach the database together). Always resume before stop/destroy.
   */
  async pause(): Promise<void> {
    process.kill(await this.postmasterPid(), 'SIGSTOP');
    this.paused = true;
  }

  async resume(): Promise<void> {
    if (!this.paused) return;
    process.kill(await this.postmasterPid(), 'SIGCONT');
    this.paused = false;
  }

  /**
   * Whether process `pid` holds a connection to the server, established as far as the kernel is
   * concerned (one still waiting in the listen queue of a paused server counts): its sockets,
   * from /proc/<pid>/fd, matched against /proc/net/tcp(6).
   */
  async isConnected(pid: number): Promise<boolean> {
    const port = `:${this.port.toString(16).toUpperCase().padStart(4, '0')}`;
    const sockets = new Set<string>();
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      const text = await readFile(table, 'utf8').catch(() => '');
      for (const line of text.split('\n').slice(1)) {
        const fields = line.trim().split(/\s+/);
        // remote address, state (01: established), inode
        if (fields[2]?.endsWith(port) && fields[3] === '01') sockets.add(fields[9]);
      }
    }
    const descriptors = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const descriptor of descriptors) {
      const target = await readlink(`/proc/${pid}/fd/${descriptor}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && sockets.has(inode)) return true;
    }
    return false;
  }

  private async postmasterPid(): Promise<number> {
    const pid = Number((await readFile(join(this.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${this.dataDir}`);
    return pid;
  }

  /** The server's log, for a failing test's message. */
  log(): Promise<string> {
    return readFile(join(this.folder, 'server.log'), 'utf8').catch(() => '');
  }

  /** Stops the server if it runs and removes its folder. */
  async destroy(): Promise<void> {
    await this.resume().catch(() => undefined);
    if (this.running) await this.stop('immediate').catch(() => undefined);
    await rm(this.folder, { recursive: true, force: true });
  }

  private async asOwner(program: string, args: string[]): Promise<void> {
    const [file, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', join(this.bin, program), ...args]] : [join(this.bin, program), args];
    try {
      await run(file, argv, { timeout: 120_000 });
    } catch (error) {
      const failure = error as { stderr?: string; message: string };
      throw new Error(`${program} ${args.join(' ')} failed: ${failure.stderr || failure.message}\n${await this.log()}`, { cause: error });
    }
  }
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

async function postgresIds(): Promise<[number, number]> {
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: group } = await run('id', ['-g', 'postgres']);
  return [Number(stdout.trim()), Number(group.trim())];
}
