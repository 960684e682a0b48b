import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';
import { until } from './support/until';
import { ADMIN_AUTH, Answer, chatCall, httpCall, ISO_INSTANT, keyIdOf, Method, sha256Of, UUID } from './support/admin-kit';

/**
 * The admin API's owners and keys: shapes and exact values, the admin token,
 * validation naming the field, and what the data plane makes of a key the API changed, on the
 * same replica, on another replica, and after a restart that re-applies the configuration file.
 * Usage listing and daily totals: admin-usage.e2e-spec.ts.
 */

function expectError(answer: Answer, status: number, code: string | null, ...mentions: string[]): void {
  expect({ status: answer.status, body: answer.body }).toEqual({
    status,
    body: { error: { message: expect.any(String), type: expect.any(String), code } },
  });
  for (const mention of mentions) expect(answer.body.error.message).toContain(mention);
}

async function countRows(gateway: GatewayHarness, table: 'quota_owner' | 'api_key'): Promise<number> {
  const [row] = await gateway.dataSource.query(`SELECT count(*)::int AS n FROM ${table}`);
  return row.n;
}

/** Every admin route, with a body that would change something if it got through. */
function adminRoutes(keyId: string): Array<[Method, string, unknown?]> {
  return [
    ['POST', '/admin/owners', { id: 'sneaky', kind: 'project' }],
    ['GET', '/admin/owners'],
    ['GET', '/admin/owners/team-a'],
    ['PATCH', '/admin/owners/team-a', { budget: 1 }],
    ['POST', '/admin/owners/team-a/renew-keys', { expires_at: '2020-01-01' }],
    ['POST', '/admin/keys', { owner: 'team-a', models: ['*'] }],
    ['GET', '/admin/keys'],
    ['GET', `/admin/keys/${keyId}`],
    ['POST', `/admin/keys/${keyId}/disable`],
    ['POST', `/admin/keys/${keyId}/enable`],
    ['POST', `/admin/keys/${keyId}/renew`, { expires_at: '2020-01-01' }],
    ['DELETE', `/admin/keys/${keyId}`],
    ['GET', '/admin/usage'],
    ['GET', '/admin/usage/daily?from=2026-01-01&to=2026-01-31'],
    ['GET', '/admin/usage/verify'],
    ['GET', '/admin/usage/some-request-id'],
  ];
}

describe('admin API', () => {
  let gateway: GatewayHarness;
  const admin = (method: Method, path: string, body?: unknown) => httpCall(gateway.url, method, path, body);

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  describe('admin token', () => {
    it.each([
      ['no token', {}],
      ['a wrong token', { authorization: 'Bearer not-the-admin-token' }],
      ['a gateway key', { authorization: `Bearer ${KEYS.all}` }],
    ])('refuses every owner, key and usage route with %s (401) and changes nothing', async (_label, headers) => {
      const allKeyId = await keyIdOf(gateway.dataSource, KEYS.all);

      for (const [method, path, body] of adminRoutes(allKeyId)) {
        const answer = await httpCall(gateway.url, method, path, body, headers as Record<string, string>);

        expect({ method, path, status: answer.status, code: answer.body?.error?.code }).toEqual({ method, path, status: 401, code: 'invalid_api_key' });
      }
      expectError(await admin('GET', '/admin/owners/sneaky'), 404, 'not_found');
      expect((await admin('GET', '/admin/owners/team-a')).body).toMatchObject({ budget: 100 });
      expect((await admin('GET', `/admin/keys/${allKeyId}`)).body).toMatchObject({ enabled: true, expires_at: null });
      expect((await chatCall(gateway.url, KEYS.all)).status).toBe(200);
    });

    it('checks the token before the body, so a bad body without a token is still 401', async () => {
      const answer = await httpCall(gateway.url, 'POST', '/admin/owners', '{"id":', {});

      expectError(answer, 401, 'invalid_api_key');
    });
  });

  describe('owners', () => {
    it('creates a project owner with a decimal-string budget, stored exactly in nano-units', async () => {
      const answer = await admin('POST', '/admin/owners', { id: 'acme', kind: 'project', budget: '12.345678901' });

      expect(answer.status).toBe(201);
      expect(answer.body).toEqual({
        id: 'acme',
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
      const [row] = await gateway.dataSource.query(`SELECT budget_nano::text AS budget FROM quota_owner WHERE id = 'acme'`);
      expect(row.budget).toBe('12345678901');
    });

    it.each([
      [0.1, '100000000'],
      [1e-9, '1'],
      ['1e3', '1000000000000'],
      ['123456789.123456789', '123456789123456789'],
      [0, '0'],
      ['9223372036.854775807', '9223372036854775807'],
    ])('converts the budget %p through its decimal text to %s nano-units', async (budget, nano) => {
      const id = `exact-${String(nano)}`;
      expect((await admin('POST', '/admin/owners', { id, kind: 'project', budget })).status).toBe(201);

      const [row] = await gateway.dataSource.query(`SELECT budget_nano::text AS budget FROM quota_owner WHERE id = $1`, [id]);
      expect(row.budget).toBe(nano);
    });

    it('reaches an owner whose id has the longest length allowed, 128 characters', async () => {
      const id = `long-${'x'.repeat(123)}`;
      expect((await admin('POST', '/admin/owners', { id, kind: 'project' })).status).toBe(201);

      const shown = await admin('GET', `/admin/owners/${id}`);
      expect({ status: shown.status, id: shown.body.id }).toEqual({ status: 200, id });
      expect((await admin('PATCH', `/admin/owners/${id}`, { budget: 2 })).body).toMatchObject({ id, budget: 2 });
    });

    it('shows amounts beyond a double exactly in the nano-unit strings', async () => {
      await admin('POST', '/admin/owners', { id: 'precise', kind: 'project', budget: '123456789.123456789' });

      expect((await admin('GET', '/admin/owners/precise')).body).toMatchObject({ budget_nano: '123456789123456789', spent_nano: '0' });
    });

    it('creates a member owner without a budget as unlimited', async () => {
      const answer = await admin('POST', '/admin/owners', { id: 'mel', kind: 'member' });

      expect(answer.status).toBe(201);
      expect(answer.body).toMatchObject({ id: 'mel', kind: 'member', budget: null, source: 'admin' });
    });

    it('refuses an owner id that exists already with 409 and leaves the first one as it was', async () => {
      const answer = await admin('POST', '/admin/owners', { id: 'acme', kind: 'member', budget: 1 });

      expectError(answer, 409, 'conflict', 'acme');
      expect((await admin('GET', '/admin/owners/acme')).body).toMatchObject({ kind: 'project', budget: 12.345678901 });
    });

    it('refuses the id of an owner of the configuration file with 409 too', async () => {
      expectError(await admin('POST', '/admin/owners', { id: 'team-a', kind: 'project' }), 409, 'conflict');
    });

    it('shows an owner as it was created', async () => {
      const answer = await admin('GET', '/admin/owners/acme');

      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ id: 'acme', kind: 'project', budget: 12.345678901, spent: 0, reserved: 0, source: 'admin' });
    });

    it('answers an unknown owner with 404 on show, change and renew-keys', async () => {
      expectError(await admin('GET', '/admin/owners/nobody'), 404, 'not_found', 'nobody');
      expectError(await admin('PATCH', '/admin/owners/nobody', { budget: 1 }), 404, 'not_found', 'nobody');
      expectError(await admin('POST', '/admin/owners/nobody/renew-keys', { expires_at: '2027-01-01' }), 404, 'not_found', 'nobody');
    });

    it('lists every owner by id, page by page, until next is null', async () => {
      const stored: string[] = (await gateway.dataSource.query('SELECT id FROM quota_owner')).map((row: { id: string }) => row.id);
      const seen: string[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await admin('GET', `/admin/owners?limit=2${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
        expect(answer.status).toBe(200);
        expect(answer.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...answer.body.data.map((owner: { id: string }) => owner.id));
        after = answer.body.next;
        pages++;
      } while (after !== null && pages < 100);

      expect(stored.length).toBeGreaterThan(4);
      expect(seen).toEqual([...stored].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(pages).toBe(Math.ceil(stored.length / 2));
      const whole = await admin('GET', '/admin/owners');
      expect(whole.body.next).toBeNull();
      expect(whole.body.data.map((owner: { id: string }) => owner.id)).toEqual(seen);
    });

    it('changes a budget, keeping spent and reserved, and null makes it unlimited', async () => {
      await gateway.dataSource.query(`UPDATE quota_owner SET spent_nano = 1234, reserved_nano = 56 WHERE id = 'acme'`);

      const changed = await admin('PATCH', '/admin/owners/acme', { budget: '7.5' });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ id: 'acme', budget: 7.5, spent: 0.000001234, reserved: 0.000000056 });
      const [row] = await gateway.dataSource.query(
        `SELECT budget_nano::text AS budget, spent_nano::text AS spent, reserved_nano::text AS reserved FROM quota_owner WHERE id = 'acme'`,
      );
      expect(row).toEqual({ budget: '7500000000', spent: '1234', reserved: '56' });

      const unlimited = await admin('PATCH', '/admin/owners/acme', { budget: null });
      expect(unlimited.status).toBe(200);
      expect(unlimited.body).toMatchObject({ budget: null, spent: 0.000001234 });
      expect((await admin('GET', '/admin/owners/acme')).body.budget).toBeNull();
    });

    it("renews every key of a project together, and only that project's keys", async () => {
      await admin('POST', '/admin/owners', { id: 'renewing', kind: 'project' });
      const first = await admin('POST', '/admin/keys', { owner: 'renewing', models: ['*'], expires_at: '2027-01-01' });
      const second = await admin('POST', '/admin/keys', { owner: 'renewing', models: ['chat-model'] });
      const bystander = await admin('POST', '/admin/keys', { owner: 'acme', models: ['*'], expires_at: '2027-01-01' });

      const renewed = await admin('POST', '/admin/owners/renewing/renew-keys', { expires_at: '2028-06-30' });

      expect(renewed.status).toBe(200);
      expect(renewed.body.data).toEqual([
        expect.objectContaining({ id: first.body.id, owner: 'renewing', expires_at: '2028-06-30T00:00:00.000Z' }),
        expect.objectContaining({ id: second.body.id, owner: 'renewing', expires_at: '2028-06-30T00:00:00.000Z' }),
      ]);
      expect(JSON.stringify(renewed.body)).not.toContain(first.body.key);
      expect((await admin('GET', `/admin/keys/${bystander.body.id}`)).body.expires_at).toBe('2027-01-01T00:00:00.000Z');

      const never = await admin('POST', '/admin/owners/renewing/renew-keys', { expires_at: null });
      expect(never.body.data.map((key: { expires_at: string | null }) => key.expires_at)).toEqual([null, null]);
    });

    it('renews nothing for a project without keys', async () => {
      await admin('POST', '/admin/owners', { id: 'acme-empty', kind: 'project' });

      expect(await admin('POST', '/admin/owners/acme-empty/renew-keys', { expires_at: '2028-01-01' })).toMatchObject({ status: 200, body: { data: [] } });
    });

    it("refuses renew-keys for a member with 400: a member's keys are renewed one by one", async () => {
      expectError(await admin('POST', '/admin/owners/mel/renew-keys', { expires_at: '2028-01-01' }), 400, null, 'member');
    });

    it.each<[string, Method, string, unknown, string]>([
      ['an unknown field', 'POST', '/admin/owners', { id: 'v1', kind: 'project', colour: 'red' }, 'colour'],
      ['a missing id', 'POST', '/admin/owners', { kind: 'project' }, 'id: is required'],
      ['an id with a space', 'POST', '/admin/owners', { id: 'v 2', kind: 'project' }, 'id:'],
      ['an id of 129 characters', 'POST', '/admin/owners', { id: 'v'.repeat(129), kind: 'project' }, 'id:'],
      ['an id that is a number', 'POST', '/admin/owners', { id: 42, kind: 'project' }, 'id:'],
      ['a bad kind', 'POST', '/admin/owners', { id: 'v3', kind: 'team' }, 'kind: must be one of project, member'],
      ['a missing kind', 'POST', '/admin/owners', { id: 'v4' }, 'kind: is required'],
      ['a negative budget', 'POST', '/admin/owners', { id: 'v5', kind: 'project', budget: -1 }, 'budget'],
      ['a negative budget string', 'POST', '/admin/owners', { id: 'v6', kind: 'project', budget: '-0.5' }, 'budget'],
      ['a budget that is not a number', 'POST', '/admin/owners', { id: 'v7', kind: 'project', budget: 'lots' }, 'budget'],
      ['a budget that is a boolean', 'POST', '/admin/owners', { id: 'v8', kind: 'project', budget: true }, 'budget'],
      ['a budget that is an object', 'POST', '/admin/owners', { id: 'v9', kind: 'project', budget: {} }, 'budget'],
      ['a budget finer than a nano-unit', 'POST', '/admin/owners', { id: 'v10', kind: 'project', budget: '0.0000000001' }, 'budget'],
      ['a budget over the largest storable amount', 'POST', '/admin/owners', { id: 'v11', kind: 'project', budget: '9223372036.854775808' }, 'budget'],
      ['a budget of 1e20 units', 'POST', '/admin/owners', { id: 'v12', kind: 'project', budget: 1e20 }, 'budget'],
      ['a change to a budget over the largest storable amount', 'PATCH', '/admin/owners/acme', { budget: '10000000000' }, 'budget'],
      ['a change that changes nothing', 'PATCH', '/admin/owners/acme', {}, 'body: give budget, budget_period, budget_timezone, alerts or limits'],
      ['a change to a non-numeric budget', 'PATCH', '/admin/owners/acme', { budget: 'abc' }, 'budget'],
      ['a change to a negative budget', 'PATCH', '/admin/owners/acme', { budget: -3 }, 'budget'],
      ['a change of kind', 'PATCH', '/admin/owners/acme', { budget: 1, kind: 'member' }, 'kind'],
      ['renew-keys without expires_at', 'POST', '/admin/owners/renewing/renew-keys', {}, 'expires_at: is required'],
      ['renew-keys with words for a date', 'POST', '/admin/owners/renewing/renew-keys', { expires_at: 'next year' }, 'expires_at'],
      ['renew-keys with a time without zone', 'POST', '/admin/owners/renewing/renew-keys', { expires_at: '2027-01-01T00:00:00' }, 'expires_at'],
      ['renew-keys with February 30', 'POST', '/admin/owners/renewing/renew-keys', { expires_at: '2027-02-30' }, 'expires_at'],
      ['renew-keys with a number', 'POST', '/admin/owners/renewing/renew-keys', { expires_at: 20270101 }, 'expires_at'],
      ['a list limit of 0', 'GET', '/admin/owners?limit=0', undefined, 'limit'],
      ['a list limit over 1000', 'GET', '/admin/owners?limit=1001', undefined, 'limit'],
      ['a list limit that is not a number', 'GET', '/admin/owners?limit=ten', undefined, 'limit'],
      ['a fractional list limit', 'GET', '/admin/owners?limit=2.5', undefined, 'limit'],
      ['an unknown query parameter', 'GET', '/admin/owners?colour=red', undefined, 'colour'],
    ])('refuses %s with 400 naming the field', async (_label, method, path, body, mention) => {
      const owners = await countRows(gateway, 'quota_owner');
      const before = (await admin('GET', '/admin/owners/acme')).body;

      expectError(await admin(method, path, body), 400, null, mention);
      expect(await countRows(gateway, 'quota_owner')).toBe(owners);
      expect((await admin('GET', '/admin/owners/acme')).body).toEqual(before);
    });

    it.each([
      ['broken JSON', '{"id":'],
      ['a JSON array', '[{"id":"v11","kind":"project"}]'],
      ['JSON null', 'null'],
      ['a JSON string', '"v12"'],
      ['an empty body', ''],
    ])('refuses %s as a body with 400', async (_label, body) => {
      const answer = await httpCall(gateway.url, 'POST', '/admin/owners', body, { ...ADMIN_AUTH, 'content-type': 'application/json' });

      expectError(answer, 400, null, 'JSON');
    });
  });

  describe('keys', () => {
    let created: Answer;

    beforeAll(async () => {
      await admin('POST', '/admin/owners', { id: 'keyholder', kind: 'project' });
      await admin('POST', '/admin/owners', { id: 'keymember', kind: 'member' });
      created = await admin('POST', '/admin/keys', { owner: 'keyholder', models: ['chat-model', 'embed-model', 'chat-model'], expires_at: '2027-01-01' });
    });

    it('creates a key: the answer shows the key once, the database keeps only its SHA-256 and prefix', async () => {
      expect(created.status).toBe(201);
      const key: string = created.body.key;
      expect(key).toMatch(/^gk-[A-Za-z0-9_-]{32}$/);
      expect(created.body).toEqual({
        id: expect.stringMatching(UUID),
        prefix: key.slice(0, 8),
        owner: 'keyholder',
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
        key,
      });
      const rows = await gateway.dataSource.query('SELECT * FROM api_key WHERE id = $1', [created.body.id]);
      expect(rows).toHaveLength(1);
      expect(rows[0].key_sha256.trim()).toBe(sha256Of(key));
      expect(JSON.stringify(rows[0])).not.toContain(key);
    });

    it('makes a different key every time', async () => {
      const again = await admin('POST', '/admin/keys', { owner: 'keyholder', models: ['chat-model'] });

      expect(again.body.key).not.toBe(created.body.key);
      expect(again.body.id).not.toBe(created.body.id);
    });

    it('keeps "*" alone when it is given with other models, and converts a zoned expiry to UTC', async () => {
      const answer = await admin('POST', '/admin/keys', { owner: 'keyholder', models: ['chat-model', '*'], expires_at: '2027-01-01T12:00:00+02:00' });

      expect(answer.status).toBe(201);
      expect(answer.body).toMatchObject({ models: ['*'], expires_at: '2027-01-01T10:00:00.000Z' });
    });

    it('shows a key without the key itself', async () => {
      const answer = await admin('GET', `/admin/keys/${created.body.id}`);
      const { key, ...shown } = created.body;

      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ ...shown, last_used_at: null });
      expect(answer.text).not.toContain(key);
    });

    it('shows when a key was last used: the start of its newest recorded call', async () => {
      const used = (await admin('POST', '/admin/keys', { owner: 'keyholder', models: ['chat-model'] })).body;
      const first = await chatCall(gateway.url, used.key);
      const second = await chatCall(gateway.url, used.key);
      const newest = (await gateway.usageRecord(second.requestId))!.startedAt.toISOString();
      expect([first.status, second.status]).toEqual([200, 200]);

      const shown = await admin('GET', `/admin/keys/${used.id}`);
      const listed = await admin('GET', '/admin/keys?owner=keyholder&limit=1000');

      expect(shown.body.last_used_at).toBe(newest);
      expect(listed.body.data.find((item: { id: string }) => item.id === used.id).last_used_at).toBe(newest);
      expect(listed.body.data.find((item: { id: string }) => item.id === created.body.id).last_used_at).toBeNull();
    });

    it("lists an owner's keys in creation order, page by page, prefix only", async () => {
      await admin('POST', '/admin/owners', { id: 'lister', kind: 'project' });
      const made: Answer[] = [];
      for (let index = 0; index < 3; index++) made.push(await admin('POST', '/admin/keys', { owner: 'lister', models: ['*'] }));

      const first = await admin('GET', '/admin/keys?owner=lister&limit=2');
      const second = await admin('GET', `/admin/keys?owner=lister&limit=2&after=${encodeURIComponent(first.body.next)}`);

      expect(first.body.data.map((key: { id: string }) => key.id)).toEqual([made[0].body.id, made[1].body.id]);
      expect(first.body.next).toEqual(expect.any(String));
      expect(second.body).toEqual({ data: [expect.objectContaining({ id: made[2].body.id, prefix: made[2].body.key.slice(0, 8) })], next: null });
      for (const answer of [first, second]) {
        for (const key of answer.body.data) expect(key).not.toHaveProperty('key');
        for (const secret of made) expect(answer.text).not.toContain(secret.body.key);
      }
    });

    it('lists every key without an owner filter, each once, until next is null', async () => {
      const seen: string[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const answer: Answer = await admin('GET', `/admin/keys?limit=3${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
        expect(answer.status).toBe(200);
        seen.push(...answer.body.data.map((key: { id: string }) => key.id));
        after = answer.body.next;
        pages++;
      } while (after !== null && pages < 100);

      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe(await countRows(gateway, 'api_key'));
    });

    it('answers a key list of an unknown owner with 404', async () => {
      expectError(await admin('GET', '/admin/keys?owner=nobody'), 404, 'not_found', 'nobody');
    });

    it('disables and enables a key, answering the key as it is now', async () => {
      const disabled = await admin('POST', `/admin/keys/${created.body.id}/disable`);
      expect(disabled).toMatchObject({ status: 200, body: { id: created.body.id, enabled: false } });
      expect((await admin('GET', `/admin/keys/${created.body.id}`)).body.enabled).toBe(false);

      const enabled = await admin('POST', `/admin/keys/${created.body.id}/enable`);
      expect(enabled).toMatchObject({ status: 200, body: { id: created.body.id, enabled: true } });
      expect((await admin('GET', `/admin/keys/${created.body.id}`)).body.enabled).toBe(true);
    });

    it("renews a member's key; null means it never expires", async () => {
      const key = await admin('POST', '/admin/keys', { owner: 'keymember', models: ['*'], expires_at: '2027-01-01' });

      const renewed = await admin('POST', `/admin/keys/${key.body.id}/renew`, { expires_at: '2029-03-04T05:06:07Z' });
      expect(renewed).toMatchObject({ status: 200, body: { id: key.body.id, expires_at: '2029-03-04T05:06:07.000Z' } });

      const never = await admin('POST', `/admin/keys/${key.body.id}/renew`, { expires_at: null });
      expect(never).toMatchObject({ status: 200, body: { expires_at: null } });
    });

    it("refuses to renew a project's key alone with 400 pointing at renew-keys", async () => {
      const answer = await admin('POST', `/admin/keys/${created.body.id}/renew`, { expires_at: '2029-01-01' });

      expectError(answer, 400, null, '/admin/owners/keyholder/renew-keys');
      expect((await admin('GET', `/admin/keys/${created.body.id}`)).body.expires_at).toBe('2027-01-01T00:00:00.000Z');
    });

    it('deletes a key, answering the deleted key; then it is gone', async () => {
      const doomed = await admin('POST', '/admin/keys', { owner: 'keyholder', models: ['*'] });

      const deleted = await admin('DELETE', `/admin/keys/${doomed.body.id}`);

      const { key, ...shown } = doomed.body;
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual(shown);
      expect(deleted.text).not.toContain(key);
      expectError(await admin('GET', `/admin/keys/${doomed.body.id}`), 404, 'not_found');
      expectError(await admin('DELETE', `/admin/keys/${doomed.body.id}`), 404, 'not_found');
    });

    it.each([
      ['an unknown key id', '6f1c1a52-55d1-4c8f-9a43-0b8f3b1a2c3d'],
      ['an id that is not a UUID', 'not-a-key-id'],
    ])('answers %s with 404 on every key route', async (_label, id) => {
      const answers: Array<[string, Answer]> = [
        ['show', await admin('GET', `/admin/keys/${id}`)],
        ['disable', await admin('POST', `/admin/keys/${id}/disable`)],
        ['enable', await admin('POST', `/admin/keys/${id}/enable`)],
        ['renew', await admin('POST', `/admin/keys/${id}/renew`, { expires_at: '2029-01-01' })],
        ['delete', await admin('DELETE', `/admin/keys/${id}`)],
      ];

      for (const [route, answer] of answers) {
        expect({ route, status: answer.status, code: answer.body?.error?.code }).toEqual({ route, status: 404, code: 'not_found' });
      }
    });

    it('answers a key for an unknown owner with 404 naming the owner', async () => {
      expectError(await admin('POST', '/admin/keys', { owner: 'nobody', models: ['*'] }), 404, 'not_found', 'nobody');
    });

    it.each<[string, Method, string, unknown, string]>([
      ['an empty model list', 'POST', '/admin/keys', { owner: 'keyholder', models: [] }, 'models'],
      ['models as a string', 'POST', '/admin/keys', { owner: 'keyholder', models: 'chat-model' }, 'models'],
      ['an empty model id', 'POST', '/admin/keys', { owner: 'keyholder', models: [''] }, 'models'],
      ['a model id that is a number', 'POST', '/admin/keys', { owner: 'keyholder', models: [7] }, 'models'],
      [
        'a model missing from the catalog',
        'POST',
        '/admin/keys',
        { owner: 'keyholder', models: ['chat-model', 'no-such-model'] },
        'models: "no-such-model" not in the catalog',
      ],
      ['an upstream model name', 'POST', '/admin/keys', { owner: 'keyholder', models: ['vendor-chat-2025-01'] }, 'vendor-chat-2025-01'],
      ['a missing owner', 'POST', '/admin/keys', { models: ['*'] }, 'owner: is required'],
      ['missing models', 'POST', '/admin/keys', { owner: 'keyholder' }, 'models: is required'],
      ['an unknown field', 'POST', '/admin/keys', { owner: 'keyholder', models: ['*'], enabled: false }, 'enabled'],
      ['an expiry in words', 'POST', '/admin/keys', { owner: 'keyholder', models: ['*'], expires_at: 'soon' }, 'expires_at'],
      ['an expiry without leading zeros', 'POST', '/admin/keys', { owner: 'keyholder', models: ['*'], expires_at: '2027-1-1' }, 'expires_at'],
      ['an expiry that is a number', 'POST', '/admin/keys', { owner: 'keyholder', models: ['*'], expires_at: 1798761600 }, 'expires_at'],
      ['a renewal without expires_at', 'POST', '/admin/keys/{member}/renew', {}, 'expires_at: is required'],
      ['a renewal with a bad date', 'POST', '/admin/keys/{member}/renew', { expires_at: '2027-13-01' }, 'expires_at'],
      ['a key list cursor it never gave out', 'GET', '/admin/keys?after=garbage', undefined, 'after'],
      [
        'a key list cursor with an impossible date',
        'GET',
        '/admin/keys?after=2026-02-30T00:00:00.000Z_6f1c1a52-55d1-4c8f-9a43-0b8f3b1a2c3d',
        undefined,
        'after',
      ],
      ['an empty owner filter', 'GET', '/admin/keys?owner=', undefined, 'owner'],
      ['a key list limit of 0', 'GET', '/admin/keys?limit=0', undefined, 'limit'],
    ])('refuses %s with 400 naming the field', async (_label, method, path, body, mention) => {
      const member = await admin('POST', '/admin/keys', { owner: 'keymember', models: ['*'], expires_at: '2027-01-01' });
      const keys = await countRows(gateway, 'api_key');

      expectError(await admin(method, path.replace('{member}', member.body.id), body), 400, null, mention);
      expect(await countRows(gateway, 'api_key')).toBe(keys);
      expect((await admin('GET', `/admin/keys/${member.body.id}`)).body.expires_at).toBe('2027-01-01T00:00:00.000Z');
    });
  });

  describe('keys as the data plane sees them', () => {
    let replica: GatewayHarness;

    beforeAll(async () => {
      // A second replica on the same database, with a short key cache so the test need not wait long.
      replica = await GatewayHarness.start({ sharing: gateway, settings: { keyCache: { ttlMs: 300, negativeTtlMs: 100 } } });
      await admin('POST', '/admin/owners', { id: 'plane-project', kind: 'project', budget: 10 });
      await admin('POST', '/admin/owners', { id: 'plane-member', kind: 'member' });
    });

    afterAll(async () => {
      await replica?.stop();
    });

    const newKey = async (owner: string, models: string[] = ['chat-model']) => {
      const answer = await admin('POST', '/admin/keys', { owner, models });
      expect(answer.status).toBe(201);
      return answer.body as { id: string; key: string };
    };
    const statusOn = async (harness: GatewayHarness, key: string) => (await chatCall(harness.url, key)).status;
    const eventually = (harness: GatewayHarness, key: string, status: number, what: string) =>
      until(async () => (await statusOn(harness, key)) === status, what);

    it('lets a new key call at once, on both replicas, and bills its owner', async () => {
      const key = await newKey('plane-project');

      const call = await chatCall(gateway.url, key.key);
      expect(call.status).toBe(200);
      expect(await statusOn(replica, key.key)).toBe(200);
      const record = await gateway.usageRecord(call.requestId);
      expect(record).toMatchObject({ keyId: key.id, ownerId: 'plane-project', status: 200 });
    });

    it('keeps a new key to its models: others give 403 model_not_allowed', async () => {
      const key = await newKey('plane-project', ['embed-model']);

      const answer = await chatCall(gateway.url, key.key);

      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('model_not_allowed');
    });

    it('refuses a disabled key at once on the replica that disabled it, within the key cache TTL on the other', async () => {
      const key = await newKey('plane-project');
      expect(await statusOn(gateway, key.key)).toBe(200);
      expect(await statusOn(replica, key.key)).toBe(200);

      await admin('POST', `/admin/keys/${key.id}/disable`);

      const here = await chatCall(gateway.url, key.key);
      expect(here.status).toBe(401);
      expect(here.body.error).toMatchObject({ code: 'invalid_api_key', message: expect.stringContaining('disabled') });
      await eventually(replica, key.key, 401, 'the other replica to refuse the disabled key');

      await admin('POST', `/admin/keys/${key.id}/enable`);

      expect(await statusOn(gateway, key.key)).toBe(200);
      await eventually(replica, key.key, 200, 'the other replica to accept the enabled key again');
    });

    it("refuses a member's key renewed into the past as expired, and takes it again when renewed", async () => {
      const key = await newKey('plane-member');
      expect(await statusOn(gateway, key.key)).toBe(200);
      expect(await statusOn(replica, key.key)).toBe(200);

      await admin('POST', `/admin/keys/${key.id}/renew`, { expires_at: '2020-01-01' });

      const here = await chatCall(gateway.url, key.key);
      expect(here.status).toBe(401);
      expect(here.body.error).toMatchObject({ code: 'invalid_api_key', message: expect.stringContaining('expired') });
      await eventually(replica, key.key, 401, 'the other replica to refuse the expired key');

      await admin('POST', `/admin/keys/${key.id}/renew`, { expires_at: '2099-01-01' });
      expect(await statusOn(gateway, key.key)).toBe(200);
      await eventually(replica, key.key, 200, 'the other replica to accept the renewed key');
    });

    it('expires and revives every key of a project with renew-keys', async () => {
      const first = await newKey('plane-project');
      const second = await newKey('plane-project');
      for (const key of [first, second]) expect(await statusOn(gateway, key.key)).toBe(200);

      await admin('POST', '/admin/owners/plane-project/renew-keys', { expires_at: '2020-01-01T00:00:00Z' });
      for (const key of [first, second]) {
        const answer = await chatCall(gateway.url, key.key);
        expect(answer.status).toBe(401);
        expect(answer.body.error.message).toContain('expired');
      }

      await admin('POST', '/admin/owners/plane-project/renew-keys', { expires_at: null });
      for (const key of [first, second]) expect(await statusOn(gateway, key.key)).toBe(200);
    });

    it('refuses a deleted key on both replicas; its usage records stay', async () => {
      const key = await newKey('plane-project');
      const call = await chatCall(gateway.url, key.key);
      expect(await statusOn(replica, key.key)).toBe(200);

      await admin('DELETE', `/admin/keys/${key.id}`);

      expect(await statusOn(gateway, key.key)).toBe(401);
      await eventually(replica, key.key, 401, 'the other replica to refuse the deleted key');
      await gateway.flushUsage();
      expect(await admin('GET', `/admin/usage/${call.requestId}`)).toMatchObject({ status: 200, body: { key_id: key.id } });
    });
  });

  describe('owners and keys of the configuration file', () => {
    let restarted: GatewayHarness | undefined;

    afterAll(async () => {
      await restarted?.stop();
    });

    it('shows them with source config, and API-made ones with source admin', async () => {
      const owners = (await admin('GET', '/admin/owners')).body.data as Array<{ id: string; source: string }>;
      const keys = (await admin('GET', '/admin/keys?owner=team-a')).body.data as Array<{ id: string; source: string; prefix: string }>;

      expect(owners.find((owner) => owner.id === 'team-a')).toMatchObject({ source: 'config', kind: 'project', budget: 100 });
      expect(owners.find((owner) => owner.id === 'alice')).toMatchObject({ source: 'config', kind: 'member', budget: null });
      expect(owners.find((owner) => owner.id === 'acme')).toMatchObject({ source: 'admin' });
      expect(keys).toHaveLength(4);
      for (const key of keys) expect(key).toMatchObject({ source: 'config', prefix: KEYS.all.slice(0, 8) });
      const disabledId = await keyIdOf(gateway.dataSource, KEYS.disabled);
      const expiredId = await keyIdOf(gateway.dataSource, KEYS.expired);
      expect(keys.find((key) => key.id === disabledId)).toMatchObject({ enabled: false });
      expect(keys.find((key) => key.id === expiredId)).toMatchObject({ expires_at: '2020-01-01T00:00:00.000Z' });
    });

    it("re-applies the file's values at the next start after the API changed them, keeping what the API made", async () => {
      const chatOnlyId = await keyIdOf(gateway.dataSource, KEYS.chatOnly);
      const memberId = await keyIdOf(gateway.dataSource, KEYS.member);
      const poorId = await keyIdOf(gateway.dataSource, KEYS.poor);
      expect((await chatCall(gateway.url, KEYS.chatOnly)).status).toBe(200);
      await gateway.flushUsage();
      const spent = (await admin('GET', '/admin/owners/team-a')).body.spent;
      expect(spent).toBeGreaterThan(0);

      expect((await admin('PATCH', '/admin/owners/team-a', { budget: 555 })).status).toBe(200);
      expect((await admin('PATCH', '/admin/owners/alice', { budget: 3 })).status).toBe(200);
      expect((await admin('POST', `/admin/keys/${chatOnlyId}/disable`)).status).toBe(200);
      expect((await admin('POST', '/admin/owners/team-poor/renew-keys', { expires_at: '2020-01-01' })).status).toBe(200);
      expect((await admin('DELETE', `/admin/keys/${memberId}`)).status).toBe(200);
      const extra = await admin('POST', '/admin/keys', { owner: 'team-a', models: ['embed-model'], expires_at: '2031-01-01' });
      await admin('POST', `/admin/keys/${extra.body.id}/disable`);
      expect((await chatCall(gateway.url, KEYS.chatOnly)).status).toBe(401);
      expect((await chatCall(gateway.url, KEYS.member)).status).toBe(401);

      restarted = await GatewayHarness.start({ sharing: gateway });
      const again = (method: Method, path: string) => httpCall(restarted!.url, method, path);

      expect((await again('GET', '/admin/owners/team-a')).body).toMatchObject({ budget: 100, spent, source: 'config' });
      expect((await again('GET', '/admin/owners/alice')).body).toMatchObject({ budget: null, source: 'config' });
      expect((await again('GET', `/admin/keys/${chatOnlyId}`)).body).toMatchObject({ enabled: true, models: ['chat-model'], source: 'config' });
      expect((await again('GET', `/admin/keys/${poorId}`)).body).toMatchObject({ expires_at: null, source: 'config' });
      const memberAgain = await keyIdOf(restarted.dataSource, KEYS.member);
      expect((await again('GET', `/admin/keys/${memberAgain}`)).body).toMatchObject({ owner: 'alice', enabled: true, source: 'config' });
      expect((await chatCall(restarted.url, KEYS.chatOnly)).status).toBe(200);
      expect((await chatCall(restarted.url, KEYS.member)).status).toBe(200);
      expect((await again('GET', `/admin/keys/${extra.body.id}`)).body).toMatchObject({
        owner: 'team-a',
        enabled: false,
        expires_at: '2031-01-01T00:00:00.000Z',
        source: 'admin',
      });
      expect((await again('GET', '/admin/owners/acme')).body).toMatchObject({ source: 'admin', budget: null });
    });
  });

  describe('OpenAPI document and Swagger UI', () => {
    const PATHS: Record<string, string[]> = {
      '/admin/owners': ['get', 'post'],
      '/admin/owners/{id}': ['get', 'patch'],
      '/admin/owners/{id}/renew-keys': ['post'],
      '/admin/keys': ['get', 'post'],
      '/admin/keys/{id}': ['delete', 'get', 'patch'],
      '/admin/keys/{id}/disable': ['post'],
      '/admin/keys/{id}/enable': ['post'],
      '/admin/keys/{id}/renew': ['post'],
      '/admin/usage': ['get'],
      '/admin/usage/daily': ['get'],
      '/admin/usage/verify': ['get'],
      '/admin/usage/{requestId}': ['get'],
      '/admin/upstreams': ['get', 'post'],
      '/admin/upstreams/{id}': ['delete', 'get', 'patch', 'put'],
      '/admin/models': ['get', 'post'],
      '/admin/models/{id}': ['delete', 'get', 'patch', 'put'],
      '/admin/reload': ['post'],
      '/admin/audit': ['get'],
      '/admin/alerts': ['get'],
      '/admin/session': ['delete', 'get', 'post'],
      '/admin/usage/minutes': ['get'],
      '/admin/lines': ['get'],
      '/admin/video-tasks': ['get'],
    };
    /** Who may call a route: a bearer token or the console's cookie; the sign-in itself needs neither. */
    const securityOf = (path: string, method: string) => {
      if (path === '/admin/session') return method === 'post' ? undefined : [{ gateway_console: [] }];
      return [{ bearer: [] }, { gateway_console: [] }];
    };

    it('lists every admin route, and nothing else, each behind the bearer token or the console cookie', async () => {
      const answer = await httpCall(gateway.url, 'GET', '/admin/docs/openapi.json', undefined, {});

      expect(answer.status).toBe(200);
      const document = answer.body;
      expect(Object.keys(document.paths).sort()).toEqual(Object.keys(PATHS).sort());
      for (const [path, methods] of Object.entries(PATHS)) {
        expect({ path, methods: Object.keys(document.paths[path]).sort() }).toEqual({ path, methods });
        for (const method of methods) {
          const security = document.paths[path][method].security?.map((scheme: object) => Object.keys(scheme)[0]).sort();
          const expected = securityOf(path, method)
            ?.map((scheme) => Object.keys(scheme)[0])
            .sort();
          expect({ path, method, security }).toEqual({ path, method, security: expected });
        }
      }
      expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(document.components.securitySchemes.gateway_console).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'gateway_console' });
    });

    it('describes the request bodies, query parameters and answers with the DTO schemas', async () => {
      const document = (await httpCall(gateway.url, 'GET', '/admin/docs/openapi.json', undefined, {})).body;
      const bodyOf = (path: string, method: string) => document.paths[path][method].requestBody.content['application/json'].schema.$ref;
      const queryOf = (path: string) =>
        document.paths[path].get.parameters
          .filter((parameter: { in: string }) => parameter.in === 'query')
          .map((parameter: { name: string; required: boolean }) => `${parameter.name}${parameter.required ? '!' : ''}`)
          .sort();

      expect(bodyOf('/admin/owners', 'post')).toBe('#/components/schemas/CreateOwnerBody');
      expect(bodyOf('/admin/owners/{id}', 'patch')).toBe('#/components/schemas/UpdateOwnerBody');
      expect(bodyOf('/admin/owners/{id}/renew-keys', 'post')).toBe('#/components/schemas/RenewBody');
      expect(bodyOf('/admin/keys', 'post')).toBe('#/components/schemas/CreateKeyBody');
      expect(bodyOf('/admin/keys/{id}/renew', 'post')).toBe('#/components/schemas/RenewBody');
      expect(bodyOf('/admin/keys/{id}', 'patch')).toBe('#/components/schemas/UpdateKeyBody');
      expect(bodyOf('/admin/upstreams', 'post')).toBe('#/components/schemas/UpstreamItem');
      expect(bodyOf('/admin/upstreams/{id}', 'put')).toBe('#/components/schemas/UpstreamReplacement');
      expect(bodyOf('/admin/upstreams/{id}', 'patch')).toBe('#/components/schemas/UpstreamReplacement');
      expect(bodyOf('/admin/models', 'post')).toBe('#/components/schemas/ModelItem');
      expect(bodyOf('/admin/models/{id}', 'patch')).toBe('#/components/schemas/ModelFields');
      expect(
        document.components.schemas.UpstreamView.properties.api_key.$ref ?? document.components.schemas.UpstreamView.properties.api_key.allOf?.[0]?.$ref,
      ).toBe('#/components/schemas/VendorKeyView');
      expect(document.components.schemas.ModelItem.required).toEqual(['id', 'upstream_model', 'interfaces', 'lines']);
      expect(queryOf('/admin/audit')).toEqual(['action', 'actor', 'after', 'from', 'item_id', 'item_kind', 'limit', 'to']);
      expect(queryOf('/admin/owners')).toEqual(['after', 'limit']);
      expect(queryOf('/admin/keys')).toEqual(['after', 'limit', 'owner']);
      expect(queryOf('/admin/usage')).toEqual(['after', 'end_user', 'from', 'interface', 'key', 'limit', 'model', 'owner', 'status', 'tag', 'to']);
      expect(queryOf('/admin/usage/daily')).toEqual(['from!', 'group_by', 'model', 'owner', 'to!']);
      expect(queryOf('/admin/usage/verify')).toEqual(['from', 'owner', 'to']);
      expect(document.paths['/admin/usage/verify'].get.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/SpendAuditView');
      expect(document.components.schemas.SpendAuditView.properties.differences.items.oneOf.map((item: { $ref: string }) => item.$ref)).toEqual([
        '#/components/schemas/RecordCostDifference',
        '#/components/schemas/PriceSheetMissingDifference',
        '#/components/schemas/RecordUnreadableDifference',
        '#/components/schemas/OwnerSpentDifference',
        '#/components/schemas/DailyTotalDifference',
      ]);
      expect(document.components.schemas.OwnerSpentDifference.properties.days.items.$ref).toBe('#/components/schemas/DailyDifferenceView');
      expect(document.paths['/admin/keys'].post.responses['201'].content['application/json'].schema.$ref).toBe('#/components/schemas/CreatedKeyView');
      expect(document.paths['/admin/owners'].post.responses['409']).toBeDefined();

      const schemas = document.components.schemas;
      expect(Object.keys(schemas)).toEqual(
        expect.arrayContaining([
          'CreateOwnerBody',
          'UpdateOwnerBody',
          'CreateKeyBody',
          'RenewBody',
          'OwnerView',
          'OwnerPage',
          'KeyView',
          'KeyPage',
          'CreatedKeyView',
          'RenewedKeys',
          'UsageRecordView',
          'UsagePage',
          'DailyTotalView',
          'DailyTotals',
          'ErrorView',
        ]),
      );
      expect(schemas.CreateOwnerBody.required.sort()).toEqual(['id', 'kind']);
      expect(schemas.CreateOwnerBody.properties.kind.enum).toEqual(['project', 'member']);
      expect(schemas.CreateKeyBody.required.sort()).toEqual(['models', 'owner']);
      expect(Object.keys(schemas.CreateKeyBody.properties).sort()).toEqual(['budget', 'expires_at', 'limits', 'models', 'owner']);
      expect(Object.keys(schemas.RateLimitsBody.properties).sort()).toEqual(['concurrent_requests', 'requests_per_minute', 'tokens_per_minute']);
      expect(schemas.UpdateKeyBody.required).toBeUndefined();
      expect(Object.keys(schemas.UpdateKeyBody.properties).sort()).toEqual(['budget', 'limits']);
      expect(Object.keys(schemas.CreateOwnerBody.properties)).toEqual(expect.arrayContaining(['budget_period', 'budget_timezone', 'alerts']));
      expect(schemas.OwnerView.required).toEqual(expect.arrayContaining(['limits', 'budget_period', 'budget_timezone', 'alerts', 'current_period']));
      expect(schemas.KeyView.required).toEqual(expect.arrayContaining(['budget', 'spend']));
      expect(Object.keys(schemas.PeriodSpendView.properties).sort()).toEqual([
        'period',
        'reserved',
        'reserved_nano',
        'resets_at',
        'spent',
        'spent_nano',
        'start',
      ]);
      expect(schemas.CreatedKeyView.properties ?? schemas.CreatedKeyView.allOf).toBeDefined();
      expect(JSON.stringify(schemas.CreatedKeyView)).toContain('"key"');
      expect(Object.keys(schemas.KeyView.properties)).not.toContain('key');
    });

    it('serves the Swagger UI as HTML', async () => {
      const answer = await httpCall(gateway.url, 'GET', '/admin/docs', undefined, {});

      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toContain('text/html');
      expect(answer.text).toContain('swagger-ui');
      expect(answer.text).toContain('Model gateway admin API');
    });
  });
});

describe('admin API without ADMIN_TOKEN', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ settings: { adminToken: undefined } });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('answers every admin route, the OpenAPI document and the Swagger UI with 404, with or without a token', async () => {
    const keyId = await keyIdOf(gateway.dataSource, KEYS.all);
    const routes: Array<[Method, string, unknown?]> = [
      ...adminRoutes(keyId),
      ['GET', '/admin/docs'],
      ['GET', '/admin/docs/openapi.json'],
      ['GET', '/admin/docs/openapi.yaml'],
    ];

    for (const headers of [{}, ADMIN_AUTH, { authorization: `Bearer ${KEYS.all}` }] as Array<Record<string, string>>) {
      for (const [method, path, body] of routes) {
        const answer = await httpCall(gateway.url, method, path, body, headers);

        expect({ method, path, token: 'authorization' in headers, status: answer.status }).toEqual({
          method,
          path,
          token: 'authorization' in headers,
          status: 404,
        });
        expect(answer.body?.error?.code).toBe('not_found');
      }
    }
    const [sneaky] = await gateway.dataSource.query(`SELECT id FROM quota_owner WHERE id = 'sneaky'`);
    expect(sneaky).toBeUndefined();
    const [key] = await gateway.dataSource.query('SELECT enabled, expires_at FROM api_key WHERE id = $1', [keyId]);
    expect(key).toEqual({ enabled: true, expires_at: null });
  });
});
