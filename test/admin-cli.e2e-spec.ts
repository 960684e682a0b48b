import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createGatewayApp } from '../src/app.factory';
import { loadGatewayConfig } from '../src/config/config.loader';
import type { DatabaseSettings } from '../src/database/data-source';
import { defaultSettings } from '../src/gateway-options';
import { UsageWriter } from '../src/metering/usage-writer.service';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { ADMIN_AUTH, chatCall, httpCall, ISO_INSTANT, sha256Of, UUID } from './support/admin-kit';
import { ADMIN_TOKEN_FOR_TESTS } from './support/gateway-harness';
import { standardConfigYaml, VENDOR_KEY } from './support/test-config';
import { createTestDatabase, TestDatabase } from './support/test-database';

/**
 * The admin command line (issue 7) as an operator runs it: the built script
 * (`node dist/scripts/admin.js`, what `npm run admin` runs) in its own process, on a database
 * of its own: the embedded one in a fresh DATA_DIR, or with TEST_DATABASE_URL (npm run test:pg) a
 * fresh PostgreSQL database through DATABASE_URL. Then a gateway on that same database serves
 * the keys the command line made.
 */

const ROOT = join(__dirname, '..');
const SCRIPT = join(ROOT, 'dist', 'scripts', 'admin.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON. */
  json: any;
}

describe('admin command line', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  /** Where the command line finds the database, as the environment gives it. */
  let databaseEnv: Record<string, string>;
  let configPath: string;

  function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    // Only what the script needs: no DATABASE_URL, DATA_DIR or GATEWAY_CONFIG leaks in from the test run.
    const env = { PATH: process.env.PATH ?? '', ...databaseEnv, ...extraEnv };
    return new Promise((resolve) => {
      execFile(process.execPath, [SCRIPT, ...args], { cwd: ROOT, env, timeout: 30_000 }, (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code, stdout, stderr, json });
      });
    });
  }

  /** Runs a command that must succeed and returns its JSON output. */
  async function ok(args: string[], extraEnv: Record<string, string> = {}): Promise<any> {
    const run = await cli(args, extraEnv);
    expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
    return run.json;
  }

  const made: Record<'team' | 'member' | 'doomed' | 'checked', { id: string; key: string }> = {} as never;

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
    it('prints its usage and exits 2 without a command, 0 when asked for help', async () => {
      const bare = await cli([]);
      const help = await cli(['--help']);

      expect(bare.code).toBe(2);
      expect(bare.stdout).toContain('Usage: npm run admin -- <command>');
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('keys create --owner <id>');
    });

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
      expect(all.json.map((key: { id: string }) => key.id).sort()).toEqual(Object.values(made).map((key) => key.id).sort());
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
      ['an unknown command', ['keys', 'explode'], 'unknown command: keys explode'],
      ['a missing option', ['owners', 'create', '--id', 'cli-x'], '--kind is required'],
      // More wrong uses, without a process each: src/admin/admin-cli.spec.ts.
    ])('exits 2 with the usage text for %s', async (_label, args, message) => {
      const run = await cli(args);

      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`admin: ${message}`);
      expect(run.stderr).toContain('Usage: npm run admin');
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

    it('shows what the command line made through the admin API, as source admin', async () => {
      const keys = (await httpCall(url, 'GET', '/admin/keys?owner=cli-team')).body.data;

      expect(keys).toEqual([expect.objectContaining({ id: made.team.id, source: 'admin', enabled: true, expires_at: null })]);
      expect((await httpCall(url, 'GET', '/admin/owners/cli-team')).body).toMatchObject({ source: 'admin', budget: null });
    });
  });
});
