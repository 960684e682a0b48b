import { Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { alertSettingsFrom } from '../config/settings/alerts.settings';
import { defaultSettings } from '../config/gateway-options';
import { AlertDelivery, retryDelayMs, signAlert } from './alert-delivery';
import type { StoredAlertRecord } from './budget-alerts';

const NOW = Date.parse('2026-03-14T09:26:53.589Z');
const SECRET = 'a-webhook-secret-of-32-characters';
const URL = 'https://alerts.example.com/hook';

class FixedClock extends Clock {
  override now(): number {
    return NOW;
  }
}

function record(fields: Partial<StoredAlertRecord> = {}): StoredAlertRecord {
  return {
    id: '3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21',
    owner_id: 'team-a',
    threshold: 80,
    budget_nano: '100000000000',
    used_nano: '85000000000',
    fired_at: new Date(NOW - 5_000).toISOString(),
    delivered_at: null,
    attempts: 1,
    next_attempt_at: new Date(NOW + 30_000).toISOString(),
    last_error: null,
    period_start: null,
    period_end: null,
    ...fields,
  };
}

/** A database whose claim answers `claimed` (or fails while `away`), recording every other statement. */
function fakeDatabase(claimed: StoredAlertRecord[]) {
  const database = { away: false, writes: [] as Array<{ text: string; parameters: unknown[] }> };
  const query = async (text: string, parameters: unknown[]) => {
    if (database.away) throw new Error('connection refused');
    if (text.includes('FOR UPDATE SKIP LOCKED')) return [claimed.splice(0), 0];
    database.writes.push({ text, parameters });
    return [[], 1];
  };
  return { database, dataSource: { query } as unknown as DataSource };
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let tick = 0; tick < 100 && !condition(); tick++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

function deliveryOn(dataSource: DataSource): AlertDelivery {
  return new AlertDelivery(dataSource, {} as SchedulerRegistry, new FixedClock(), { webhookUrl: URL, webhookSecret: SECRET, deliveryIntervalMs: 1_000 });
}

describe('signAlert', () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the secret>, as a receiver computes it with node:crypto', () => {
    const body = '{"id":"3f1c2a9e","type":"budget.alert","owner_id":"équipe"}';

    const header = signAlert(SECRET, body, 1_773_480_413);

    const expected = createHmac('sha256', SECRET)
      .update(Buffer.from(`1773480413.${body}`, 'utf8'))
      .digest('hex');
    expect(header).toBe(`t=1773480413,v1=${expected}`);
    const [, signature] = /v1=([0-9a-f]{64})$/.exec(header)!;
    expect(timingSafeEqual(Buffer.from(signature, 'hex'), Buffer.from(expected, 'hex'))).toBe(true);
  });

  it('changes with any byte of the body, the time or the secret', () => {
    const header = signAlert(SECRET, '{"threshold":80}', 100);

    expect(signAlert(SECRET, '{"threshold":81}', 100)).not.toBe(header);
    expect(signAlert(SECRET, '{"threshold":80}', 101).split(',v1=')[1]).not.toBe(header.split(',v1=')[1]);
    expect(signAlert(`${SECRET}!`, '{"threshold":80}', 100)).not.toBe(header);
  });
});

describe('retryDelayMs', () => {
  it('waits 1 s after the first failed attempt, doubling with each, at most an hour', () => {
    const delays = Array.from({ length: 14 }, (_, index) => retryDelayMs(index + 1));

    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600].map((seconds) => seconds * 1000));
    expect(retryDelayMs(1000)).toBe(3_600_000);
  });
});

describe('alertSettingsFrom', () => {
  it('delivers every second to the URL given, signed with the secret', () => {
    expect(alertSettingsFrom({ ALERT_WEBHOOK_URL: URL, ALERT_WEBHOOK_SECRET: SECRET })).toEqual({
      webhookUrl: URL,
      webhookSecret: SECRET,
      deliveryIntervalMs: 1_000,
    });
    expect(alertSettingsFrom({ ALERT_DELIVERY_MS: '50' })).toEqual({ deliveryIntervalMs: 50 });
  });

  it.each([
    ['no secret', { ALERT_WEBHOOK_URL: URL }, 'ALERT_WEBHOOK_SECRET must be too: at least 16 characters'],
    ['a secret of 15 characters', { ALERT_WEBHOOK_URL: URL, ALERT_WEBHOOK_SECRET: 'fifteen-chars!!' }, 'ALERT_WEBHOOK_SECRET'],
    [
      'a URL that is not http(s)',
      { ALERT_WEBHOOK_URL: 'ftp://alerts.example.com', ALERT_WEBHOOK_SECRET: SECRET },
      'ALERT_WEBHOOK_URL must be an http:// or https:// URL',
    ],
    ['no URL at all', { ALERT_WEBHOOK_URL: 'alerts.example.com/hook', ALERT_WEBHOOK_SECRET: SECRET }, 'ALERT_WEBHOOK_URL must be an http:// or https:// URL'],
    ['an interval of 0', { ALERT_DELIVERY_MS: '0' }, 'ALERT_DELIVERY_MS must be a whole number of at least 1'],
  ])('stops the start with %s, naming the variable and never the secret', (_label, env, message) => {
    expect(() => defaultSettings(env)).toThrow(message);
    let thrown = '';
    try {
      defaultSettings(env);
    } catch (error) {
      thrown = String(error);
    }
    expect(thrown).not.toContain(SECRET);
  });
});

describe(AlertDelivery.name, () => {
  let sent: Array<{ url: string; init: RequestInit }>;
  let answer: () => Promise<Response>;
  let warnings: jest.SpyInstance;

  beforeEach(() => {
    // Failures are caused on purpose here; what is warned about is checked where it matters.
    warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    sent = [];
    answer = async () => new Response('ok', { status: 200 });
    jest.spyOn(global, 'fetch').mockImplementation(async (url, init) => {
      sent.push({ url: String(url), init: init! });
      return answer();
    });
  });

  afterEach(() => jest.restoreAllMocks());

  it('POSTs each claimed alert as its event, signed, with its id in X-Gateway-Event-Id, and marks it delivered on 2xx', async () => {
    const { database, dataSource } = fakeDatabase([record()]);

    expect(await deliveryOn(dataSource).runOnce()).toBe(1);

    expect(sent).toHaveLength(1);
    const { url, init } = sent[0];
    const headers = init.headers as Record<string, string>;
    expect(url).toBe(URL);
    expect(JSON.parse(init.body as string)).toEqual({
      id: '3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21',
      type: 'budget.alert',
      owner_id: 'team-a',
      threshold: 80,
      period: { start: null, end: null },
      budget: 100,
      used: 85,
      fired_at: new Date(NOW - 5_000).toISOString(),
    });
    expect(headers['x-gateway-event-id']).toBe('3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21');
    expect(headers['x-gateway-signature']).toBe(signAlert(SECRET, init.body as string, Math.floor(NOW / 1000)));
    expect(database.writes).toEqual([
      { text: expect.stringContaining('SET delivered_at'), parameters: ['3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21', new Date(NOW)] },
    ]);
  });

  it.each([
    ['a 500', async () => new Response('receiver broke', { status: 500 }), 'HTTP 500: receiver broke'],
    ['a redirect', async () => new Response(null, { status: 302, headers: { location: 'https://elsewhere.example.com' } }), 'HTTP 302'],
    [
      'a refused connection',
      async () => Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })),
      'fetch failed: connect ECONNREFUSED',
    ],
    ['a timeout', async () => Promise.reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), 'no answer within 10 s'],
  ])('after %s, keeps the alert undelivered until its back-off is over, with the reason', async (_label, failure, reason) => {
    answer = failure;
    const { database, dataSource } = fakeDatabase([record({ attempts: 3 })]);

    await deliveryOn(dataSource).runOnce();

    expect(database.writes).toEqual([
      { text: expect.stringContaining('SET next_attempt_at = $2, last_error = $3'), parameters: [expect.any(String), new Date(NOW + 4_000), reason] },
    ]);
  });

  it('warns of a failing receiver at the first failed attempt of an alert and every 10th, not at each', async () => {
    answer = async () => new Response(null, { status: 500 });
    const attempts = [1, 2, 9, 10, 11, 20];
    const { dataSource } = fakeDatabase(attempts.map((count) => record({ id: `alert-${count}`, attempts: count })));

    await deliveryOn(dataSource).runOnce();

    const warned = warnings.mock.calls.map(([message]) => /attempt (\d+):/.exec(String(message))?.[1]);
    expect(warned.sort()).toEqual(['1', '10', '20']);
  });

  it('keeps at most 256 characters of a reason', async () => {
    answer = async () => new Response('x'.repeat(1_000), { status: 503 });
    const { database, dataSource } = fakeDatabase([record()]);

    await deliveryOn(dataSource).runOnce();

    expect((database.writes[0].parameters[2] as string).length).toBe(256);
  });

  it('counts deliveries by outcome', async () => {
    const { dataSource } = fakeDatabase([record({ id: 'a' }), record({ id: 'b' })]);
    let calls = 0;
    answer = async () => new Response(null, { status: calls++ === 0 ? 200 : 500 });
    const delivery = deliveryOn(dataSource);

    await delivery.runOnce();

    expect(delivery.outcomes).toEqual({ delivered: 1, failed: 1 });
  });

  it('lets a round fail quietly while the database is away, and delivers at the next one', async () => {
    const { database, dataSource } = fakeDatabase([record()]);
    const delivery = deliveryOn(dataSource);
    database.away = true;

    await expect(delivery.runOnce()).resolves.toBe(0);
    await expect(delivery.runOnce()).resolves.toBe(0);
    database.away = false;
    await expect(delivery.runOnce()).resolves.toBe(1);

    expect(sent).toHaveLength(1);
    expect(warnings).toHaveBeenCalledTimes(1);
  });

  it('never runs two rounds at once: a nudge during a round runs another right after it', async () => {
    const claimed = [record({ id: 'first' })];
    const { dataSource } = fakeDatabase(claimed);
    const held: Array<() => void> = [];
    answer = () => new Promise((resolve) => held.push(() => resolve(new Response(null, { status: 200 }))));
    const delivery = deliveryOn(dataSource);

    const round = delivery.runOnce();
    expect(delivery.runOnce()).toBe(round);
    await waitFor(() => held.length === 1);
    claimed.push(record({ id: 'second' }));
    delivery.nudge();
    held[0]();
    await round;
    await waitFor(() => held.length === 2);
    held[1]();

    expect(sent.map((call) => (call.init.headers as Record<string, string>)['x-gateway-event-id'])).toEqual(['first', 'second']);
  });

  it('sends nothing without ALERT_WEBHOOK_URL', async () => {
    const { dataSource } = fakeDatabase([record()]);
    const delivery = new AlertDelivery(dataSource, {} as SchedulerRegistry, new FixedClock(), { deliveryIntervalMs: 1_000 });

    await expect(delivery.runOnce()).resolves.toBe(0);

    expect(sent).toHaveLength(0);
  });
});
