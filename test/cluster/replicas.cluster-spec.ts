import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS } from '../../src/database/data-source';
import { UpstreamSimulator } from '../simulator/upstream-simulator';
import { GatewayProcess, launchGateway } from '../support/gateway-process';
import { Nginx } from '../support/nginx';
import { PgCluster } from '../support/pg-cluster';
import { VENDOR_KEY } from '../support/test-config';

/**
 * Issue 8 point 1: two gateway processes on one real PostgreSQL behind nginx, as operators
 * run replicas.
 */

const ADMIN_TOKEN = 'replicas-admin-token';
const KEY = 'gk-replicas-team-a-0001';

function configYaml(simulatorUrl: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulatorUrl}
    api_key: \${REPLICAS_LINE_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2.5, output_tokens: 10 }
owners:
  - { id: team-a, kind: project, budget: 100 }
keys:
  - { key: ${KEY}, owner: team-a, models: ["*"] }
`;
}

describe('two replicas on one PostgreSQL behind nginx', () => {
  let cluster: PgCluster;
  let simulator: UpstreamSimulator;
  let folder: string;
  let replicas: GatewayProcess[] = [];
  let nginx: Nginx;
  let databaseUrl: string;

  beforeAll(async () => {
    cluster = await PgCluster.create();
    const admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('CREATE DATABASE replicas');
    await admin.end();
    databaseUrl = cluster.urlOf('replicas');
    simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    const simulatorUrl = await simulator.start();
    folder = await mkdtemp(join(tmpdir(), 'gateway-replicas-'));
    const config = join(folder, 'gateway.yaml');
    await writeFile(config, configYaml(simulatorUrl));
    const env = { GATEWAY_CONFIG: config, DATABASE_URL: databaseUrl, ADMIN_TOKEN, REPLICAS_LINE_KEY: VENDOR_KEY, LOG_LEVEL: 'warn' };
    // Both start at once on an empty database: the migration race of point 1.
    replicas = await Promise.all([launchGateway(env), launchGateway(env)]);
    await Promise.all(replicas.map((replica) => replica.waitUntilReady()));
    nginx = await Nginx.start(replicas.map((replica) => replica.url));
  });

  afterAll(async () => {
    await nginx?.stop();
    await Promise.all(replicas.map((replica) => replica.kill()));
    await simulator?.stop();
    await cluster?.destroy();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('migrate once when both start together on an empty database', async () => {
    const client = new Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const migrations = await client.query('SELECT name FROM migrations');
      expect(migrations.rows.map((row) => row.name).sort()).toEqual(MIGRATIONS.map((migration) => migration.name).sort());
    } finally {
      await client.end();
    }
  });

  it('serve calls through nginx from both replicas', async () => {
    const before = replicas.map((replica) => replica.output.length);
    const statuses: number[] = [];
    for (let index = 0; index < 10; index++) {
      const response = await fetch(`${nginx.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await response.text();
      statuses.push(response.status);
    }
    expect(statuses).toEqual(Array(10).fill(200));
    expect(before).toHaveLength(2);
  });
});
