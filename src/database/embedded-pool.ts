import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';

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
    readonly database: PGlite,
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
    closed.then(() => callback(), (error: Error) => callback(error));
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

const sessionLocks = new WeakMap<PGlite, SessionLock>();

function sessionLockOf(database: PGlite): SessionLock {
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
  constructor(readonly text: string) {}
}

interface QueryResultLike {
  rows: unknown[];
  rowCount?: number;
  command?: string;
}

class EmbeddedClient extends EventEmitter {
  constructor(private readonly database: PGlite) {
    super();
  }

  async query(text: string, parameters?: unknown[]): Promise<QueryResultLike> {
    if (parameters?.length === 1 && parameters[0] instanceof CopyRows) {
      return (await this.database.query(text, [], { blob: new Blob([parameters[0].text]) })) as QueryResultLike;
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
 * system caches their files anyway. 32 MB: ~100 MiB less RSS, the same CPU per usage record
 * (docs/performance.md).
 */
const EMBEDDED_SHARED_BUFFERS = '32MB';

/**
 * Opens PGlite with the type parsing node-postgres uses (int8 as string), so entities behave
 * the same on both databases.
 */
export async function openEmbeddedDatabase(dataDir: string | undefined): Promise<PGlite> {
  const options = {
    dataDir,
    parsers: { [types.INT8]: (value: string) => value },
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
  };
  if (dataDir !== undefined && !existsSync(join(dataDir, 'PG_VERSION'))) await initialiseCluster(dataDir, options.startParams);
  return PGlite.create(options);
}

/**
 * Creates the cluster in a new folder from a worker thread. initdb runs inside the engine and
 * grows its WebAssembly memory to several hundred MiB, which a running instance never gives
 * back; the worker's memory goes when the worker ends, so the gateway keeps the footprint of a
 * plain start (about 260 MiB instead of 700; docs/performance.md).
 */
async function initialiseCluster(dataDir: string, startParams: string[]): Promise<void> {
  const source = `
    const { workerData } = require('node:worker_threads');
    const { PGlite } = require(workerData.module);
    PGlite.create({ dataDir: workerData.dataDir, startParams: workerData.startParams }).then((database) => database.close());`;
  const worker = new Worker(source, { eval: true, workerData: { module: require.resolve('@electric-sql/pglite'), dataDir, startParams } });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`creating the embedded database in ${dataDir} failed (exit ${code})`))));
  });
}

/** The `driver` option of TypeORM's postgres data source: a module with a `Pool` class. */
export function embeddedDriver(database: PGlite, owned = true): { Pool: new () => EmbeddedPool } {
  return {
    Pool: class extends EmbeddedPool {
      constructor() {
        super(database, owned);
      }
    },
  };
}
