import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { MIGRATIONS } from '../src/database/data-source';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { createTestDatabase, migratedFolder, TestDatabase } from './support/test-database';
import { VENDOR_KEY } from './support/test-config';
import { until } from './support/until';
import { EXIT_PATIENCE_MS, GatewayProcess, launchGateway, START_PATIENCE_MS } from './support/gateway-process';
import { openEmbeddedDatabase } from '../src/database/embedded-pool';

/**
 * The built process as an operator runs it (DESIGN.md section 2): `node dist/src/main.js`
 * with GATEWAY_CONFIG, DATA_DIR or DATABASE_URL, PORT and ADMIN_TOKEN.
 */
const ADMIN_TOKEN = 'startup-admin-token';
const GATEWAY_KEY = 'gk-startup-test-key-0001';

function goodConfigYaml(simulatorUrl: string): string {
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
    budget: 100
keys:
  - key: ${GATEWAY_KEY}
    owner: team-a
    models: ["*"]
`;
}

async function chatCall(url: string): Promise<{ status: number; requestId: string; body: any }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello from the start-up test' }] }),
  });
  const text = await response.text();
  return { status: response.status, requestId: response.headers.get('x-request-id') ?? '', body: JSON.parse(text) };
}

async function adminGet(url: string, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: response.status, body: JSON.parse(await response.text()) };
}

/** A health probe's status and body (probes need no key). */
async function probe(url: string, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`);
  return { status: response.status, body: JSON.parse(await response.text()) };
}

/**
 * A streamed chat call whose first chunk has arrived; the rest is read at once in the
 * background, and `rest()` resolves to the whole text when it ends (or is cut off).
 */
async function openStream(url: string): Promise<{ status: number; requestId: string; finished: boolean; rest(): Promise<string> }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${GATEWAY_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'chat-model',
      stream: true,
      messages: [{ role: 'user', content: 'Please tell a long and slow story about shutting down gracefully' }],
    }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = decoder.decode((await reader.read()).value, { stream: true });
  const stream = { status: response.status, requestId: response.headers.get('x-request-id') ?? '', finished: false, rest: () => whole };
  const whole = (async (): Promise<string> => {
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
    } catch {
      // cut off by the server: what arrived is the answer
    }
    stream.finished = true;
    return text;
  })();
  return stream;
}

/** True once a new TCP connection to the gateway's port is refused. */
function connectionRefused(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** The usage records in a stopped gateway's embedded database. */
async function storedRecords(folder: string): Promise<Array<{ request_id: string; status: number; error_code: string | null; stream: boolean }>> {
  const database = await openEmbeddedDatabase(folder);
  try {
    const result = await database.query<{ request_id: string; status: number; error_code: string | null; stream: boolean }>(
      'SELECT request_id, status, error_code, stream FROM usage_record ORDER BY started_at',
    );
    return result.rows;
  } finally {
    await database.close();
  }
}

describe('the gateway process', () => {
  const processes: GatewayProcess[] = [];
  const folders: string[] = [];
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'gateway-startup-'));
    folders.push(workDir);
  });

  afterEach(async () => {
    // A failed test must not leave a gateway running.
    for (const gateway of processes.splice(0)) await gateway.kill();
  });

  afterAll(async () => {
    await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
  });

  async function configFile(name: string, yaml: string): Promise<string> {
    const path = join(workDir, name);
    await writeFile(path, yaml);
    return path;
  }

  /** An empty DATA_DIR: the gateway's first start makes the database. */
  async function dataDir(): Promise<string> {
    const folder = await mkdtemp(join(tmpdir(), 'gateway-data-'));
    folders.push(folder);
    return folder;
  }

  /** A DATA_DIR that holds a migrated database, for tests about what comes after a first start. */
  async function migratedDataDir(): Promise<string> {
    return migratedFolder(await dataDir());
  }

  /** Starts the built gateway with a clean environment plus `env`; afterEach stops it. */
  async function launch(env: Record<string, string | undefined>): Promise<GatewayProcess> {
    const gateway = await launchGateway(env);
    processes.push(gateway);
    return gateway;
  }

  describe('with a bad configuration file', () => {
    it('exits non-zero and names each problem by its YAML path', async () => {
      const path = await configFile(
        'bad.yaml',
        `
upstreams:
  - id: line-a
    base_url: http://127.0.0.1:9
    api_key: \${STARTUP_TEST_UNSET_VARIABLE}
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [x]
owners:
  - id: team-a
    kind: project
keys:
  - key: ${GATEWAY_KEY}
    owner: team-nobody
    models: ["*"]
`,
      );
      const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await dataDir(), STARTUP_TEST_UNSET_VARIABLE: undefined });

      const exit = await gateway.waitForExit();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(gateway.output).toContain('models[0].lines[0]: unknown upstream "x"');
      expect(gateway.output).toContain('upstreams[0].api_key: environment variable STARTUP_TEST_UNSET_VARIABLE is not set');
      expect(gateway.output).toContain('keys[0].owner: unknown owner "team-nobody"');
    });

    it('exits non-zero naming the field of a value of the wrong kind', async () => {
      const path = await configFile(
        'wrong-kind.yaml',
        `
upstreams:
  - id: line-a
    base_url: http://127.0.0.1:9
    api_key: secret
    max_concurrency: many
models: []
owners:
  - id: team-a
    kind: company
keys: []
`,
      );
      const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await dataDir() });

      const exit = await gateway.waitForExit();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(gateway.output).toMatch(/upstreams\[0\]\.max_concurrency: /);
      expect(gateway.output).toMatch(/owners\[0\]\.kind: /);
    });

    it('exits non-zero naming a price that no interface of its model meters', async () => {
      const path = await configFile(
        'unused-price.yaml',
        `
upstreams:
  - id: line-a
    base_url: http://127.0.0.1:9
    api_key: secret
models:
  - id: video-model
    upstream_model: vendor-video-b
    interfaces: [video_b]
    lines: [line-a]
    prices: { output_tokens: 2 }
owners: []
keys: []
`,
      );
      const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await dataDir() });

      const exit = await gateway.waitForExit();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(gateway.output).toContain("models[0].prices.output_tokens: the model's interfaces (video_b) do not meter output_tokens");
      expect(gateway.output).toContain('they meter: output_video_tokens');
    });

    it('exits non-zero when GATEWAY_CONFIG names a file that does not exist', async () => {
      const missing = join(workDir, 'no-such-file.yaml');
      const gateway = await launch({ GATEWAY_CONFIG: missing, DATA_DIR: await dataDir() });

      const exit = await gateway.waitForExit();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(gateway.output).toContain(missing);
    });

    it('exits non-zero when GATEWAY_CONFIG is not set', async () => {
      const gateway = await launch({ DATA_DIR: await dataDir() });

      const exit = await gateway.waitForExit();

      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(gateway.output).toContain('GATEWAY_CONFIG');
    });
  });

  describe('with a good configuration file on the embedded database', () => {
    let simulator: UpstreamSimulator;
    let simulatorUrl: string;

    beforeAll(async () => {
      simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
      simulatorUrl = await simulator.start();
    });

    afterAll(async () => {
      await simulator?.stop();
    });

    beforeEach(() => simulator.reset());

    async function launchGood(dataFolder: string): Promise<GatewayProcess> {
      const path = await configFile('good.yaml', goodConfigYaml(simulatorUrl));
      return launch({ GATEWAY_CONFIG: path, DATA_DIR: dataFolder, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY });
    }

    /** A ready gateway on a migrated DATA_DIR with SHUTDOWN_DELAY_MS set. */
    async function launchReadyWithDelay(delayMs: string): Promise<GatewayProcess> {
      const path = await configFile('delayed-shutdown.yaml', goodConfigYaml(simulatorUrl));
      const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await migratedDataDir(), STARTUP_LINE_KEY: VENDOR_KEY, SHUTDOWN_DELAY_MS: delayMs });
      await gateway.waitUntilReady();
      return gateway;
    }

    it(
      'starts, answers /health/ready and a chat call, and exits 0 on SIGTERM',
      async () => {
        const gateway = await launchGood(await dataDir());

        await gateway.waitUntilReady();
        const answer = await chatCall(gateway.url);
        const exit = await gateway.stop();

        expect(answer.status).toBe(200);
        expect(answer.body.choices[0].message.content).toContain('Hello from the start-up test');
        expect(simulator.requests).toHaveLength(1);
        expect(simulator.requests[0].headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
        expect(exit).toEqual({ code: 0, signal: null });
      },
      START_PATIENCE_MS + EXIT_PATIENCE_MS,
    );

    it(
      'answers readiness 503 for SHUTDOWN_DELAY_MS after SIGTERM while it still serves calls, then drains and exits 0',
      async () => {
        const gateway = await launchReadyWithDelay('1500');
        // A first call warms the path up, so the calls inside the delay take milliseconds.
        expect((await chatCall(gateway.url)).status).toBe(200);

        const signalledAt = Date.now();
        gateway.child.kill('SIGTERM');
        await until(async () => (await gateway.readiness()) === 503, 'readiness to answer 503');
        const ready = await probe(gateway.url, '/health/ready');
        const answer = await chatCall(gateway.url);
        const live = await probe(gateway.url, '/health/live');
        // A new connection still accepted: all of the above happened within the delay.
        const acceptingAfterCalls = !(await connectionRefused(gateway.url));
        await until(() => connectionRefused(gateway.url), 'the port to refuse connections once the delay is over');
        const refusedAfterMs = Date.now() - signalledAt;
        const exit = await gateway.waitForExit();

        expect(ready.status).toBe(503);
        expect(ready.body).toMatchObject({ status: 'error', error: { serving: { status: 'down', message: 'shutting down (SIGTERM)' } } });
        expect(answer.status).toBe(200);
        expect(live.status).toBe(200);
        expect(acceptingAfterCalls).toBe(true);
        // Timers may fire a millisecond early; the listener must not close long before the delay ends.
        expect(refusedAfterMs).toBeGreaterThanOrEqual(1_450);
        expect(exit).toEqual({ code: 0, signal: null });
        expect(gateway.output).toContain('SIGTERM: readiness 503 for 1500 ms before draining');
        expect(gateway.output).not.toContain('drain deadline');
      },
      START_PATIENCE_MS + EXIT_PATIENCE_MS,
    );

    it(
      'starts draining at a second SIGTERM during SHUTDOWN_DELAY_MS instead of waiting for its end',
      async () => {
        const gateway = await launchReadyWithDelay('60000');

        gateway.child.kill('SIGTERM');
        await until(async () => (await gateway.readiness()) === 503, 'readiness to answer 503');
        gateway.child.kill('SIGTERM');
        const exit = await gateway.waitForExit();

        // Well before the 60 s delay (EXIT_PATIENCE_MS is 30 s).
        expect(exit).toEqual({ code: 0, signal: null });
        expect(gateway.output).toContain('SIGTERM during the readiness delay: draining now');
      },
      START_PATIENCE_MS + EXIT_PATIENCE_MS,
    );

    it(
      'starts with a model that has no prices, warning about it in the log',
      async () => {
        const yaml = goodConfigYaml(simulatorUrl).replace(
          'owners:',
          '  - id: unpriced-model\n    upstream_model: vendor-chat-2025-01\n    interfaces: [chat_completions]\n    lines: [line-a]\nowners:',
        );
        const path = await configFile('unpriced.yaml', yaml);
        const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await migratedDataDir(), ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY });

        await gateway.waitUntilReady();
        await gateway.stop();

        const warnings = gateway.output
          .split('\n')
          .filter((line) => line.includes('has no prices'))
          .map((line) => JSON.parse(line));
        expect(warnings).toEqual([
          expect.objectContaining({ level: 40, context: 'Catalog', msg: expect.stringContaining('model "unpriced-model" (models[1]) has no prices') }),
        ]);
      },
      START_PATIENCE_MS + EXIT_PATIENCE_MS,
    );

    it(
      'reads the configuration file again on SIGHUP, and keeps its catalog when the file has a problem, saying why',
      async () => {
        const path = await configFile('reloaded.yaml', goodConfigYaml(simulatorUrl));
        const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: await migratedDataDir(), ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY });
        await gateway.waitUntilReady();
        const modelIds = async () => (await adminGet(gateway.url, '/admin/models')).body.data.map((model: { id: string }) => model.id);

        await writeFile(
          path,
          goodConfigYaml(simulatorUrl).replace(
            'owners:',
            '  - id: second-model\n    upstream_model: vendor-chat-2025-01\n    interfaces: [chat_completions]\n    lines: [line-a]\nowners:',
          ),
        );
        gateway.child.kill('SIGHUP');
        await until(async () => (await modelIds()).includes('second-model'), 'the reloaded file to add its model');
        await writeFile(path, goodConfigYaml(simulatorUrl).replace('lines: [line-a]', 'lines: [line-x]'));
        gateway.child.kill('SIGHUP');
        await until(() => gateway.output.includes('configuration not reloaded'), 'the refusal in the log');
        const answer = await chatCall(gateway.url);
        const kept = await modelIds();
        const audited = await adminGet(gateway.url, '/admin/audit?action=config.reload');
        const exit = await gateway.stop();

        expect(kept).toEqual(['chat-model', 'second-model']);
        // Only the reload that changed something is a change in the audit log.
        expect(audited.body.data).toEqual([expect.objectContaining({ actor: 'SIGHUP', item_kind: 'config', item_id: path })]);
        expect(gateway.output).toContain('models[0].lines[0]: unknown upstream \\"line-x\\"');
        expect(answer.status).toBe(200);
        expect(exit).toEqual({ code: 0, signal: null });
      },
      START_PATIENCE_MS + EXIT_PATIENCE_MS,
    );

    it(
      'keeps the usage record and the spend of a first run when a second run starts on the same DATA_DIR',
      async () => {
        const folder = await migratedDataDir();
        const first = await launchGood(folder);
        await first.waitUntilReady();
        const answer = await chatCall(first.url);
        expect(answer.status).toBe(200);
        await first.stop();

        const second = await launchGood(folder);
        await second.waitUntilReady();
        const usage = await adminGet(second.url, `/admin/usage/${answer.requestId}`);
        const owner = await adminGet(second.url, '/admin/owners/team-a');
        const again = await chatCall(second.url);
        await second.stop();

        expect(usage.status).toBe(200);
        expect(usage.body).toMatchObject({ request_id: answer.requestId, model: 'chat-model', status: 200, written: true });
        expect(usage.body.cost).toBeGreaterThan(0);
        expect(owner.body.spent).toBe(usage.body.cost);
        expect(again.status).toBe(200);
      },
      2 * (START_PATIENCE_MS + EXIT_PATIENCE_MS),
    );

    it(
      'finishes a stream in flight when SIGTERM arrives and keeps its usage record',
      async () => {
        const slow = new UpstreamSimulator({ apiKey: VENDOR_KEY, chunkDelayMs: 40 });
        const slowUrl = await slow.start();
        try {
          const folder = await migratedDataDir();
          const path = await configFile('slow.yaml', goodConfigYaml(slowUrl));
          const env = { GATEWAY_CONFIG: path, DATA_DIR: folder, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY };
          const first = await launch(env);
          await first.waitUntilReady();

          const stream = await openStream(first.url);
          first.child.kill('SIGTERM');
          const text = await stream.rest();
          await first.waitForExit();

          const second = await launch(env);
          await second.waitUntilReady();
          const usage = await adminGet(second.url, `/admin/usage/${stream.requestId}`);
          await second.stop();

          expect(stream.status).toBe(200);
          expect(text).toContain('data: [DONE]');
          expect(usage.status).toBe(200);
          expect(usage.body).toMatchObject({ request_id: stream.requestId, stream: true, status: 200, written: true });
        } finally {
          await slow.stop();
        }
      },
      2 * (START_PATIENCE_MS + EXIT_PATIENCE_MS),
    );
    describe('on SIGTERM with calls in flight', () => {
      let slow: UpstreamSimulator;
      let slowUrl: string;

      beforeAll(async () => {
        slow = new UpstreamSimulator({ apiKey: VENDOR_KEY, chunkDelayMs: 40 });
        slowUrl = await slow.start();
      });

      afterAll(async () => {
        await slow?.stop();
      });

      beforeEach(() => slow.reset());

      async function launchSlow(folder: string): Promise<GatewayProcess> {
        const path = await configFile('slow-shutdown.yaml', goodConfigYaml(slowUrl));
        return launch({ GATEWAY_CONFIG: path, DATA_DIR: folder, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY });
      }

      it(
        'stops accepting at once, lets every call in flight finish, writes one record per call and exits 0',
        async () => {
          const folder = await migratedDataDir();
          const gateway = await launchSlow(folder);
          await gateway.waitUntilReady();
          const warmUp = await chatCall(gateway.url);
          const streams = await Promise.all([1, 2, 3, 4].map(() => openStream(gateway.url)));
          // Two JSON calls whose upstream answers take 1.5 s, at the upstream when the signal comes.
          slow.failNext('/v1/chat/completions', { kind: 'delay', ms: 1_500 }, 2);
          const plain = [chatCall(gateway.url), chatCall(gateway.url)];
          await until(() => slow.requests.length === 1 + 4 + 2, 'both JSON calls to reach the upstream');

          gateway.child.kill('SIGTERM');
          await until(() => connectionRefused(gateway.url), 'the port to refuse connections while calls are in flight');
          const unfinishedWhenRefused = streams.filter((stream) => !stream.finished).length;
          const texts = await Promise.all(streams.map((stream) => stream.rest()));
          const answers = await Promise.all(plain);
          const exit = await gateway.waitForExit();
          const records = await storedRecords(folder);

          expect(unfinishedWhenRefused).toBeGreaterThan(0);
          for (const text of texts) expect(text).toContain('data: [DONE]');
          expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
          expect(exit).toEqual({ code: 0, signal: null });
          // Done when the last call ended, not at the drain deadline (30 s by default).
          expect(gateway.output).not.toContain('drain deadline');
          const expected = [warmUp.requestId, ...streams.map((stream) => stream.requestId), ...answers.map((answer) => answer.requestId)];
          expect(records.map((record) => record.request_id).sort()).toEqual(expected.sort());
          expect(records.every((record) => record.status === 200)).toBe(true);
        },
        START_PATIENCE_MS + EXIT_PATIENCE_MS,
      );

      it(
        "closes a client's spare connection (opened, nothing sent) instead of draining until the deadline for it",
        async () => {
          const folder = await migratedDataDir();
          const path = await configFile('spare-connection.yaml', goodConfigYaml(slowUrl));
          const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: folder, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY, SHUTDOWN_DRAIN_MS: '20000' });
          await gateway.waitUntilReady();
          await chatCall(gateway.url);
          // Load balancers and HTTP clients keep connections open ahead of need; Node's
          // closeIdleConnections leaves one that never carried a request.
          const { hostname, port } = new URL(gateway.url);
          const spare = connect(Number(port), hostname);
          await new Promise((resolve) => spare.once('connect', resolve));
          const spareClosed = new Promise((resolve) => spare.once('close', resolve));

          gateway.child.kill('SIGTERM');
          const exit = await gateway.waitForExit();
          await spareClosed;

          expect(exit).toEqual({ code: 0, signal: null });
          // Done once the spare connection was closed, not at the 20 s deadline.
          expect(gateway.output).not.toContain('drain deadline');
          expect(spare.bytesRead).toBe(0);
        },
        START_PATIENCE_MS + EXIT_PATIENCE_MS,
      );

      it(
        'cuts a stream still running at SHUTDOWN_DRAIN_MS, records it as 499 with what it used, and exits 0',
        async () => {
          const folder = await migratedDataDir();
          const crawling = new UpstreamSimulator({ apiKey: VENDOR_KEY, chunkDelayMs: 2_000 });
          const crawlingUrl = await crawling.start();
          try {
            const path = await configFile('crawling.yaml', goodConfigYaml(crawlingUrl));
            const gateway = await launch({ GATEWAY_CONFIG: path, DATA_DIR: folder, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY, SHUTDOWN_DRAIN_MS: '300' });
            await gateway.waitUntilReady();
            const stream = await openStream(gateway.url);

            gateway.child.kill('SIGTERM');
            const text = await stream.rest();
            const exit = await gateway.waitForExit();
            const records = await storedRecords(folder);

            expect(text).not.toContain('data: [DONE]');
            expect(exit).toEqual({ code: 0, signal: null });
            expect(gateway.output).toContain('drain deadline of 300 ms reached');
            expect(records).toEqual([expect.objectContaining({ request_id: stream.requestId, status: 499, error_code: 'client_closed', stream: true })]);
          } finally {
            await crawling.stop();
          }
        },
        START_PATIENCE_MS + EXIT_PATIENCE_MS,
      );
    });
  });

  // Real PostgreSQL only: the embedded engine belongs to one process by design.
  if (process.env.TEST_DATABASE_URL) {
    describe('two processes starting together on one real PostgreSQL', () => {
      let simulator: UpstreamSimulator;
      let simulatorUrl: string;
      let database: TestDatabase;

      beforeAll(async () => {
        simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
        simulatorUrl = await simulator.start();
        database = await createTestDatabase();
      });

      afterAll(async () => {
        await simulator?.stop();
        await database?.drop();
      });

      it(
        'both become ready, the migrations are applied once, and both serve calls',
        async () => {
          const path = await configFile('postgres.yaml', goodConfigYaml(simulatorUrl));
          const env = { GATEWAY_CONFIG: path, DATABASE_URL: database.settings.url, ADMIN_TOKEN, STARTUP_LINE_KEY: VENDOR_KEY };
          const pair = await Promise.all([launch(env), launch(env)]);

          await Promise.all(pair.map((gateway) => gateway.waitUntilReady()));
          const answers = await Promise.all(pair.map((gateway) => chatCall(gateway.url)));
          // Exit codes are the business of the SIGTERM test above; here both must just be gone.
          await Promise.all(pair.map((gateway) => gateway.stop()));

          expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
          const client = new Client({ connectionString: database.settings.url });
          await client.connect();
          try {
            const migrations = await client.query('SELECT name FROM migrations');
            const keys = await client.query('SELECT count(*)::int AS count FROM api_key');
            const records = await client.query('SELECT count(*)::int AS count FROM usage_record');
            expect(migrations.rows.map((row) => row.name).sort()).toEqual(MIGRATIONS.map((migration) => migration.name).sort());
            expect(keys.rows[0].count).toBe(1);
            expect(records.rows[0].count).toBe(2);
          } finally {
            await client.end();
          }
        },
        START_PATIENCE_MS + EXIT_PATIENCE_MS + 30_000,
      );
    });
  }
});
