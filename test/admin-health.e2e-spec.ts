import { nanoToDecimal } from '../src/config/money';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';

/**
 * The operator's side: the admin API (ADMIN_TOKEN, DESIGN.md sections 2 and 7) and the health
 * probes for load balancers.
 */

interface Answer {
  status: number;
  body: any;
}

async function get(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, { headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the failure message
  }
  return { status: response.status, body };
}

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` };

async function chatCall(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'Count the coins in the jar' }] }),
  });
  await response.text();
  expect(response.status).toBe(200);
  return response.headers.get('x-request-id') ?? '';
}

describe('admin API', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('shows an owner with budget, spent and reserved as decimal numbers', async () => {
    const answer = await get(gateway.url, '/admin/owners/team-a', ADMIN);

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: 'team-a', kind: 'project', budget: 100, reserved: 0 });
    expect(typeof answer.body.spent).toBe('number');
  });

  it('shows a fractional budget exactly and an unlimited budget as null', async () => {
    expect((await get(gateway.url, '/admin/owners/team-poor', ADMIN)).body).toMatchObject({ budget: 0.000001 });
    expect((await get(gateway.url, '/admin/owners/alice', ADMIN)).body).toMatchObject({ kind: 'member', budget: null });
  });

  it('shows the spend of a call as the exact decimal of its stored cost', async () => {
    const before = (await get(gateway.url, '/admin/owners/team-a', ADMIN)).body.spent as number;
    const requestId = await chatCall(gateway.url);
    const record = await gateway.usageRecord(requestId);
    expect(record).not.toBeNull();
    expect(record!.costNano).toBeGreaterThan(0n);

    const after = await get(gateway.url, '/admin/owners/team-a', ADMIN);
    const usage = await get(gateway.url, `/admin/usage/${requestId}`, ADMIN);

    expect(before).toBe(0);
    expect(after.body.spent).toBe(Number(nanoToDecimal(record!.costNano)));
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ request_id: requestId, owner_id: 'team-a', model: 'chat-model', status: 200 });
    expect(usage.body.cost).toBe(Number(nanoToDecimal(record!.costNano)));
  });

  it('answers an unknown owner with 404', async () => {
    const answer = await get(gateway.url, '/admin/owners/no-such-owner', ADMIN);

    expect(answer.status).toBe(404);
    expect(answer.body.error).toMatchObject({ code: 'not_found' });
  });

  it('answers an unknown request id with 404', async () => {
    expect((await get(gateway.url, '/admin/usage/no-such-request', ADMIN)).status).toBe(404);
  });

  it.each([
    ['no token', {}],
    ['a wrong token', { authorization: 'Bearer not-the-admin-token' }],
    ['the admin token without the Bearer scheme', { authorization: ADMIN_TOKEN_FOR_TESTS }],
    ['the admin token with a suffix', { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}x` }],
    ['a gateway key', { authorization: `Bearer ${KEYS.all}` }],
  ])('refuses %s with 401', async (_label, headers) => {
    for (const path of ['/admin/owners/team-a', '/admin/usage/anything']) {
      const answer = await get(gateway.url, path, headers as Record<string, string>);

      expect({ path, status: answer.status }).toEqual({ path, status: 401 });
      expect(answer.body.error).toMatchObject({ code: 'invalid_api_key' });
      expect(JSON.stringify(answer.body)).not.toContain('"budget"');
    }
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

  it.each(['/admin/owners/team-a', '/admin/owners/no-such-owner', '/admin/usage/anything', '/admin'])(
    'answers %s with 404, with or without a token',
    async (path) => {
      for (const headers of [{}, ADMIN, { authorization: 'Bearer ' }, { authorization: `Bearer ${KEYS.all}` }]) {
        const answer = await get(gateway.url, path, headers as Record<string, string>);

        expect({ path, headers, status: answer.status }).toEqual({ path, headers, status: 404 });
        expect(JSON.stringify(answer.body)).not.toContain('"budget"');
      }
    },
  );

  it('keeps the data plane working', async () => {
    expect(await chatCall(gateway.url)).not.toBe('');
  });
});

describe('health probes', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('answers GET /health/live with 200 without a key', async () => {
    const answer = await get(gateway.url, '/health/live');

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'ok' });
  });

  it('answers GET /health/ready with 200 when the database and the configuration are up', async () => {
    const answer = await get(gateway.url, '/health/ready');

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, config: { status: 'up' } } });
  });

  it('does not need a gateway key, and ignores a wrong one', async () => {
    expect((await get(gateway.url, '/health/ready', { authorization: 'Bearer wrong' })).status).toBe(200);
    expect((await get(gateway.url, '/health/live', { authorization: 'Bearer wrong' })).status).toBe(200);
  });
});

describe('health probes when the database is gone', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
    expect((await get(gateway.url, '/health/ready')).status).toBe(200);
    await gateway.dataSource.destroy();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('turns GET /health/ready to 503 naming the database as down', async () => {
    const answer = await get(gateway.url, '/health/ready');

    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
  });

  it('keeps GET /health/live at 200', async () => {
    const answer = await get(gateway.url, '/health/live');

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'ok' });
  });
});
