import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { Clock } from '../src/common/clock';
import { httpCall, keyIdOf } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS, standardConfigYaml } from './support/test-config';
import { until } from './support/until';

/**
 * Budget periods, key budgets and budget alerts as operators set them and clients meet them:
 * a monthly budget used up and free again at the month's turn (a test clock), periods in a
 * time zone, a key's own budget inside its owner's, a period set on an owner that has spent
 * already, and alert thresholds crossed by two replicas together, each sent once, signed.
 */

const MONTHLY_KEY = 'gk-test-monthly-owner-0007';
const TOKYO_KEY = 'gk-test-tokyo-owner-0008';
const BUDGETED_KEY = 'gk-test-budgeted-key-0009';
const ALERTED_KEY = 'gk-test-alerted-owner-0010';
const SECRET = 'alert-secret-for-the-tests-0123456789';
/** Less than one chat call of the simulator costs: the first call uses it up. */
const TINY = 0.0000001;

function configYaml(simulator: string): string {
  return standardConfigYaml(simulator)
    .replace(
      'owners:\n',
      `owners:
  - id: team-monthly
    kind: project
    budget: ${TINY}
    budget_period: month
  - id: team-tokyo
    kind: project
    budget: 100
    budget_period: day
    budget_timezone: Asia/Tokyo
  - id: team-alerted
    kind: project
    budget: 0.01
    budget_period: week
    alerts: [50, 100]
`,
    )
    .replace(
      'keys:\n',
      `keys:
  - { key: ${MONTHLY_KEY}, owner: team-monthly, models: ["*"] }
  - { key: ${TOKYO_KEY}, owner: team-tokyo, models: ["*"] }
  - { key: ${BUDGETED_KEY}, owner: team-a, models: ["*"], budget: ${TINY} }
  - { key: ${ALERTED_KEY}, owner: team-alerted, models: ["*"] }
`,
    );
}

function client(gateway: GatewayHarness, key: string): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
}

function chat(openai: OpenAI) {
  return openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Count the coins' }] });
}

/** The status and message a call ended with: 200 with an answer, or the SDK's error. */
async function outcome(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await call;
    return { status: 200, message: '' };
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { status: error.status ?? 0, message: (error.error as { message?: string } | undefined)?.message ?? '' };
    throw error;
  }
}

async function keyView(gateway: GatewayHarness, key: string) {
  return (await httpCall(gateway.url, 'GET', '/v1/key', undefined, { authorization: `Bearer ${key}` })).body;
}

/** Every record of an owner written, as the admin API lists them. */
async function records(gateway: GatewayHarness, ownerId: string): Promise<Array<{ cost: number; cost_nano: string; status: number }>> {
  return (await httpCall(gateway.url, 'GET', `/admin/usage?owner=${ownerId}&limit=1000`)).body.data;
}

function controlClock(...gateways: GatewayHarness[]) {
  let now = Date.now();
  for (const gateway of gateways) jest.spyOn(gateway.app.get(Clock), 'now').mockImplementation(() => now);
  return { set: (at: number) => (now = at) };
}

describe('budget periods and key budgets', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml });
  });

  afterEach(() => jest.restoreAllMocks());

  afterAll(async () => {
    await gateway?.stop();
  });

  it('refuses a monthly budget once used with 402 naming the reset, and admits again at the turn of the month', async () => {
    const clock = controlClock(gateway);
    const openai = client(gateway, MONTHLY_KEY);
    expect((await outcome(chat(openai))).status).toBe(200);
    // Written, so nothing of this month waits unwritten (that would count against the next one until written).
    await until(async () => (await records(gateway, 'team-monthly')).length === 1, 'the first call recorded');

    const refused = await outcome(chat(openai));
    const view = await keyView(gateway, MONTHLY_KEY);
    const now = new Date();
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);

    expect(refused.status).toBe(402);
    expect(refused.message).toBe(`The budget of this key's quota owner is used up for this month; it resets at ${new Date(nextMonth).toISOString()}.`);
    expect(view.owner).toMatchObject({
      budget: TINY,
      budget_period: 'month',
      period_start: new Date(monthStart).toISOString(),
      resets_at: new Date(nextMonth).toISOString(),
      remaining: 0,
    });
    expect(view.owner.spent).toBeGreaterThan(TINY);

    clock.set(nextMonth - 1);
    expect((await outcome(chat(openai))).status).toBe(402);
    clock.set(nextMonth);
    expect((await outcome(chat(openai))).status).toBe(200);
    const after = await keyView(gateway, MONTHLY_KEY);
    expect(after.owner).toMatchObject({
      period_start: new Date(nextMonth).toISOString(),
      resets_at: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 2, 1)).toISOString(),
    });
  });

  it("shows an owner's period in the admin API, its spend equal to the period's records", async () => {
    await until(async () => (await records(gateway, 'team-monthly')).length === 2, 'the two admitted calls recorded');
    const owner = (await httpCall(gateway.url, 'GET', '/admin/owners/team-monthly')).body;
    const billed = (await records(gateway, 'team-monthly')).reduce((sum, record) => sum + BigInt(record.cost_nano), 0n);

    expect(owner).toMatchObject({ budget_period: 'month', budget_timezone: null, alerts: [] });
    expect(owner.current_period).toMatchObject({ period: 'month', spent_nano: billed.toString(), reserved: 0 });
    expect(owner.spent_nano).toBe(billed.toString());
  });

  it('counts a day in the time zone the owner names', async () => {
    const view = await keyView(gateway, TOKYO_KEY);
    const tokyo = 9 * 3_600_000;
    const dayStart = Math.floor((Date.now() + tokyo) / 86_400_000) * 86_400_000 - tokyo;

    expect(view.owner).toMatchObject({ budget_period: 'day', period_start: new Date(dayStart).toISOString() });
    expect(Date.parse(view.owner.resets_at) - dayStart).toBe(86_400_000);
    expect((await httpCall(gateway.url, 'GET', '/admin/owners/team-tokyo')).body).toMatchObject({
      budget_timezone: 'Asia/Tokyo',
      current_period: { period: 'day', start: new Date(dayStart).toISOString() },
    });
  });

  it("refuses a key whose own budget is used with 402 while its owner's other keys go on, and shows the key's spend", async () => {
    const budgeted = client(gateway, BUDGETED_KEY);
    expect((await outcome(chat(budgeted))).status).toBe(200);

    const refused = await outcome(chat(budgeted));
    const other = await outcome(chat(client(gateway, KEYS.all)));
    const keyId = await keyIdOf(gateway.dataSource, BUDGETED_KEY);
    await until(async () => (await httpCall(gateway.url, 'GET', `/admin/usage?key=${keyId}`)).body.data.length === 1, 'the key’s call recorded');
    const [record] = (await httpCall(gateway.url, 'GET', `/admin/usage?key=${keyId}`)).body.data;
    const key = (await httpCall(gateway.url, 'GET', `/admin/keys/${keyId}`)).body;
    const view = await keyView(gateway, BUDGETED_KEY);

    expect(refused).toEqual({ status: 402, message: 'The budget of this key is used up.' });
    expect(other.status).toBe(200);
    expect(key).toMatchObject({ budget: TINY, spend: { period: null, start: null, spent_nano: record.cost_nano, reserved: 0 } });
    expect(view.key).toMatchObject({ budget: TINY, remaining: 0, spent: record.cost });
    expect(view.owner).toMatchObject({ id: 'team-a', budget: 100 });
  });

  it("takes a key's budget through the admin API and command-line shape, and clears it", async () => {
    const created = await httpCall(gateway.url, 'POST', '/admin/keys', { owner: 'team-a', models: ['*'], budget: '0.0000001' });
    const openai = client(gateway, created.body.key);
    expect((await outcome(chat(openai))).status).toBe(200);
    expect((await outcome(chat(openai))).status).toBe(402);

    const raised = await httpCall(gateway.url, 'PATCH', `/admin/keys/${created.body.id}`, { budget: null });
    const audit = await httpCall(gateway.url, 'GET', `/admin/audit?action=key.budget&item_id=${created.body.id}`);

    expect(created.body.budget).toBe(TINY);
    expect(raised.body.budget).toBeNull();
    expect(audit.body.data[0]).toMatchObject({ before: { budget: TINY }, after: { budget: null } });
    // The answering replica forgets the key at once: its next call is admitted.
    expect((await outcome(chat(openai))).status).toBe(200);
  });

  it('counts a period set on an owner that has spent from its records, and drops it again', async () => {
    const openai = client(gateway, KEYS.member);
    for (let call = 0; call < 3; call++) expect((await outcome(chat(openai))).status).toBe(200);
    await until(async () => (await records(gateway, 'alice')).length === 3, "alice's calls recorded");
    const billed = (await records(gateway, 'alice')).reduce((sum, record) => sum + BigInt(record.cost_nano), 0n);

    const monthly = await httpCall(gateway.url, 'PATCH', '/admin/owners/alice', { budget: 1, budget_period: 'month', alerts: [90] });
    const zoned = await httpCall(gateway.url, 'PATCH', '/admin/owners/alice', { budget_timezone: 'America/New_York' });
    const dropped = await httpCall(gateway.url, 'PATCH', '/admin/owners/alice', { budget_period: null, budget_timezone: null });
    const audit = await httpCall(gateway.url, 'GET', '/admin/audit?action=owner.budget_terms&item_id=alice');

    expect(monthly.body).toMatchObject({ budget: 1, budget_period: 'month', alerts: [90], current_period: { spent_nano: billed.toString() } });
    expect(zoned.body).toMatchObject({ budget_timezone: 'America/New_York', current_period: { period: 'month', spent_nano: billed.toString() } });
    expect(Date.parse(zoned.body.current_period.start) % 3_600_000).toBe(0);
    expect(new Date(zoned.body.current_period.start).getUTCHours()).toBeGreaterThanOrEqual(4);
    expect(dropped.body).toMatchObject({ budget_period: null, current_period: null, spent_nano: billed.toString(), alerts: [90] });
    expect(audit.body.data).toHaveLength(3);
  });

  it.each([
    ['an unknown period', 'team-tokyo', { budget_period: 'year' }, 'budget_period: must be one of day, week, month'],
    ['an unknown time zone', 'team-tokyo', { budget_timezone: 'Moon/Tranquility' }, 'budget_timezone: must be an IANA time zone name'],
    ['a time zone without a period', 'team-a', { budget_timezone: 'UTC' }, 'budget_timezone: needs a budget_period'],
    ['an alert of 0 per cent', 'team-tokyo', { alerts: [0] }, 'alerts[0]: must be a whole per cent from 1 to 1000'],
    ['a negative key budget', undefined, { budget: -1 }, 'budget: must not be negative'],
  ])('refuses %s with 400 naming the field, changing nothing', async (_case, ownerId, change, message) => {
    const keyId = await keyIdOf(gateway.dataSource, KEYS.chatOnly);
    const path = ownerId ? `/admin/owners/${ownerId}` : `/admin/keys/${keyId}`;
    const before = await httpCall(gateway.url, 'GET', path);
    const answer = await httpCall(gateway.url, 'PATCH', path, change);
    const after = await httpCall(gateway.url, 'GET', path);

    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toContain(message);
    expect(after.body).toEqual(before.body);
  });
});

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  event: { id: string; owner_id: string; threshold: number; used: number; budget: number; period: { start: string | null; end: string | null } };
}

/** Receives the alerts' webhook and keeps every delivery. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  private readonly server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      this.deliveries.push({ headers: request.headers, body, event: JSON.parse(body) });
      response.writeHead(204).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/alerts`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function signedBySecret(delivery: Delivery): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery.headers['x-gateway-signature']));
  if (!match) return false;
  return timingSafeEqual(createHmac('sha256', SECRET).update(`${match[1]}.${delivery.body}`).digest(), Buffer.from(match[2], 'hex'));
}

describe('budget alerts crossed by two replicas together', () => {
  const receiver = new Receiver();
  let first: GatewayHarness;
  let second: GatewayHarness;

  beforeAll(async () => {
    const url = await receiver.start();
    const settings = { alerts: { webhookUrl: url, webhookSecret: SECRET, deliveryIntervalMs: 100 } };
    first = await GatewayHarness.start({ configYaml, settings });
    second = await GatewayHarness.start({ configYaml, settings, sharing: first });
  });

  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    await receiver.stop();
  });

  it('sends each threshold of the period once, signed, however many calls of both replicas cross it', async () => {
    const clients = [client(first, ALERTED_KEY), client(second, ALERTED_KEY)];
    // Calls on both replicas at once until both refuse: the week's budget is used up.
    let refusals = 0;
    for (let round = 0; round < 200 && refusals < 2; round++) {
      const outcomes = await Promise.all(clients.flatMap((openai) => [outcome(chat(openai)), outcome(chat(openai))]));
      refusals = outcomes.filter((ended) => ended.status === 402).length;
    }
    expect(refusals).toBeGreaterThanOrEqual(2);
    await until(async () => receiver.deliveries.length >= 2, 'both thresholds delivered');
    // Anything sent twice would arrive within a few delivery rounds.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const thresholds = receiver.deliveries.map((delivery) => delivery.event.threshold).sort((a, b) => a - b);
    const listed = await httpCall(first.url, 'GET', '/admin/alerts?owner_id=team-alerted');
    const audit = await httpCall(second.url, 'GET', '/admin/audit?action=owner.alert&item_id=team-alerted');
    const view = await keyView(first, ALERTED_KEY);

    expect(thresholds).toEqual([50, 100]);
    expect(receiver.deliveries.every(signedBySecret)).toBe(true);
    expect(new Set(receiver.deliveries.map((delivery) => delivery.headers['x-gateway-event-id'])).size).toBe(2);
    for (const { event } of receiver.deliveries) {
      expect(event).toMatchObject({ owner_id: 'team-alerted', budget: 0.01, period: { start: view.owner.period_start, end: view.owner.resets_at } });
      expect(event.used).toBeGreaterThanOrEqual((event.threshold / 100) * 0.01);
    }
    expect(listed.body.data).toHaveLength(2);
    expect(listed.body.data.every((alert: { delivered_at: string | null }) => alert.delivered_at !== null)).toBe(true);
    expect(audit.body.data.map((entry: { actor: string }) => entry.actor)).toEqual(['gateway', 'gateway']);
  });
});
