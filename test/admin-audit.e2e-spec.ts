import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultSettings } from '../src/config/gateway-options';
import { ADMIN_AUTH, Answer, httpCall, ISO_INSTANT, Method } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { standardConfigYaml, VENDOR_KEY } from './support/test-config';

/**
 * The audit log: every admin change (owners, budgets, keys, lines, models, reloads) with when,
 * who (the name of the admin token used), what, and the item before and after, secrets masked.
 */

const ALICE = { authorization: 'Bearer alice-admin-token' };
const CI = { authorization: 'Bearer ci-admin-token' };
const KEY_VARIABLE = 'AUDIT_TEST_VENDOR_KEY';

describe('the audit log of admin changes', () => {
  let gateway: GatewayHarness;
  let folder: string;
  /** The key the API made, shown once in its answer: it must be in no audit entry. */
  let madeKey: string;
  let keyId: string;

  beforeAll(async () => {
    process.env[KEY_VARIABLE] = VENDOR_KEY;
    process.env.TEST_VENDOR_KEY = VENDOR_KEY;
    folder = mkdtempSync(join(tmpdir(), 'audit-'));
    const configFile = join(folder, 'gateway.yaml');
    gateway = await GatewayHarness.start({
      settings: {
        adminTokens: [
          { name: 'alice', token: 'alice-admin-token' },
          { name: 'ci', token: 'ci-admin-token' },
        ],
        catalog: { ...defaultSettings().catalog, configFile },
      },
    });
    writeFileSync(configFile, standardConfigYaml(gateway.simulatorUrl));

    /** Each change through the admin API, by the token named; every one must succeed. */
    const change = async (method: Method, path: string, body: unknown, who: Record<string, string>): Promise<Answer> => {
      const answer = await httpCall(gateway.url, method, path, body, who);
      expect({ path, status: answer.status }).toEqual({ path, status: answer.status < 300 ? answer.status : 'a success' });
      return answer;
    };
    await change('POST', '/admin/owners', { id: 'audited-team', kind: 'project', budget: 10 }, ALICE);
    await change('PATCH', '/admin/owners/audited-team', { budget: 20 }, ALICE);
    const key = await change('POST', '/admin/keys', { owner: 'audited-team', models: ['*'] }, CI);
    madeKey = key.body.key;
    keyId = key.body.id;
    await change('POST', `/admin/keys/${keyId}/disable`, undefined, CI);
    await change('DELETE', `/admin/keys/${keyId}`, undefined, ALICE);
    await change('POST', '/admin/upstreams', { id: 'line-audited', base_url: gateway.simulatorUrl, api_key: `\${${KEY_VARIABLE}}` }, ALICE);
    const model = { id: 'audited-model', upstream_model: 'm', interfaces: ['chat_completions'], lines: ['line-audited'], prices: { input_tokens: 1 } };
    await change('POST', '/admin/models', model, ALICE);
    await change('PATCH', '/admin/models/audited-model', { version: 1, prices: { input_tokens: 2 } }, CI);
    await change('DELETE', '/admin/models/audited-model', undefined, CI);
    await change('POST', '/admin/reload', undefined, ADMIN_AUTH);
  });

  afterAll(async () => {
    await gateway?.stop();
    delete process.env[KEY_VARIABLE];
    delete process.env.TEST_VENDOR_KEY;
    rmSync(folder, { recursive: true, force: true });
  });

  it('lists every change newest first, with who made it, what, and the item before and after', async () => {
    const log = await httpCall(gateway.url, 'GET', '/admin/audit');

    expect(log.status).toBe(200);
    expect(log.body.data.map((entry: { actor: string; action: string; item_id: string }) => [entry.actor, entry.action, entry.item_id])).toEqual([
      ['admin', 'config.reload', expect.stringMatching(/gateway\.yaml$/)],
      ['ci', 'model.delete', 'audited-model'],
      ['ci', 'model.update', 'audited-model'],
      ['alice', 'model.create', 'audited-model'],
      ['alice', 'upstream.create', 'line-audited'],
      ['alice', 'key.delete', keyId],
      ['ci', 'key.disable', keyId],
      ['ci', 'key.create', keyId],
      ['alice', 'owner.budget', 'audited-team'],
      ['alice', 'owner.create', 'audited-team'],
    ]);
    const budget = log.body.data[8];
    expect(budget).toEqual({
      id: expect.stringMatching(/^\d+$/),
      at: expect.stringMatching(ISO_INSTANT),
      actor: 'alice',
      action: 'owner.budget',
      item_kind: 'owner',
      item_id: 'audited-team',
      before: expect.objectContaining({ id: 'audited-team', budget: 10 }),
      after: expect.objectContaining({ id: 'audited-team', budget: 20 }),
    });
    expect(log.body.data[2]).toMatchObject({ before: { prices: { input_tokens: '1' }, version: 1 }, after: { prices: { input_tokens: '2' }, version: 2 } });
    expect(log.body.data[6]).toMatchObject({ before: { enabled: true }, after: { enabled: false } });
    expect(log.body.data[5]).toMatchObject({ before: { id: keyId }, after: null });
    expect(log.body.data[0].after).toEqual({ upstreams: 4, models: 7, owners: 3, keys: expect.any(Number) });
  });

  it('keeps vendor keys masked and gateway keys out, hash included', async () => {
    const log = await httpCall(gateway.url, 'GET', '/admin/audit');
    const [stored] = await gateway.dataSource.query(`SELECT string_agg(before::text || ' ' || coalesce(after::text, ''), ' ') AS text FROM admin_audit`);

    expect(log.body.data.find((entry: { action: string }) => entry.action === 'upstream.create').after.api_key).toEqual({
      set: true,
      last4: VENDOR_KEY.slice(-4),
      reference: `\${${KEY_VARIABLE}}`,
    });
    expect(madeKey).toMatch(/^gk-/);
    for (const text of [log.text, stored.text ?? '']) {
      expect(text).not.toContain(madeKey);
      expect(text).not.toContain(VENDOR_KEY);
      expect(text).not.toMatch(/gk-[A-Za-z0-9_-]{32}/);
      expect(text).not.toMatch(/[0-9a-f]{64}/);
    }
  });

  it.each([
    ['one actor', '?actor=ci', ['model.delete', 'model.update', 'key.disable', 'key.create']],
    ['one kind of item', '?item_kind=key', ['key.delete', 'key.disable', 'key.create']],
    ['one item', '?item_kind=owner&item_id=audited-team', ['owner.budget', 'owner.create']],
    ['one action', '?action=upstream.create', ['upstream.create']],
  ])('filters by %s', async (_label, query, actions) => {
    const log = await httpCall(gateway.url, 'GET', `/admin/audit${query}`);

    expect(log.body.data.map((entry: { action: string }) => entry.action)).toEqual(actions);
  });

  it('pages with limit and next, and refuses a bad filter with 400 naming it', async () => {
    const first = await httpCall(gateway.url, 'GET', '/admin/audit?limit=4');
    const second = await httpCall(gateway.url, 'GET', `/admin/audit?limit=4&after=${first.body.next}`);
    const whole = await httpCall(gateway.url, 'GET', '/admin/audit');
    const bad = await httpCall(gateway.url, 'GET', '/admin/audit?item_kind=car');

    expect(first.body.data).toHaveLength(4);
    expect([...first.body.data, ...second.body.data]).toEqual(whole.body.data.slice(0, 8));
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('item_kind');
  });
});
