import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { runCommandLine } from '../src/admin/admin-command-line';
import { createGatewayApp } from '../src/app.factory';
import { loadGatewayConfig } from '../src/config/config.loader';
import { DatabaseSettings, databaseSettingsFromEnv } from '../src/config/settings/database.settings';
import { openDataSource } from '../src/database/data-source';
import { defaultSettings } from '../src/config/gateway-options';
import { UsageWriter } from '../src/metering/usage-writer.service';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { Answer, ADMIN_AUTH, chatCall, httpCall, ISO_INSTANT, sha256Of, UUID } from './support/admin-kit';
import { ADMIN_TOKEN_FOR_TESTS } from './support/gateway-harness';
import { standardConfigYaml, VENDOR_KEY } from './support/test-config';
import { COMPILE_CACHE_ENV } from './support/gateway-process';
import { createTestDatabase, TestDatabase } from './support/test-database';

/**
 * The admin command line on a database of its own: the embedded one in a fresh DATA_DIR, or with
 * TEST_DATABASE_URL (npm run test:pg) a fresh PostgreSQL database through DATABASE_URL. The
 * commands run as `runCommandLine`, the whole program but its process, in this process on one
 * open database; the built script (`node dist/scripts/admin.js`, what `npm run admin` runs)
 * runs in its own process for each exit status, and as the package's bin and the Docker image
 * start it. Then a gateway on that same database serves the keys the command line made and
 * writes usage records, and once it has stopped the command's usage look-ups print what the
 * admin API answered for them.
 */

const ROOT = join(__dirname, '..');
const SCRIPT = join(ROOT, 'dist', 'scripts', 'admin.js');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
const DAY_MS = 86_400_000;

/** What the gateway saw while it ran, for the look-ups to name. */
interface Seen {
  requestId: string;
  /** The `next` of the first page of the filtered list. */
  next: string;
  yesterday: string;
  tomorrow: string;
}

/** Usage look-ups as an admin API path and as the command's arguments: both must answer alike. */
const USAGE_LOOKUPS: Array<[string, (seen: Seen) => { path: string; args: string[] }]> = [
  ['a record by its request id', (seen) => ({ path: `/admin/usage/${seen.requestId}`, args: ['usage', 'show', seen.requestId] })],
  ['every record', () => ({ path: '/admin/usage', args: ['usage', 'list'] })],
  [
    'a filtered page',
    () => ({ path: '/admin/usage?owner=cli-team&status=2xx&limit=1', args: ['usage', 'list', '--owner', 'cli-team', '--status', '2xx', '--limit', '1'] }),
  ],
  [
    'the next page',
    (seen) => ({
      path: `/admin/usage?owner=cli-team&status=2xx&limit=1&after=${encodeURIComponent(seen.next)}`,
      args: ['usage', 'list', '--owner', 'cli-team', '--status', '2xx', '--limit', '1', '--after', seen.next],
    }),
  ],
  [
    'records of a model in a time range',
    (seen) => ({
      path: `/admin/usage?model=chat-model&from=${seen.yesterday}&to=${seen.tomorrow}T00:00:00Z`,
      args: ['usage', 'list', '--model', 'chat-model', '--from', seen.yesterday, '--to', `${seen.tomorrow}T00:00:00Z`],
    }),
  ],
  [
    'daily totals by model',
    (seen) => ({
      path: `/admin/usage/daily?from=${seen.yesterday}&to=${seen.tomorrow}`,
      args: ['usage', 'daily', '--from', seen.yesterday, '--to', seen.tomorrow],
    }),
  ],
  [
    "one owner's daily totals by owner",
    (seen) => ({
      path: `/admin/usage/daily?from=${seen.yesterday}&to=${seen.tomorrow}&owner=cli-member&group_by=owner`,
      args: ['usage', 'daily', '--from', seen.yesterday, '--to', seen.tomorrow, '--owner', 'cli-member', '--group-by', 'owner'],
    }),
  ],
  ['an unknown request id', () => ({ path: '/admin/usage/no-such-request', args: ['usage', 'show', 'no-such-request'] })],
  [
    'days that end before they start',
    (seen) => ({
      path: `/admin/usage/daily?from=${seen.tomorrow}&to=${seen.yesterday}`,
      args: ['usage', 'daily', '--from', seen.tomorrow, '--to', seen.yesterday],
    }),
  ],
];

/** How the command is started: an executable, its first arguments, the working directory. */
interface Start {
  file: string;
  prefix: string[];
  cwd: string;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON. */
  json: any;
}

function jsonOf(stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
}

describe('admin command line', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  /** Where the command line finds the database, as the environment gives it. */
  let databaseEnv: Record<string, string>;
  let configPath: string;

  /** Runs the built script in its own process, as `node dist/scripts/admin.js` unless `start` names another way. */
  function script(args: string[], extraEnv: Record<string, string> = {}, start: Start = { file: process.execPath, prefix: [SCRIPT], cwd: ROOT }): Promise<Run> {
    // Only what the script needs: no DATABASE_URL, DATA_DIR or GATEWAY_CONFIG leaks in from the test run.
    const env = { PATH: process.env.PATH ?? '', ...COMPILE_CACHE_ENV, ...databaseEnv, ...extraEnv };
    return new Promise((resolve) => {
      execFile(start.file, [...start.prefix, ...args], { cwd: start.cwd, env, timeout: 30_000 }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr, json: jsonOf(stdout) });
      });
    });
  }

  /** The database the in-process commands share, opened once per group of them. */
  let held: DataSource | undefined;

  async function holdDatabase(): Promise<void> {
    held = await openDataSource(databaseSettingsFromEnv(databaseEnv));
  }

  async function releaseDatabase(): Promise<void> {
    await held?.destroy();
    held = undefined;
  }

  /** Runs the command in this process on the held database, with the environment the script would get. */
  async function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    let stdout = '';
    let stderr = '';
    const output = { out: (text: string) => (stdout += text), err: (text: string) => (stderr += text) };
    const database = held;
    if (!database) throw new Error('no database held for in-process commands');
    const code = await runCommandLine(args, { ...databaseEnv, ...extraEnv }, output, async () => ({ dataSource: database, release: async () => {} }));
    return { code, stdout, stderr, json: jsonOf(stdout) };
  }

  /** Runs a command that must succeed and returns its JSON output. */
  async function ok(args: string[], extraEnv: Record<string, string> = {}): Promise<any> {
    const run = await cli(args, extraEnv);
    expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
    return run.json;
  }

  const made: Record<'team' | 'member' | 'doomed' | 'checked', { id: string; key: string }> = {} as never;
  /** The admin API's answers to USAGE_LOOKUPS, by label, taken while the gateway ran. */
  const apiAnswers = new Map<string, Answer>();
  let seen: Seen;

  beforeAll(async () => {
    if (!existsSync(SCRIPT)) throw new Error(`${SCRIPT} is missing: run \`npm run build\` first (npm test does).`);
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-admin-cli-'));
    if (process.env.TEST_DATABASE_URL) {
      database = await createTestDatabase();
      databaseEnv = { DATABASE_URL: database.settings.url! };
    } else {
      databaseEnv = { DATA_DIR: join(dataDir, 'db') };
    }
    configPath = join(dataDir, 'gateway.yaml');
    await writeFile(configPath, standardConfigYaml('http://127.0.0.1:1'));
  });

  afterAll(async () => {
    await database?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  describe('commands', () => {
    beforeAll(holdDatabase);
    afterAll(releaseDatabase);

    it('creates owners and prints them as JSON, the budget converted exactly', async () => {
      const team = await ok(['owners', 'create', '--id', 'cli-team', '--kind', 'project', '--budget', '12.345678901']);
      const member = await ok(['owners', 'create', '--id=cli-member', '--kind=member']);

      expect(team).toEqual({
        id: 'cli-team',
        kind: 'project',
        budget: 12.345678901,
        spent: 0,
        reserved: 0,
        budget_nano: '12345678901',
        spent_nano: '0',
        reserved_nano: '0',
        limits: null,
        budget_period: null,
        budget_timezone: null,
        alerts: [],
        current_period: null,
        source: 'admin',
        created_at: expect.stringMatching(ISO_INSTANT),
        updated_at: expect.stringMatching(ISO_INSTANT),
      });
      expect(member).toMatchObject({ id: 'cli-member', kind: 'member', budget: null, source: 'admin' });
    });

    it('refuses an owner id that exists already with exit 1 and a message', async () => {
      const run = await cli(['owners', 'create', '--id', 'cli-team', '--kind', 'member']);

      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^admin: .*cli-team.* exists already/);
    });

    it('lists owners by id and shows one', async () => {
      const list = await ok(['owners', 'list']);
      const shown = await ok(['owners', 'show', 'cli-team']);

      expect(list.map((owner: { id: string }) => owner.id)).toEqual(['cli-member', 'cli-team']);
      expect(shown).toEqual(list[1]);
    });

    it('changes a budget, and "unlimited" removes it', async () => {
      expect(await ok(['owners', 'set-budget', 'cli-team', '--budget', '20.5'])).toMatchObject({ id: 'cli-team', budget: 20.5 });
      expect(await ok(['owners', 'set-budget', 'cli-team', '--budget', 'unlimited'])).toMatchObject({ id: 'cli-team', budget: null });
    });

    it('creates keys, printing each key once', async () => {
      const team = await ok(['keys', 'create', '--owner', 'cli-team', '--models', 'chat-model,embed-model', '--expires', '2027-01-01']);
      const member = await ok(['keys', 'create', '--owner', 'cli-member', '--models', '*', '--expires', '2027-01-01']);
      const doomed = await ok(['keys', 'create', '--owner', 'cli-team', '--models', 'chat-model']);

      expect(team).toEqual({
        id: expect.stringMatching(UUID),
        prefix: team.key.slice(0, 8),
        owner: 'cli-team',
        models: ['chat-model', 'embed-model'],
        enabled: true,
        expires_at: '2027-01-01T00:00:00.000Z',
        limits: null,
        budget: null,
        budget_nano: null,
        spend: { period: null, start: null, resets_at: null, spent: 0, reserved: 0, spent_nano: '0', reserved_nano: '0' },
        source: 'admin',
        created_at: expect.stringMatching(ISO_INSTANT),
        updated_at: expect.stringMatching(ISO_INSTANT),
        key: expect.stringMatching(/^gk-[A-Za-z0-9_-]{32}$/),
      });
      expect(member).toMatchObject({ owner: 'cli-member', models: ['*'] });
      Object.assign(made, { team, member, doomed });
    });

    it('checks the models against the catalog when GATEWAY_CONFIG names the configuration file', async () => {
      const withConfig = { GATEWAY_CONFIG: configPath, TEST_VENDOR_KEY: VENDOR_KEY };

      const refused = await cli(['keys', 'create', '--owner', 'cli-team', '--models', 'chat-model,no-such-model'], withConfig);
      const checked = await ok(['keys', 'create', '--owner', 'cli-member', '--models', 'messages-model'], withConfig);

      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe('admin: models: no-such-model not in the catalog\n');
      expect(checked).toMatchObject({ owner: 'cli-member', models: ['messages-model'] });
      made.checked = checked;
    });

    it('lists keys with their prefix only, of every owner or of one', async () => {
      const all = await cli(['keys', 'list']);
      const team = await ok(['keys', 'list', '--owner', 'cli-team']);

      expect(all.code).toBe(0);
      expect(all.json.map((key: { id: string }) => key.id).sort()).toEqual(
        Object.values(made)
          .map((key) => key.id)
          .sort(),
      );
      for (const key of all.json) expect(Object.keys(key)).not.toContain('key');
      for (const key of Object.values(made)) expect(all.stdout).not.toContain(key.key);
      expect(team.map((key: { id: string }) => key.id)).toEqual([made.team.id, made.doomed.id]);
    });

    it('shows a key without the key itself', async () => {
      const { key, ...shown } = made.team as Record<string, unknown>;

      expect(await ok(['keys', 'show', made.team.id])).toEqual(shown);
      expect(key).toEqual(expect.any(String));
    });

    it('disables and enables a key', async () => {
      expect(await ok(['keys', 'disable', made.team.id])).toMatchObject({ id: made.team.id, enabled: false });
      expect(await ok(['keys', 'enable', made.team.id])).toMatchObject({ id: made.team.id, enabled: true });
      expect(await ok(['keys', 'disable', made.checked.id])).toMatchObject({ id: made.checked.id, enabled: false });
    });

    it("renews a member's key alone and a project's keys together", async () => {
      expect(await ok(['keys', 'renew', made.member.id, '--expires', '2030-01-01T12:00:00Z'])).toMatchObject({ expires_at: '2030-01-01T12:00:00.000Z' });

      const projectKeys = await ok(['owners', 'renew-keys', 'cli-team', '--expires', 'never']);

      expect(projectKeys.map((key: { id: string; expires_at: string | null }) => [key.id, key.expires_at])).toEqual([
        [made.team.id, null],
        [made.doomed.id, null],
      ]);
    });

    it('deletes a key, printing it', async () => {
      const { key, ...shown } = made.doomed as Record<string, unknown>;

      const deleted = await ok(['keys', 'delete', made.doomed.id]);

      expect(deleted).toMatchObject({ ...shown, expires_at: null, updated_at: expect.any(String) });
      expect(JSON.stringify(deleted)).not.toContain(key);
    });

    it.each([
      ['an unknown owner', ['keys', 'create', '--owner', 'nobody', '--models', '*'], 'nobody'],
      ['a renewal of a project key alone', ['keys', 'renew', '{team}', '--expires', '2031-01-01'], 'renew-keys'],
      ['renew-keys of a member', ['owners', 'renew-keys', 'cli-member', '--expires', '2031-01-01'], 'member'],
      ['an impossible date', ['keys', 'renew', '{member}', '--expires', '2031-02-30'], 'expires'],
    ])('exits 1 with a message for %s', async (_label, args, message) => {
      const run = await cli(args.map((arg) => arg.replace('{team}', made.team.id).replace('{member}', made.member.id)));

      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^admin: /);
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toContain('Usage:');
    });
  });

  describe('the built script, in its own process', () => {
    // The database is free: the in-process commands let go of it.
    let listedInProcess: unknown;

    it('prints its usage and exits 2 without a command, 0 when asked for help', async () => {
      const bare = await script([]);
      const help = await script(['--help']);

      expect(bare.code).toBe(2);
      expect(bare.stdout).toContain('Usage: gateway-admin <command>');
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('keys create --owner <id>');
    });

    it('creates an owner, printing it as JSON, and exits 1 with a message when the id exists already', async () => {
      const created = await script(['owners', 'create', '--id', 'cli-script', '--kind', 'member']);
      const again = await script(['owners', 'create', '--id', 'cli-script', '--kind', 'member']);

      expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
      expect(created.stdout).toBe(`${JSON.stringify(created.json, null, 2)}\n`);
      expect(created.json).toMatchObject({ id: 'cli-script', kind: 'member', source: 'admin' });
      expect(again.code).toBe(1);
      expect(again.stdout).toBe('');
      expect(again.stderr).toMatch(/^admin: .*"cli-script" exists already\.\n$/);
    });

    it.each([
      ['an unknown command', ['keys', 'explode'], 'unknown command: keys explode'],
      ['a missing option', ['owners', 'create', '--id', 'cli-x'], '--kind is required'],
      // More wrong uses, without a process each: src/admin/admin-cli.spec.ts.
    ])('exits 2 with the usage text for %s', async (_label, args, message) => {
      const run = await script(args);

      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`admin: ${message}`);
      expect(run.stderr).toContain('Usage: gateway-admin');
    });

    it('lists the keys as the in-process command lists them', async () => {
      await holdDatabase();
      try {
        listedInProcess = await ok(['keys', 'list']);
      } finally {
        await releaseDatabase();
      }
      const listed = await script(['keys', 'list']);

      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
      expect(listedInProcess).toHaveLength(3);
      expect(listed.json).toEqual(listedInProcess);
    });

    it("runs from a checkout as package.json's bin and admin script name it", async () => {
      const bin = PACKAGE.bin['gateway-admin'];
      const asNamed: Start = { file: process.execPath, prefix: [bin], cwd: ROOT };

      expect(PACKAGE.scripts.admin).toBe(`node ${bin}`);
      expect(await script(['help'], {}, asNamed)).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: gateway-admin') });
      expect((await script(['keys', 'list'], {}, asNamed)).json).toEqual(listedInProcess);
    });

    it('runs as the Docker image installs it: a link named gateway-admin on the PATH, from another directory', async () => {
      const bin = PACKAGE.bin['gateway-admin'];
      // The image's /app: the built files, the package's modules; its /usr/local/bin: the link.
      const app = join(dataDir, 'app');
      const binDirectory = join(dataDir, 'bin');
      await cp(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
      await symlink(join(ROOT, 'node_modules'), join(app, 'node_modules'));
      await mkdir(binDirectory);
      await symlink(join(app, bin), join(binDirectory, 'gateway-admin'));
      await chmod(join(app, bin), 0o755);
      const onPath = { PATH: `${binDirectory}:${dirname(process.execPath)}` };

      expect(readFileSync(join(ROOT, bin), 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
      const listed = await script(['keys', 'list'], onPath, { file: 'gateway-admin', prefix: [], cwd: dataDir });
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
      expect(listed.json).toEqual(listedInProcess);
    });
  });

  describe('a gateway on the database the command line wrote', () => {
    let simulator: UpstreamSimulator;
    let app: NestFastifyApplication;
    let url: string;

    beforeAll(async () => {
      simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
      const simulatorUrl = await simulator.start();
      // The command line has exited: the embedded database is free for one process again.
      const settings: DatabaseSettings = database ? database.settings : { dataDir: databaseEnv.DATA_DIR };
      const defaults = defaultSettings();
      app = await createGatewayApp(
        {
          config: loadGatewayConfig(standardConfigYaml(simulatorUrl), { TEST_VENDOR_KEY: VENDOR_KEY }),
          database: settings,
          adminToken: ADMIN_TOKEN_FOR_TESTS,
          ...defaults,
          usageWriter: { ...defaults.usageWriter, flushIntervalMs: 20 },
          logLevel: 'silent',
        },
        { logger: false },
      );
      await app.listen(0, '127.0.0.1');
      url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    });

    afterAll(async () => {
      await app?.close();
      await simulator?.stop();
    });

    it('finds only SHA-256 digests of the keys in the database, never a key', async () => {
      const rows = await app.get(DataSource).query('SELECT * FROM api_key');

      const stored = JSON.stringify(rows);
      for (const key of Object.values(made)) expect(stored).not.toContain(key.key);
      const team = rows.find((row: { id: string }) => row.id === made.team.id);
      expect(team.key_sha256.trim()).toBe(sha256Of(made.team.key));
      expect(team.display_prefix).toBe(made.team.key.slice(0, 8));
    });

    it('accepts the keys the command line made, and bills their owners', async () => {
      const team = await chatCall(url, made.team.key);
      const member = await chatCall(url, made.member.key);

      expect([team.status, member.status]).toEqual([200, 200]);
      await app.get(UsageWriter).flush();
      expect((await httpCall(url, 'GET', `/admin/usage/${team.requestId}`)).body).toMatchObject({ key_id: made.team.id, owner_id: 'cli-team' });
      expect((await httpCall(url, 'GET', '/admin/owners/cli-member', undefined, ADMIN_AUTH)).body.spent).toBeGreaterThan(0);
    });

    it('refuses the key the command line disabled and the one it deleted', async () => {
      const disabled = await httpCall(
        url,
        'POST',
        '/v1/messages',
        { model: 'messages-model', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] },
        { authorization: `Bearer ${made.checked.key}` },
      );
      const deleted = await chatCall(url, made.doomed.key);

      expect(disabled.status).toBe(401);
      expect(disabled.text).toContain('disabled');
      expect(deleted.status).toBe(401);
    });

    it("logs the command line's changes in the audit log under the user who ran them", async () => {
      const log = await httpCall(url, 'GET', '/admin/audit?item_kind=owner&item_id=cli-team');

      expect(log.body.data.map((entry: { action: string }) => entry.action)).toEqual(['owner.renew_keys', 'owner.budget', 'owner.budget', 'owner.create']);
      for (const entry of log.body.data) expect(entry.actor).toBe(`command line (${userInfo().username})`);
      expect(log.body.data[1]).toMatchObject({ before: { budget: 20.5 }, after: { budget: null } });
    });

    it('shows what the command line made through the admin API, as source admin', async () => {
      const keys = (await httpCall(url, 'GET', '/admin/keys?owner=cli-team')).body.data;

      expect(keys).toEqual([expect.objectContaining({ id: made.team.id, source: 'admin', enabled: true, expires_at: null })]);
      expect((await httpCall(url, 'GET', '/admin/owners/cli-team')).body).toMatchObject({ source: 'admin', budget: null });
    });

    it('answers the usage look-ups through the admin API (the command must print the same, below)', async () => {
      const second = await chatCall(url, made.team.key);
      expect(second.status).toBe(200);
      await app.get(UsageWriter).flush();
      const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
      const firstPage = await httpCall(url, 'GET', '/admin/usage?owner=cli-team&status=2xx&limit=1');
      seen = { requestId: second.requestId, next: firstPage.body.next, yesterday: day(-1), tomorrow: day(1) };

      for (const [label, lookup] of USAGE_LOOKUPS) apiAnswers.set(label, await httpCall(url, 'GET', lookup(seen).path));

      // Records to compare, not empty answers.
      expect(seen.next).toEqual(expect.any(String));
      expect(apiAnswers.get('a record by its request id')).toMatchObject({ status: 200, body: { request_id: second.requestId, written: true } });
      expect(apiAnswers.get('every record')!.body.data.length).toBeGreaterThanOrEqual(3);
      expect(apiAnswers.get('the next page')!.body.data).toHaveLength(1);
      expect(apiAnswers.get('records of a model in a time range')!.body.data.length).toBeGreaterThanOrEqual(3);
      expect(apiAnswers.get('daily totals by model')!.body.data).toEqual([expect.objectContaining({ model: 'chat-model', calls: expect.any(Number) })]);
      expect(apiAnswers.get("one owner's daily totals by owner")!.body.data).toEqual([expect.objectContaining({ owner: 'cli-member', calls: 1 })]);
      expect(apiAnswers.get('an unknown request id')!.status).toBe(404);
      expect(apiAnswers.get('days that end before they start')!.status).toBe(400);
    });
  });

  describe('usage look-ups of the command line on the records the gateway wrote', () => {
    // The gateway has stopped: the embedded database opens in one process at a time.
    beforeAll(holdDatabase);
    afterAll(releaseDatabase);

    it.each(USAGE_LOOKUPS)('prints what the admin API answered for %s', async (label, lookup) => {
      const answer = apiAnswers.get(label)!;

      const run = await cli(lookup(seen).args);

      if (answer.status === 200) {
        expect({ code: run.code, stderr: run.stderr, json: run.json }).toEqual({ code: 0, stderr: '', json: answer.body });
      } else {
        expect({ code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ code: 1, stdout: '', stderr: `admin: ${answer.body.error.message}\n` });
      }
    });
  });

  describe('keys on the catalog a gateway stored', () => {
    // The gateway above stored the file's models in the database's catalog.
    beforeAll(holdDatabase);
    afterAll(releaseDatabase);

    it('adds, changes and deletes a model of the stored catalog, each change in the audit log', async () => {
      const item = { id: 'cli-model', upstream_model: 'vendor-chat-2025-01', interfaces: ['chat_completions'], lines: ['line-a'], prices: { input_tokens: 1 } };

      const created = await ok(['models', 'create', '--json', JSON.stringify(item)]);
      const stale = await cli(['models', 'update', 'cli-model', '--version', '7', '--json', '{"max_tokens":10}']);
      // A weighted line with its own model name, and retries: items of the same JSON form as the admin API's.
      const lines = [{ id: 'line-a', weight: 2, upstream_model: 'deployment-a' }];
      const changed = await ok([
        'models',
        'update',
        'cli-model',
        '--version',
        '1',
        '--json',
        JSON.stringify({ max_tokens: 10, lines, retry: { attempts: 1 } }),
      ]);
      const listed = await ok(['models', 'list']);
      const deleted = await ok(['models', 'delete', 'cli-model', '--version', '2']);
      const log = await ok(['audit', '--item-kind', 'model', '--item-id', 'cli-model']);

      expect(created).toMatchObject({ id: 'cli-model', source: 'admin', version: 1, prices: { input_tokens: '1' } });
      expect(stale).toMatchObject({ code: 1, stdout: '' });
      expect(stale.stderr).toContain('is at version 1, not 7');
      expect(changed).toMatchObject({ max_tokens: 10, version: 2, lines, retry: { attempts: 1 } });
      expect(listed.map((model: { id: string }) => model.id)).toContain('cli-model');
      expect(deleted).toMatchObject({ id: 'cli-model', version: 2 });
      expect(log.data.map((entry: { action: string; actor: string }) => [entry.action, entry.actor])).toEqual([
        ['model.delete', `command line (${userInfo().username})`],
        ['model.update', `command line (${userInfo().username})`],
        ['model.create', `command line (${userInfo().username})`],
      ]);
    });

    it("adds a line whose key is a reference to a variable of the replicas', not of the command's environment", async () => {
      const line = { id: 'cli-line', base_url: 'https://api.vendor.example', api_key: '${CLI_LINE_KEY}' };

      const created = await ok(['upstreams', 'create', '--json', JSON.stringify(line)]);
      const literal = await cli(['upstreams', 'create', '--json', JSON.stringify({ ...line, id: 'cli-literal', api_key: 'sk-literal-key' })]);
      const deleted = await ok(['upstreams', 'delete', 'cli-line']);

      expect(created).toMatchObject({ id: 'cli-line', api_key: { set: true, last4: null, reference: '${CLI_LINE_KEY}' }, source: 'admin' });
      expect(literal).toMatchObject({ code: 1, stdout: '' });
      expect(literal.stderr).toContain('GATEWAY_SECRET_KEY');
      expect(deleted).toMatchObject({ id: 'cli-line' });
    });

    it('checks the models of a new key against the stored catalog, without GATEWAY_CONFIG', async () => {
      const accepted = await cli(['keys', 'create', '--owner', 'cli-member', '--models', 'messages-model']);
      const refused = await cli(['keys', 'create', '--owner', 'cli-member', '--models', 'messages-model,no-such-model']);

      expect({ code: accepted.code, stderr: accepted.stderr }).toEqual({ code: 0, stderr: '' });
      expect(refused).toMatchObject({ code: 1, stdout: '', stderr: 'admin: models: no-such-model not in the catalog\n' });
    });
  });

  describe('the spend audit', () => {
    /** A sheet of 2 and 8 per 1M input and output tokens, and a record billed at it: 1,000 and 500 tokens cost 0.006. */
    const SHEET = 'c11a0d170000000000000000000000aa';
    const startedAt = new Date();

    it('usage verify exits 0 when the spend adds up, and 1 printing the differences after a record cost was edited', async () => {
      await holdDatabase();
      try {
        await ok(['owners', 'create', '--id', 'cli-audit', '--kind', 'member']);
        await held!.query(`INSERT INTO price_sheet (id, pricing) VALUES ($1, $2::jsonb)`, [
          SHEET,
          JSON.stringify({ prices: { input_tokens: '2', output_tokens: '8' }, price_tiers: [] }),
        ]);
        // As the usage writer writes a call: the record (the trigger adds it to the daily totals) and the owner's spend.
        await held!.query(
          `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, usage, cost_nano, started_at, duration_ms, price_sheet)
           VALUES ('cli-audit-call', gen_random_uuid(), 'cli-audit', 'audit-model', 'chat_completions', 200, $1::jsonb, 6000000, $2, 12, $3)`,
          [JSON.stringify({ input_tokens: 1000, output_tokens: 500 }), startedAt, SHEET],
        );
        await held!.query(`UPDATE quota_owner SET spent_nano = spent_nano + 6000000 WHERE id = 'cli-audit'`);
      } finally {
        await releaseDatabase();
      }
      const clean = await script(['usage', 'verify']);
      await holdDatabase();
      try {
        await held!.query(`UPDATE usage_record SET cost_nano = 6000100 WHERE request_id = 'cli-audit-call'`);
      } finally {
        await releaseDatabase();
      }
      const drifted = await script(['usage', 'verify', '--owner', 'cli-audit']);

      expect({ code: clean.code, stderr: clean.stderr }).toEqual({ code: 0, stderr: '' });
      expect(clean.json).toMatchObject({ owner: null, from: null, to: null, records_without_prices: 0, differences: [] });
      expect(clean.json.records_checked).toBeGreaterThanOrEqual(1);
      expect({ code: drifted.code, stderr: drifted.stderr }).toEqual({ code: 1, stderr: '' });
      expect(drifted.stdout).toBe(`${JSON.stringify(drifted.json, null, 2)}\n`);
      expect(drifted.json).toEqual({
        owner: 'cli-audit',
        from: null,
        to: null,
        records_checked: 1,
        records_without_prices: 0,
        owners_checked: 1,
        unlisted_differences: 0,
        differences: [
          {
            kind: 'record_cost',
            request_id: 'cli-audit-call',
            owner_id: 'cli-audit',
            model: 'audit-model',
            started_at: startedAt.toISOString(),
            cost_nano: '6000100',
            recomputed_nano: '6000000',
            difference_nano: '100',
          },
          {
            kind: 'daily_total',
            owner_id: 'cli-audit',
            day: startedAt.toISOString().slice(0, 10),
            model: 'audit-model',
            total_nano: '6000000',
            records_nano: '6000100',
          },
        ],
      });
    });
  });
});

describe('the Docker image', () => {
  // No Docker engine here: the Dockerfile is read, and the test above runs the command the way the link starts it.
  it("links package.json's bin onto the PATH as gateway-admin, executable, before dropping root", () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')).split('\n');
    const bin = PACKAGE.bin['gateway-admin'].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const lineOf = (pattern: RegExp) => runtime.findIndex((line) => pattern.test(line));

    const lines = {
      workdir: lineOf(/^WORKDIR \/app$/),
      copied: lineOf(/^COPY --from=build .*\/app\/dist \.\/dist$/),
      linked: lineOf(new RegExp(`^RUN .*\\bln -sf? /app/${bin} /usr/local/bin/gateway-admin( |$)`)),
      executable: lineOf(new RegExp(`^RUN .*\\bchmod (\\+x|a\\+x|755) /app/${bin}( |$)`)),
      user: lineOf(/^USER node$/),
    };

    expect(lines.workdir).toBeGreaterThan(0);
    expect(lines.copied).toBeGreaterThan(lines.workdir);
    expect(lines.linked).toBeGreaterThan(lines.copied);
    expect(lines.executable).toBeGreaterThan(lines.copied);
    expect(lines.user).toBeGreaterThan(Math.max(lines.linked, lines.executable));
  });
});
