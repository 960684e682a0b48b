import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import type { DatabaseSettings } from '../../src/config/settings/database.settings';
import { MIGRATIONS, openDataSource } from '../../src/database/data-source';
import { openEmbeddedDatabase } from '../../src/database/embedded-pool';

/**
 * The database of one test gateway: embedded PGlite in memory by default; with
 * TEST_DATABASE_URL (set by `npm run test:pg`) a fresh database on that real PostgreSQL
 * server, dropped again afterwards.
 */
export interface TestDatabase {
  settings: DatabaseSettings;
  drop(): Promise<void>;
}

/**
 * A database for one or more gateways (replicas, a restart): on the embedded engine an open
 * PGlite instance handed to each gateway, which leaves it open; `drop` closes it.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) return createEmbeddedTestDatabase();
  const name = `gateway_test_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    settings: { url: url.toString(), dataDir: 'memory', poolSize: 5 },
    drop: () => withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** An embedded database, migrated, in memory, also under `npm run test:pg` (for what only the embedded engine does). */
export async function createEmbeddedTestDatabase(): Promise<TestDatabase> {
  const embedded = await openEmbeddedDatabase(undefined, { image: await migratedImage() });
  return { settings: { dataDir: 'memory', embedded }, drop: () => embedded.close() };
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A name for what the migrations, PGlite's version and the image's making make, so a change of any makes a new copy source. */
async function migrationsKey(): Promise<string> {
  const version = await readFile(join(dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json'), 'utf8');
  return createHash('sha256').update(version).update(MIGRATIONS.map(String).join('\n')).update(migratedImage.toString()).digest('hex').slice(0, 16);
}

let image: Promise<Uint8Array> | undefined;

/**
 * An embedded database with every migration applied, as an image to open copies from. A fresh
 * engine spends seconds on initdb and the migrations; a copy opens in a fraction of that. Made
 * once and kept in the system's temporary folder under a name derived from the migrations' code
 * and PGlite's version, so every suite and worker of a run (and later runs) share it; a changed
 * migration makes a new one. The gateway still runs its migrations on each copy (none pending).
 */
function migratedImage(): Promise<Uint8Array> {
  image ??= (async () => {
    const file = join(tmpdir(), `model-gateway-test-db-${await migrationsKey()}.tar`);
    const kept = await readFile(file).catch(() => undefined);
    if (kept) return new Uint8Array(kept.buffer, kept.byteOffset, kept.length);
    const engine = await openEmbeddedDatabase(undefined);
    try {
      await (await openDataSource({ dataDir: 'memory', embedded: engine })).destroy();
      // The gateway uses the database "postgres" only: without the two template databases the
      // image has a third of the catalog files, and every copy opens that much sooner.
      for (const template of ['template0', 'template1']) {
        await engine.query(`ALTER DATABASE ${template} IS_TEMPLATE false`);
        await engine.query(`DROP DATABASE ${template}`);
      }
      await engine.query('CHECKPOINT');
      const made = await engine.image();
      const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
      await writeFile(partial, made);
      await rename(partial, file);
      return made;
    } finally {
      await engine.close();
    }
  })();
  image.catch(() => (image = undefined));
  return image;
}

let folderTemplate: Promise<string> | undefined;

/**
 * A new embedded database folder (a DATA_DIR) with every migration applied, for gateway and
 * command processes whose test is not about a first start: a copy of a folder migrated once and
 * kept beside the image, which spares each process the seconds of initdb. Suites that test a
 * first start give the process an empty folder instead.
 */
export async function migratedFolder(parent: string): Promise<string> {
  folderTemplate ??= (async () => {
    const template = join(tmpdir(), `model-gateway-test-folder-${await migrationsKey()}`);
    if (await stat(join(template, 'PG_VERSION')).catch(() => undefined)) return template;
    const partial = await mkdtemp(`${template}.partial-`);
    await (await openDataSource({ dataDir: partial })).destroy();
    // Another worker may have made it meanwhile: renaming onto a full folder fails, and that one is as good.
    await rename(partial, template).catch(() => rm(partial, { recursive: true, force: true }));
    return template;
  })();
  folderTemplate.catch(() => (folderTemplate = undefined));
  const folder = join(parent, `data-${randomBytes(4).toString('hex')}`);
  await cp(await folderTemplate, folder, { recursive: true });
  return folder;
}
