import type { PGlite } from '@electric-sql/pglite';
import { CopyRows, EmbeddedPool, openEmbeddedDatabase } from './embedded-pool';

describe(EmbeddedPool.name, () => {
  let database: PGlite;
  let pool: EmbeddedPool;

  beforeAll(async () => {
    database = await openEmbeddedDatabase(undefined);
    pool = new EmbeddedPool(database);
  });

  afterAll(async () => {
    await database.close();
  });

  it('runs the engine with a 32 MB shared buffer cache instead of PGlite\'s 128 MB', async () => {
    const { rows } = await pool.query('SHOW shared_buffers');
    expect(rows).toEqual([{ shared_buffers: '32MB' }]);
  });

  it('hands CopyRows to COPY … FROM \'/dev/blob\' as its input', async () => {
    await pool.query('CREATE TABLE copied (name text, amount int8)');
    await pool.query("COPY copied (name, amount) FROM '/dev/blob'", [new CopyRows('first\t1\nsecond\\twith tab\t\\N\n')]);
    const { rows } = await pool.query('SELECT name, amount FROM copied ORDER BY name');
    expect(rows).toEqual([
      { name: 'first', amount: '1' },
      { name: 'second\twith tab', amount: null },
    ]);
  });
});
