import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DatabaseSettings } from '../../src/database/data-source';
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
 * `shared`: the database will serve more than one gateway (replicas, a restart). On the
 * embedded engine that means one open PGlite instance handed to each gateway and closed here.
 */
export async function createTestDatabase(options: { shared?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl && options.shared) {
    const embedded = await openEmbeddedDatabase(undefined);
    return { settings: { dataDir: 'memory', embedded }, drop: () => embedded.close() };
  }
  if (!serverUrl) return { settings: { dataDir: 'memory' }, drop: async () => undefined };
  const name = `gateway_test_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    settings: { url: url.toString(), dataDir: 'memory', poolSize: 5 },
    drop: () => withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
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
