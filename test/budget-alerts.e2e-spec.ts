import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Clock } from '../src/common/clock';
import { defaultSettings } from '../src/config/gateway-options';
import { AlertStanding, FiredAlert, fireCrossedAlerts } from '../src/governance/budget-alerts';
import { httpCall, ISO_INSTANT, UUID } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { until } from './support/until';

/**
 * Budget alerts: a threshold (per cent of the budget) an owner's period reaches fires once per
 * period, with an audit entry, and is POSTed to ALERT_WEBHOOK_URL signed with
 * ALERT_WEBHOOK_SECRET; a failed delivery is retried with back-off under the same event id, and
 * each alert is sent by one replica at a time. The money statements call fireCrossedAlerts in
 * their transaction; here the test calls it, as they do, on the gateway's own database.
 */

const SECRET = 'webhook-secret-for-the-alert-tests';
const UNIT = 1_000_000_000n;
const BUDGET = 100n * UNIT;

interface Delivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  event: { id: string; owner_id: string; threshold: number; [field: string]: unknown };
}

/** The alerts' receiver: records every delivery and answers what `statusFor` says, after `delayMs`. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  statusFor: (delivery: Delivery) => number = () => 200;
  delayMs = 0;
  private readonly server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const delivery = { path: request.url ?? '', headers: request.headers, body, event: JSON.parse(body) };
      this.deliveries.push(delivery);
      const status = this.statusFor(delivery);
      setTimeout(() => response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'thanks' : 'receiver broke'), this.delayMs);
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  of(ownerId: string): Delivery[] {
    return this.deliveries.filter((delivery) => delivery.event.owner_id === ownerId);
  }
}

/** What a receiver does with X-Gateway-Signature: recompute the HMAC over "<t>.<body>" and compare in constant time. */
function signedBySecret(delivery: Delivery, secret = SECRET): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery.headers['x-gateway-signature']));
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.${delivery.body}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2], 'hex'));
}

function standing(ownerId: string, percentUsed: bigint, thresholds: number[] = [50, 80, 100]): AlertStanding {
  return { ownerId, periodStart: -Infinity, periodEnd: null, budgetNano: BUDGET, usedNano: (BUDGET * percentUsed) / 100n, thresholds };
}

/** Fires in a transaction of its own, as a money statement does. */
function fire(gateway: GatewayHarness, ...standings: AlertStanding[]): Promise<FiredAlert[]> {
  return gateway.dataSource.transaction((manager) => fireCrossedAlerts(manager, standings, new Date(gateway.app.get(Clock).now())));
}

async function storedAlerts(gateway: GatewayHarness, ownerId: string) {
  return gateway.dataSource.query<
    Array<{ id: string; threshold: number; attempts: number; delivered_at: Date | null; next_attempt_at: Date | string; last_error: string | null }>
  >('SELECT id, threshold, attempts, delivered_at, next_attempt_at, last_error FROM budget_alert WHERE owner_id = $1 ORDER BY threshold', [ownerId]);
}

function alertSettings(url: string) {
  return { alerts: { ...defaultSettings().alerts, webhookUrl: url, webhookSecret: SECRET, deliveryIntervalMs: 20 } };
}

async function createOwners(gateway: GatewayHarness, ...ids: string[]): Promise<void> {
  for (const id of ids) expect((await httpCall(gateway.url, 'POST', '/admin/owners', { id, kind: 'project', budget: 100 })).status).toBe(201);
}

/** Lets a few delivery rounds (20 ms apart) pass, to show that they send nothing more. */
const someRounds = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('budget alerts', () => {
  const receiver = new Receiver();
  let gateway: GatewayHarness;
  /** How far the gateway's clock is ahead of the wall clock: moved to skip a back-off. */
  let clockAhead = 0;

  beforeAll(async () => {
    const receiverUrl = await receiver.start();
    gateway = await GatewayHarness.start({ settings: alertSettings(`${receiverUrl}/alerts`) });
    jest.spyOn(gateway.app.get(Clock), 'now').mockImplementation(() => Date.now() + clockAhead);
    await createOwners(gateway, 'alert-once', 'alert-monthly', 'alert-race', 'alert-retry');
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await gateway?.stop();
    await receiver.stop();
  });

  it('fires the thresholds reached, delivers each signed under its own event id, and audits it', async () => {
    const fired = await fire(gateway, standing('alert-once', 85n));

    expect(fired.map((alert) => alert.threshold)).toEqual([50, 80]);
    await until(() => receiver.of('alert-once').length === 2, 'both alerts delivered');
    const deliveries = receiver.of('alert-once');
    for (const delivery of deliveries) {
      expect(signedBySecret(delivery)).toBe(true);
      expect(signedBySecret(delivery, `${SECRET}-not`)).toBe(false);
      expect(delivery.path).toBe('/alerts');
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.headers['x-gateway-event-id']).toBe(delivery.event.id);
      expect(delivery.event).toEqual({
        id: expect.stringMatching(UUID),
        type: 'budget.alert',
        owner_id: 'alert-once',
        threshold: expect.any(Number),
        period: { start: null, end: null },
        budget: 100,
        used: 85,
        fired_at: expect.stringMatching(ISO_INSTANT),
      });
    }
    const ids = deliveries.map((delivery) => delivery.event.id);
    expect(new Set(ids).size).toBe(2);
    expect(ids.sort()).toEqual(fired.map((alert) => alert.id).sort());
    await until(async () => (await storedAlerts(gateway, 'alert-once')).every((row) => row.delivered_at !== null), 'both alerts marked delivered');

    const audit = await httpCall(gateway.url, 'GET', '/admin/audit?action=owner.alert&item_id=alert-once');
    expect(audit.body.data).toHaveLength(2);
    for (const entry of audit.body.data) {
      expect(entry).toMatchObject({ actor: 'gateway', action: 'owner.alert', item_kind: 'owner', item_id: 'alert-once', before: null });
      expect(entry.after).toEqual(deliveries.find((delivery) => delivery.event.id === entry.after.id)!.event);
    }
  });

  it('fires a threshold once per period: used rising further fires only the thresholds not reached before', async () => {
    await until(() => receiver.of('alert-once').length === 2, 'the first alerts delivered');

    expect(await fire(gateway, standing('alert-once', 90n))).toEqual([]);
    await someRounds();

    expect(receiver.of('alert-once')).toHaveLength(2);
    expect((await storedAlerts(gateway, 'alert-once')).map((row) => row.threshold)).toEqual([50, 80]);
    expect((await httpCall(gateway.url, 'GET', '/admin/audit?action=owner.alert&item_id=alert-once')).body.data).toHaveLength(2);
  });

  it("fires a threshold again in the owner's next period, and gives each event its period", async () => {
    await gateway.dataSource.query(`UPDATE quota_owner SET budget_period = 'month', budget_timezone = 'Europe/Berlin' WHERE id = 'alert-monthly'`);
    const periods = await gateway.dataSource.query<Array<{ start: Date; end: Date; next_end: Date }>>(
      `SELECT budget_period_start('month', 'Europe/Berlin', '2026-03-14T12:00:00Z') AS start, budget_period_end('month', 'Europe/Berlin', '2026-03-14T12:00:00Z') AS end,
              budget_period_end('month', 'Europe/Berlin', '2026-04-14T12:00:00Z') AS next_end`,
    );
    const { start, end, next_end: nextEnd } = periods[0];
    const inMonth = (periodStart: Date, periodEnd: Date) => ({
      ...standing('alert-monthly', 55n, [50]),
      periodStart: new Date(periodStart),
      periodEnd: new Date(periodEnd),
    });

    expect(await fire(gateway, inMonth(start, end))).toHaveLength(1);
    expect(await fire(gateway, inMonth(start, end))).toHaveLength(0);
    expect(await fire(gateway, inMonth(end, nextEnd))).toHaveLength(1);

    await until(() => receiver.of('alert-monthly').length === 2, 'the alert of each month delivered');
    const periodsSent = receiver.of('alert-monthly').map((delivery) => delivery.event.period);
    expect(periodsSent).toEqual(
      expect.arrayContaining([
        { start: '2026-02-28T23:00:00.000Z', end: '2026-03-31T22:00:00.000Z' },
        { start: '2026-03-31T22:00:00.000Z', end: '2026-04-30T22:00:00.000Z' },
      ]),
    );
  });

  it('fires a threshold two transactions cross at once exactly once, and delivers it once', async () => {
    const [first, second] = await Promise.all([fire(gateway, standing('alert-race', 100n, [100])), fire(gateway, standing('alert-race', 101n, [100]))]);

    expect([...first, ...second]).toHaveLength(1);
    await until(() => receiver.of('alert-race').length === 1, 'the alert delivered');
    await someRounds();
    expect(receiver.of('alert-race')).toHaveLength(1);
    expect(await storedAlerts(gateway, 'alert-race')).toHaveLength(1);
  });

  it('retries a refused delivery after its back-off under the same event id, and records the attempts and the last error', async () => {
    receiver.statusFor = (delivery) => (delivery.event.owner_id === 'alert-retry' && receiver.of('alert-retry').length <= 2 ? 500 : 200);
    const [alert] = await fire(gateway, standing('alert-retry', 60n, [50]));

    for (const [attempt, backOffMs] of [
      [1, 1_000],
      [2, 2_000],
    ]) {
      // Retried only once the back-off is over: the test moves the gateway's clock past it.
      await until(async () => {
        const [row] = await storedAlerts(gateway, 'alert-retry');
        return row.attempts === attempt && row.last_error !== null && new Date(row.next_attempt_at).getTime() - gateway.app.get(Clock).now() < 10_000;
      }, `attempt ${attempt} failed`);
      await someRounds();
      expect(receiver.of('alert-retry')).toHaveLength(attempt);
      clockAhead += backOffMs;
    }
    await until(async () => (await storedAlerts(gateway, 'alert-retry'))[0].delivered_at !== null, 'the third attempt delivered');

    const deliveries = receiver.of('alert-retry');
    expect(deliveries).toHaveLength(3);
    expect(deliveries.map((delivery) => delivery.headers['x-gateway-event-id'])).toEqual([alert.id, alert.id, alert.id]);
    expect(new Set(deliveries.map((delivery) => delivery.body)).size).toBe(1);
    expect(deliveries.every((delivery) => signedBySecret(delivery))).toBe(true);
    expect(await storedAlerts(gateway, 'alert-retry')).toEqual([
      expect.objectContaining({ attempts: 3, last_error: 'HTTP 500: receiver broke', delivered_at: expect.anything() }),
    ]);
  });

  it('lists the alerts with their delivery, newest first, by owner, a page at a time', async () => {
    await until(async () => (await storedAlerts(gateway, 'alert-retry'))[0]?.delivered_at !== null, 'the retried alert delivered');

    const retried = await httpCall(gateway.url, 'GET', '/admin/alerts?owner_id=alert-retry');
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({
      data: [
        {
          ...receiver.of('alert-retry')[0].event,
          delivered_at: expect.stringMatching(ISO_INSTANT),
          attempts: 3,
          next_attempt_at: null,
          last_error: 'HTTP 500: receiver broke',
        },
      ],
      next: null,
    });

    const all = await httpCall(gateway.url, 'GET', '/admin/alerts');
    const firedAt = all.body.data.map((alert: { fired_at: string }) => alert.fired_at);
    expect(firedAt).toEqual([...firedAt].sort().reverse());
    expect(all.body.data.map((alert: { owner_id: string }) => alert.owner_id).sort()).toEqual([
      'alert-monthly',
      'alert-monthly',
      'alert-once',
      'alert-once',
      'alert-race',
      'alert-retry',
    ]);

    const first = await httpCall(gateway.url, 'GET', '/admin/alerts?owner_id=alert-once&limit=1');
    const second = await httpCall(gateway.url, 'GET', `/admin/alerts?owner_id=alert-once&limit=1&after=${encodeURIComponent(first.body.next)}`);
    expect(second.body.next).toBeNull();
    expect([first.body.data[0].threshold, second.body.data[0].threshold].sort()).toEqual([50, 80]);
    expect(second.body.data[0]).toMatchObject({ attempts: 1, last_error: null, delivered_at: expect.stringMatching(ISO_INSTANT) });
  });

  it('keeps the list behind the admin token, and names a bad query field', async () => {
    expect((await httpCall(gateway.url, 'GET', '/admin/alerts', undefined, {})).status).toBe(401);
    const bad = await httpCall(gateway.url, 'GET', '/admin/alerts?limit=0');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('limit');
  });

  it('documents the list in the OpenAPI document, with its query and answer', async () => {
    const document = (await httpCall(gateway.url, 'GET', '/admin/docs/openapi.json', undefined, {})).body;
    const route = document.paths['/admin/alerts'].get;

    expect(route.security.map((scheme: object) => Object.keys(scheme)[0]).sort()).toEqual(['bearer', 'gateway_console']);
    expect(route.parameters.map((parameter: { name: string }) => parameter.name).sort()).toEqual(['after', 'limit', 'owner_id']);
    expect(route.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/AlertPage');
    expect(Object.keys(document.components.schemas.AlertView.properties)).toEqual(
      expect.arrayContaining(['id', 'owner_id', 'threshold', 'period', 'budget', 'used', 'fired_at', 'delivered_at', 'attempts', 'last_error']),
    );
  });
});

describe('budget alerts across replicas', () => {
  const receiver = new Receiver();
  let first: GatewayHarness;
  let second: GatewayHarness;

  beforeAll(async () => {
    const receiverUrl = await receiver.start();
    first = await GatewayHarness.start({ settings: alertSettings(`${receiverUrl}/first`) });
    second = await GatewayHarness.start({ settings: alertSettings(`${receiverUrl}/second`), sharing: first });
    await createOwners(first, 'alert-replicas');
  });

  afterAll(async () => {
    await second?.stop();
    await first?.stop();
    await receiver.stop();
  });

  it('sends each alert from one replica only, though both deliver', async () => {
    // A slow receiver keeps each round's claim open, so the other replica claims the rest meanwhile.
    receiver.delayMs = 50;
    const thresholds = Array.from({ length: 100 }, (_, index) => index + 1);

    const fired = await fire(first, standing('alert-replicas', 100n, thresholds));

    expect(fired).toHaveLength(100);
    await until(() => receiver.of('alert-replicas').length >= 100, 'every alert delivered', 20_000);
    await someRounds();
    const ids = receiver.of('alert-replicas').map((delivery) => delivery.event.id);
    expect(ids).toHaveLength(100);
    expect(new Set(ids).size).toBe(100);
    expect(new Set(receiver.of('alert-replicas').map((delivery) => delivery.path))).toEqual(new Set(['/first', '/second']));
    await until(
      async () => (await storedAlerts(first, 'alert-replicas')).every((row) => row.delivered_at !== null && row.attempts === 1),
      'all marked delivered at the first attempt',
    );
  });
});
