import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { CopyRows, EmbeddedEngine, EmbeddedPool, openEmbeddedDatabase } from './embedded-pool';

describe(EmbeddedPool.name, () => {
  let database: EmbeddedEngine;
  let pool: EmbeddedPool;

  beforeAll(async () => {
    database = await openEmbeddedDatabase(undefined);
    pool = new EmbeddedPool(database);
  });

  afterAll(async () => {
    await database.close();
  });

  it("runs the engine with a 32 MB shared buffer cache instead of PGlite's 128 MB", async () => {
    const { rows } = await pool.query('SHOW shared_buffers');
    expect(rows).toEqual([{ shared_buffers: '32MB' }]);
  });

  it("hands CopyRows to COPY … FROM '/dev/blob' as its input", async () => {
    await pool.query('CREATE TABLE copied (name text, amount int8)');
    await pool.query("COPY copied (name, amount) FROM '/dev/blob'", [new CopyRows('first\t1\nsecond\\twith tab\t\\N\n')]);
    const { rows } = await pool.query('SELECT name, amount FROM copied ORDER BY name');
    expect(rows).toEqual([
      { name: 'first', amount: '1' },
      { name: 'second\twith tab', amount: null },
    ]);
  });

  it('runs the engine beside the event loop: timers keep firing during a long statement', async () => {
    let turns = 0;
    let running = true;
    const statement = pool.query('SELECT count(*) AS n FROM generate_series(1, 2000000)').finally(() => (running = false));
    while (running) {
      await new Promise((resolve) => setImmediate(resolve));
      turns += 1;
    }

    expect((await statement).rows).toEqual([{ n: '2000000' }]);
    // On the event loop's thread the statement would hold it from start to end (a handful of turns at most).
    expect(turns).toBeGreaterThan(100);
  });

  it("runs the engine below the calls' priority, and the process's thread pool at theirs (Linux)", () => {
    // A child process: this one's thread pool was started long ago, by jest.
    const script = `
      const { readdirSync, readFileSync, promises } = require('node:fs');
      const { openEmbeddedDatabase } = require(${JSON.stringify(join(__dirname, '../../dist/src/database/embedded-pool.js'))});
      const niceOf = (task) => { const stat = readFileSync('/proc/self/task/' + task + '/stat', 'utf8'); return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]); };
      (async () => {
        const engine = await openEmbeddedDatabase(undefined);
        await engine.query('SELECT 1');
        await promises.stat('.'); // the main thread uses the pool once the engine runs
        console.log(JSON.stringify(readdirSync('/proc/self/task').map(niceOf)));
        await engine.close();
      })();`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.stderr).toBe('');
    const nices = JSON.parse(child.stdout) as number[];
    expect(nices.filter((nice) => nice === 5)).toHaveLength(1);
    expect(nices.filter((nice) => nice === 0).length).toBeGreaterThanOrEqual(nices.length - 1);
  });

  it('reports PostgreSQL errors with their fields', async () => {
    const failure = await pool.query('SELECT * FROM no_such_table').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(Error);
    expect(failure).toMatchObject({ message: 'relation "no_such_table" does not exist', code: '42P01', severity: 'ERROR' });
  });

  it('answers queries after a failed one, and refuses them once closed', async () => {
    const engine = await openEmbeddedDatabase(undefined);
    await expect(engine.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
    await expect(engine.query('SELECT 2 AS two')).resolves.toMatchObject({ rows: [{ two: 2 }] });

    await engine.close();

    expect(engine.closed).toBe(true);
    await expect(engine.query('SELECT 1')).rejects.toThrow('The embedded database is closed.');
  });

  it('opens an in-memory copy from an image: same rows, shared buffers as set, changes its own', async () => {
    await pool.query('CREATE TABLE imaged (name text)');
    await pool.query("INSERT INTO imaged VALUES ('kept')");
    const copy = await openEmbeddedDatabase(undefined, { image: await database.image() });
    try {
      await copy.query("INSERT INTO imaged VALUES ('copy only')");
      expect((await copy.query('SELECT name FROM imaged ORDER BY name')).rows).toEqual([{ name: 'copy only' }, { name: 'kept' }]);
      expect((await copy.query('SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '32MB' }]);
      expect((await pool.query('SELECT name FROM imaged')).rows).toEqual([{ name: 'kept' }]);
    } finally {
      await copy.close();
    }
  });

  it('refuses an image for a folder: a folder holds its own cluster', async () => {
    await expect(openEmbeddedDatabase(join(mkdtempSync(join(tmpdir(), 'engine-')), 'data'), { image: new Uint8Array(1) })).rejects.toThrow(
      'cannot start from an image',
    );
  });

  it('refuses to open a folder the engine cannot use, instead of hanging', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'engine-')), 'a-file');
    writeFileSync(file, 'not a folder');

    await expect(openEmbeddedDatabase(join(file, 'data'))).rejects.toBeInstanceOf(Error);
  });

  it('refuses the queries under way when its worker thread dies', async () => {
    const engine = await openEmbeddedDatabase(undefined);
    const statement = engine.query('SELECT count(*) FROM generate_series(1, 20000000)');
    await (engine as unknown as { worker: Worker }).worker.terminate();

    await expect(statement).rejects.toThrow('worker thread stopped');
    expect(engine.closed).toBe(true);
    await expect(engine.query('SELECT 1')).rejects.toThrow('worker thread stopped');
  });
});
