import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ADMIN_AUTH, chatCall, httpCall, keyIdOf } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS, standardConfigYaml } from './support/test-config';

/**
 * Rate limits as operators set them (admin API; the file's are in rate-limits.e2e-spec.ts) and
 * the self-service view of a key, `GET /v1/key`, as a key's holder reads it.
 */

const NONE = { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: null };

/** The standard file, with limits on team-a and on the key that may call every model. */
function limitedConfigYaml(simulator: string): string {
  return standardConfigYaml(simulator)
    .replace(
      '  - id: team-a\n    kind: project\n    budget: 100',
      '  - id: team-a\n    kind: project\n    budget: 100\n    limits: { tokens_per_minute: 200000, concurrent_requests: 20 }',
    )
    .replace(`key: ${KEYS.all}`, `key: ${KEYS.all}\n    limits: { requests_per_minute: 600 }`);
}

describe('rate limits through the admin API', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: limitedConfigYaml });
  });

  afterAll(() => gateway?.stop());

  it("shows the file's limits on owners and keys, null where none is set", async () => {
    const owner = await httpCall(gateway.url, 'GET', '/admin/owners/team-a');
    const poor = await httpCall(gateway.url, 'GET', '/admin/owners/team-poor');
    const key = await httpCall(gateway.url, 'GET', `/admin/keys/${await keyIdOf(gateway.dataSource, KEYS.all)}`);

    expect(owner.body.limits).toEqual({ requests_per_minute: null, tokens_per_minute: 200000, concurrent_requests: 20 });
    expect(poor.body.limits).toBeNull();
    expect(key.body.limits).toEqual({ ...NONE, requests_per_minute: 600 });
  });

  it('creates an owner and a key with limits, changes them field by field, clears them, and audits each change', async () => {
    const created = await httpCall(gateway.url, 'POST', '/admin/owners', { id: 'limited-team', kind: 'project', limits: { requests_per_minute: 100 } });
    const changed = await httpCall(gateway.url, 'PATCH', '/admin/owners/limited-team', { limits: { concurrent_requests: 5 } });
    const both = await httpCall(gateway.url, 'PATCH', '/admin/owners/limited-team', { budget: 3, limits: { requests_per_minute: null } });
    const key = await httpCall(gateway.url, 'POST', '/admin/keys', { owner: 'limited-team', models: ['*'], limits: { tokens_per_minute: 1000 } });
    const keyChanged = await httpCall(gateway.url, 'PATCH', `/admin/keys/${key.body.id}`, { limits: { requests_per_minute: 10 } });
    const keyCleared = await httpCall(gateway.url, 'PATCH', `/admin/keys/${key.body.id}`, { limits: null });
    const audit = await httpCall(gateway.url, 'GET', '/admin/audit?action=owner.limits');
    const keyAudit = await httpCall(gateway.url, 'GET', `/admin/audit?action=key.limits&item_id=${key.body.id}`);

    expect(created.status).toBe(201);
    expect(created.body.limits).toEqual({ ...NONE, requests_per_minute: 100 });
    expect(changed.body.limits).toEqual({ ...NONE, requests_per_minute: 100, concurrent_requests: 5 });
    expect(both.body).toMatchObject({ budget: 3, limits: { ...NONE, concurrent_requests: 5 } });
    expect(key.body.limits).toEqual({ ...NONE, tokens_per_minute: 1000 });
    expect(keyChanged.body.limits).toEqual({ ...NONE, tokens_per_minute: 1000, requests_per_minute: 10 });
    expect(keyCleared.status).toBe(200);
    expect(keyCleared.body.limits).toBeNull();
    expect(audit.body.data.map((entry: { after: { limits: unknown } }) => entry.after.limits)).toEqual([
      { ...NONE, concurrent_requests: 5 },
      { ...NONE, requests_per_minute: 100, concurrent_requests: 5 },
    ]);
    expect(keyAudit.body.data).toHaveLength(2);
    expect(keyAudit.body.data[0]).toMatchObject({ actor: 'admin', item_kind: 'key', before: { limits: { tokens_per_minute: 1000 } }, after: { limits: null } });
  });

  it.each([
    [
      'a limit of 0',
      'POST',
      '/admin/owners',
      { id: 'zero-team', kind: 'project', limits: { requests_per_minute: 0 } },
      'limits.requests_per_minute: must be a whole number from 1',
    ],
    ['a fractional limit', 'PATCH', '/admin/owners/team-a', { limits: { tokens_per_minute: 2.5 } }, 'limits.tokens_per_minute: must be a whole number from 1'],
    ['an unknown limit', 'POST', '/admin/keys', { owner: 'team-a', models: ['*'], limits: { requests_per_day: 5 } }, 'limits.requests_per_day: unknown limit'],
    ['limits that are a number', 'PATCH', '/admin/owners/team-a', { limits: 60 }, 'limits: must be a mapping'],
    ['an owner change that changes nothing', 'PATCH', '/admin/owners/team-a', {}, 'body: give budget, budget_period, budget_timezone, alerts or limits'],
  ] as const)('refuses %s with 400 naming the field, changing nothing', async (_case, method, path, body, message) => {
    const before = await httpCall(gateway.url, 'GET', '/admin/owners/team-a');
    const answer = await httpCall(gateway.url, method, path, body);
    const after = await httpCall(gateway.url, 'GET', '/admin/owners/team-a');

    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain(message);
    expect(after.body).toEqual(before.body);
  });

  it('applies a limit set through the API to the next calls of the key', async () => {
    const key = await httpCall(gateway.url, 'POST', '/admin/keys', { owner: 'team-a', models: ['*'] });
    const free = await chatCall(gateway.url, key.body.key);
    await httpCall(gateway.url, 'PATCH', `/admin/keys/${key.body.id}`, { limits: { requests_per_minute: 1 } });
    const first = await chatCall(gateway.url, key.body.key);
    const second = await chatCall(gateway.url, key.body.key);

    expect(free.status).toBe(200);
    expect(first.status).toBe(200);
    expect(second.status).toBe(429);
    expect(second.body.error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: expect.stringMatching(/^This key's limit of 1 requests per minute is reached/),
    });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('GET /v1/key', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: limitedConfigYaml });
  });

  afterAll(() => gateway?.stop());

  it("shows the key's owner, budget, spend and the limits left this minute, counting the key's own calls", async () => {
    const client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    await client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hello' }] });
    const owner = await httpCall(gateway.url, 'GET', '/admin/owners/team-a');
    const answer = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { authorization: `Bearer ${KEYS.all}` });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      object: 'gateway.key',
      key: {
        id: expect.any(String),
        prefix: KEYS.all.slice(0, 8),
        models: ['*'],
        expires_at: null,
        budget: null,
        budget_period: null,
        period_start: null,
        resets_at: null,
        spent: expect.any(Number),
        reserved: 0,
        remaining: null,
        limits: { ...NONE, requests_per_minute: 600 },
        limits_remaining: { ...NONE, requests_per_minute: 599 },
      },
      owner: {
        id: 'team-a',
        kind: 'project',
        budget: 100,
        budget_period: null,
        period_start: null,
        resets_at: null,
        spent: expect.any(Number),
        reserved: 0,
        remaining: expect.any(Number),
        limits: { requests_per_minute: null, tokens_per_minute: 200000, concurrent_requests: 20 },
        limits_remaining: { requests_per_minute: null, tokens_per_minute: expect.any(Number), concurrent_requests: 20 },
      },
    });
    // The call's cost and tokens are counted as soon as it is metered, written or not.
    expect(answer.body.owner.spent).toBeGreaterThan(0);
    expect(answer.body.key.spent).toBeGreaterThan(0);
    expect(answer.body.owner.spent).toBeGreaterThanOrEqual(owner.body.spent);
    expect(answer.body.owner.remaining).toBeCloseTo(100 - answer.body.owner.spent, 9);
    expect(answer.body.owner.limits_remaining.tokens_per_minute).toBeLessThan(200000);
  });

  it('answers the messages and format-C key headers too, and the key without limits with nulls', async () => {
    const messages = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { 'x-api-key': KEYS.chatOnly });
    const formatC = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { 'x-goog-api-key': KEYS.member });

    expect(messages.status).toBe(200);
    expect(messages.body.key).toMatchObject({ prefix: KEYS.chatOnly.slice(0, 8), models: ['chat-model'], limits: null, limits_remaining: null });
    expect(formatC.status).toBe(200);
    expect(formatC.body.owner).toMatchObject({ id: 'alice', kind: 'member', budget: null, remaining: null, limits: null });
  });

  it('answers a key it does not know with 401 in the OpenAI error shape, and names no other owner', async () => {
    const unknown = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { authorization: 'Bearer gk-nobody' });
    const none = await httpCall(gateway.url, 'GET', '/v1/key', undefined, {});
    const member = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { authorization: `Bearer ${KEYS.member}` });

    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toMatchObject({ code: 'invalid_api_key' });
    expect(none.status).toBe(401);
    expect(member.text).not.toContain('team-a');
  });

  it('is not itself a model call: it spends nothing and counts against no limit', async () => {
    const key = await httpCall(gateway.url, 'POST', '/admin/keys', { owner: 'team-a', models: ['*'], limits: { requests_per_minute: 1 } }, ADMIN_AUTH);
    for (let read = 0; read < 3; read++) {
      const answer = await httpCall(gateway.url, 'GET', '/v1/key', undefined, { authorization: `Bearer ${key.body.key}` });
      expect(answer.body.key.limits_remaining.requests_per_minute).toBe(1);
    }
    const anthropic = new Anthropic({ apiKey: key.body.key, baseURL: gateway.url, maxRetries: 0 });
    await expect(anthropic.messages.create({ model: 'messages-model', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] })).resolves.toMatchObject({
      type: 'message',
    });
  });
});
