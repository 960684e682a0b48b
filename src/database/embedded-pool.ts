import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { acquireDataDirLock, DataDirLock } from './data-dir-lock';

/** What a query answers: PGlite's results (rows, fields, affected rows). */
export interface EngineResults<Row> {
  rows: Row[];
  affectedRows?: number;
  fields: Array<{ name: string; dataTypeID: number }>;
}

/**
 * The embedded PostgreSQL as the pool uses it: PGlite's own query interface, whether PGlite runs
 * on this thread (a test's shared instance) or in a worker (`openEmbeddedDatabase`).
 */
export interface EmbeddedEngine {
  readonly closed: boolean;
  query<Row = Record<string, unknown>>(text: string, parameters?: unknown[], options?: { blob?: Blob }): Promise<EngineResults<Row>>;
  /** Several statements in one string (migrations); one result per statement. */
  exec(text: string): Promise<Array<EngineResults<Record<string, unknown>>>>;
  /** The whole database as PGlite's data-directory archive, to open in-memory copies from. */
  image(): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * A node-postgres-shaped pool over one PGlite instance, for TypeORM's postgres driver.
 *
 * PGlite is a single PostgreSQL session. typeorm-pglite hands that one session to every
 * caller at once, so two concurrent transactions interleave their statements (one's BEGIN
 * captures the other's UPDATE). This pool instead lends the session to one holder at a time,
 * like a pg pool of size one: a transaction keeps it from BEGIN to COMMIT, other callers
 * queue. Code holding a transaction must therefore not query through another runner.
 */
export class EmbeddedPool extends EventEmitter {
  private readonly session: SessionLock;
  private readonly client: EmbeddedClient;

  constructor(
    readonly database: EmbeddedEngine,
    /** False when the database is shared and belongs to someone else (tests run two gateways on one). */
    private readonly closeOnEnd = true,
  ) {
    super();
    this.session = sessionLockOf(database);
    this.client = new EmbeddedClient(database);
  }

  connect(callback?: (error: Error | null, client?: EmbeddedClient, release?: () => void) => void): Promise<EmbeddedClient> | void {
    const acquired = this.session.acquire().then(() => this.client);
    if (!callback) return acquired;
    acquired.then(
      (client) => callback(null, client, () => this.session.release()),
      (error: Error) => callback(error),
    );
  }

  async query(text: string, parameters?: unknown[]): Promise<QueryResultLike> {
    await this.session.acquire();
    try {
      return await this.client.query(text, parameters);
    } finally {
      this.session.release();
    }
  }

  end(callback?: (error?: Error) => void): Promise<void> | void {
    const closed = this.database.closed || !this.closeOnEnd ? Promise.resolve() : this.database.close();
    if (!callback) return closed;
    closed.then(
      () => callback(),
      (error: Error) => callback(error),
    );
  }
}

/** The one session of a PGlite instance, lent to one holder at a time across every pool on it. */
class SessionLock {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

const sessionLocks = new WeakMap<EmbeddedEngine, SessionLock>();

function sessionLockOf(database: EmbeddedEngine): SessionLock {
  let lock = sessionLocks.get(database);
  if (!lock) {
    lock = new SessionLock();
    sessionLocks.set(database, lock);
  }
  return lock;
}

/**
 * Rows for `COPY table (columns) FROM '/dev/blob'` in PostgreSQL's text format, passed as the
 * only query parameter: the embedded engine reads them as the COPY's input. COPY is the cheapest
 * way into the embedded engine (about a third less CPU per usage record than INSERT … unnest).
 */
export class CopyRows {
  constructor(readonly content: string | Uint8Array) {}
}

interface QueryResultLike {
  rows: unknown[];
  rowCount?: number;
  command?: string;
}

class EmbeddedClient extends EventEmitter {
  constructor(private readonly database: EmbeddedEngine) {
    super();
  }

  async query(text: string, parameters?: unknown[]): Promise<QueryResultLike> {
    if (parameters?.length === 1 && parameters[0] instanceof CopyRows) {
      return (await this.database.query(text, [], { blob: new Blob([parameters[0].content]) })) as QueryResultLike;
    }
    if (parameters && parameters.length > 0) {
      return (await this.database.query(text, parameters)) as QueryResultLike;
    }
    // Migrations send several statements in one string; only the simple protocol accepts that.
    const results = await this.database.exec(text);
    return (results[results.length - 1] as QueryResultLike | undefined) ?? { rows: [] };
  }

  release(): void {
    // Released through the callback handed out by EmbeddedPool.connect.
  }
}

/**
 * PostgreSQL's shared buffer cache inside the embedded engine. PGlite's default (128 MB) is
 * resident memory of the gateway process; the gateway's tables are small and the operating
 * system caches their files anyway. 32 MB: much less RSS for the same CPU per usage record
 * (measured: see docs/performance.md).
 */
const EMBEDDED_SHARED_BUFFERS = '32MB';

/**
 * Opens the embedded database (a folder, or undefined: in memory) in a worker thread, with the
 * type parsing node-postgres uses (int8 as string), so entities behave the same on both
 * databases. `image` (in memory only): start as a copy of another engine's `image()` instead of
 * an empty cluster; the test suites open each gateway's database from one migrated image.
 */
export async function openEmbeddedDatabase(dataDir: string | undefined, options: { image?: Uint8Array } = {}): Promise<EmbeddedEngine> {
  // Added to PGlite's own start parameters in the worker: this thread never loads PGlite.
  const startParams = ['-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`];
  if (dataDir === undefined) {
    await startThreadPool();
    return WorkerEngine.start(undefined, startParams, undefined, options.image);
  }
  if (options.image) throw new Error('An embedded database in a folder cannot start from an image.');
  // Before anything touches the folder, its first-time set-up included: a second engine on a
  // folder in use loses or corrupts data. Held until the engine's thread has ended.
  const lock = await acquireDataDirLock(dataDir);
  try {
    reportTakeOver(lock);
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await initialiseCluster(dataDir, startParams);
    await startThreadPool();
    return await WorkerEngine.start(dataDir, startParams, () => lock.release());
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** On standard error, so that the admin command's JSON output stays clean. */
function reportTakeOver(lock: DataDirLock): void {
  if (lock.tookOver === undefined) return;
  const previous =
    lock.tookOver === 'unreadable'
      ? 'an unreadable lock file'
      : `the lock of process ${lock.tookOver.pid} (${lock.tookOver.command}), which is no longer running`;
  process.stderr.write(`Took over ${previous} in ${lock.path}.\n`);
}

/**
 * libuv's thread pool (file system, DNS) is started by the first thread that uses it, and a new
 * thread takes its creator's nice value: the main thread starts it before the engine lowers its
 * own priority (ENGINE_NICE), or the pool, which serves the whole process, would run at the
 * engine's.
 */
async function startThreadPool(): Promise<void> {
  await stat(process.cwd()).catch(() => undefined);
}

/**
 * The engine thread's nice value (Linux). Under full contention for one core CFS then gives the
 * engine a quarter of it (weights 335 : 1024), well above what writing the records takes at the
 * gateway's highest rate (chat JSON at c=64), so the records keep up.
 */
const ENGINE_NICE = 5;

/** The engine's side of WorkerEngine (CommonJS, run with `eval`, so that it needs no build step). */
const ENGINE_WORKER_SOURCE = `
  const { parentPort, workerData } = require('node:worker_threads');
  const { PGlite, types } = require(workerData.module);
  // Where the engine shares a core with the calls, the calls go first: a batch of usage records
  // can wait a few milliseconds, a call should not. On Linux a thread's nice value is its own
  // (setpriority of 0 is the calling thread); elsewhere it would be the whole process's.
  if (process.platform === 'linux') {
    try {
      require('node:os').setPriority(0, workerData.nice);
    } catch {
      // Not allowed here (a sandbox): the engine keeps the process's priority.
    }
  }
  // An error as plain data: its message, name and PostgreSQL's fields (code, detail, constraint…).
  const plain = (error) => {
    const copy = { message: error instanceof Error ? error.message : String(error), name: error && error.name };
    for (const [key, value] of Object.entries(error || {})) {
      if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) copy[key] = value;
    }
    return copy;
  };
  const startParams = [...PGlite.defaultStartParams, ...workerData.startParams];
  const loadDataDir = workerData.image ? new Blob([workerData.image]) : undefined;
  PGlite.create({ dataDir: workerData.dataDir, loadDataDir, startParams, parsers: { [types.INT8]: (value) => value } }).then(
    (database) => {
      parentPort.on('message', async ({ id, kind, text, parameters, blobText }) => {
        try {
          let result = null;
          if (kind === 'query') result = await database.query(text, parameters, blobText === undefined ? undefined : { blob: new Blob([blobText]) });
          else if (kind === 'exec') result = await database.exec(text);
          else if (kind === 'image') result = new Uint8Array(await (await database.dumpDataDir('none')).arrayBuffer());
          else await database.close();
          parentPort.postMessage({ id, result });
          if (kind === 'close') parentPort.close();
        } catch (error) {
          parentPort.postMessage({ id, error: plain(error) });
        }
      });
      parentPort.postMessage({ ready: true });
    },
    (error) => parentPort.postMessage({ ready: false, error: plain(error) }),
  );`;

type EngineRequest =
  { kind: 'query'; text: string; parameters: unknown[]; blobText?: string } | { kind: 'exec'; text: string } | { kind: 'image' } | { kind: 'close' };
type EngineAnswer = { id: number; result: unknown; error?: undefined } | { id: number; error: Record<string, unknown> & { message: string } };

function errorOf(plain: Record<string, unknown> & { message: string }): Error {
  return Object.assign(new Error(plain.message), plain);
}

/**
 * PGlite in a worker thread. PGlite runs PostgreSQL's code on the thread that calls it, so on
 * the main thread a batch of usage records would hold the event loop and every call that
 * arrived meanwhile would wait (a visible p99 even at concurrency 1); in a worker the engine
 * works beside the calls, on another core when there is one. A query costs a message each way.
 * The worker keeps the process alive only while a query is under way, as PGlite on the main
 * thread would.
 */
class WorkerEngine implements EmbeddedEngine {
  closed = false;
  private readonly waiting = new Map<number, { resolve(result: unknown): void; reject(error: Error): void }>();
  private serial = 0;
  private failure: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    onEnded: () => void,
  ) {
    worker.on('message', (answer: EngineAnswer) => this.settle(answer));
    worker.on('error', (error: Error) => this.fail(error));
    worker.on('exit', (code) => {
      this.fail(new Error(`The embedded database's worker thread stopped (exit code ${code}).`));
      onEnded();
    });
  }

  /** `onEnded`: called once the worker thread has ended, after `close` or not (its folder is free then). */
  static start(dataDir: string | undefined, startParams: string[], onEnded: () => void = () => undefined, image?: Uint8Array): Promise<WorkerEngine> {
    const workerData = { module: require.resolve('@electric-sql/pglite'), dataDir, image, startParams, nice: ENGINE_NICE };
    const worker = new Worker(ENGINE_WORKER_SOURCE, { eval: true, workerData });
    return new Promise((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`The embedded database could not be opened (worker exit code ${code}).`));
      worker.once('error', reject);
      worker.once('exit', onExit);
      worker.once('message', (ready: { ready: boolean; error?: Record<string, unknown> & { message: string } }) => {
        worker.off('error', reject);
        worker.off('exit', onExit);
        if (!ready.ready) {
          void worker.terminate();
          return reject(errorOf(ready.error ?? { message: 'The embedded database could not be opened.' }));
        }
        worker.unref();
        resolve(new WorkerEngine(worker, onEnded));
      });
    });
  }

  async query<Row>(text: string, parameters: unknown[] = [], options?: { blob?: Blob }): Promise<EngineResults<Row>> {
    // A Blob crosses to the worker far more slowly than its text (a fifth of the main thread's time at concurrency 1).
    const blobText = options?.blob === undefined ? undefined : await options.blob.text();
    return (await this.ask({ kind: 'query', text, parameters, blobText })) as EngineResults<Row>;
  }

  exec(text: string): Promise<Array<EngineResults<Record<string, unknown>>>> {
    return this.ask({ kind: 'exec', text }) as Promise<Array<EngineResults<Record<string, unknown>>>>;
  }

  image(): Promise<Uint8Array> {
    return this.ask({ kind: 'image' }) as Promise<Uint8Array>;
  }

  /** Resolves once the worker thread has ended (its memory with it). */
  async close(): Promise<void> {
    if (this.closed) return;
    const ended = new Promise((resolve) => this.worker.once('exit', resolve));
    await this.ask({ kind: 'close' });
    this.closed = true;
    this.failure ??= new Error('The embedded database is closed.');
    this.worker.ref(); // kept until it has ended, so the process does not go first
    await ended;
  }

  private ask(request: EngineRequest): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.serial;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, ...request });
    });
  }

  private settle(answer: EngineAnswer): void {
    const waiter = this.waiting.get(answer.id);
    if (!waiter) return;
    this.waiting.delete(answer.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (answer.error) waiter.reject(errorOf(answer.error));
    else waiter.resolve(answer.result);
  }

  /** The worker is gone: nothing will answer. */
  private fail(error: Error): void {
    this.failure ??= error;
    this.closed = true;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}

/**
 * Creates the cluster in a new folder with an engine worker of its own, closed at once. initdb
 * runs inside the engine and grows its WebAssembly memory to several hundred MiB, which a running
 * instance never gives back; that worker's memory goes with it, so the gateway keeps the
 * footprint of a plain start (measured: see docs/performance.md).
 */
async function initialiseCluster(dataDir: string, startParams: string[]): Promise<void> {
  const engine = await WorkerEngine.start(dataDir, startParams);
  await engine.close();
}

/** The `driver` option of TypeORM's postgres data source: a module with a `Pool` class. */
export function embeddedDriver(database: EmbeddedEngine, owned = true): { Pool: new () => EmbeddedPool } {
  return {
    Pool: class extends EmbeddedPool {
      constructor() {
        super(database, owned);
      }
    },
  };
}
