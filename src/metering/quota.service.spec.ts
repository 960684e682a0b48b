import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { GatewayError, statusOf } from '../common/gateway-error';
import { NANO_PER_UNIT } from '../config/money';
import { openDataSource } from '../database/data-source';
import { Balance, QuotaService } from './quota.service';
import type { Principal } from '../auth/principal';
import { testPrincipal } from '../../test/support/principal';
import { QuotaSettings } from '../config/settings/metering.settings';

const SETTINGS: QuotaSettings = { balanceTtlMs: 1_000 };

class FakeClock extends Clock {
  private current = Date.parse('2026-03-01T12:00:00Z');

  override now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

const units = (amount: number): bigint => BigInt(amount) * NANO_PER_UNIT;

/** A caller of the owner's, with the key's own budget if given. */
function caller(ownerId: string, keyBudgetNano: bigint | null = null, keyId = `key-of-${ownerId}`): Principal {
  return testPrincipal({ ownerId, keyBudgetNano, keyId });
}

/** `admit` as a promise: it answers a cached balance synchronously (nothing, or a throw). */
async function admit(quota: QuotaService, ownerId: string): Promise<void> {
  return quota.admit(caller(ownerId));
}

interface OwnerRow {
  budget: bigint | null;
  spent?: bigint;
  reserved?: bigint;
}

describe(QuotaService.name, () => {
  let dataSource: DataSource;
  let ownerCount = 0;

  beforeAll(async () => {
    dataSource = await openDataSource({ dataDir: 'memory' });
  });

  afterAll(async () => {
    await dataSource?.destroy();
  });

  /** A fresh owner row; each test works on its own owner. */
  async function owner({ budget, spent = 0n, reserved = 0n }: OwnerRow): Promise<string> {
    ownerCount += 1;
    const id = `owner-${ownerCount}`;
    await dataSource.query(`INSERT INTO quota_owner (id, kind, budget_nano, spent_nano, reserved_nano) VALUES ($1, 'project', $2, $3, $4)`, [
      id,
      budget === null ? null : budget.toString(),
      spent.toString(),
      reserved.toString(),
    ]);
    return id;
  }

  async function setSpent(id: string, spent: bigint): Promise<Balance> {
    await dataSource.query('UPDATE quota_owner SET spent_nano = $2 WHERE id = $1', [id, spent.toString()]);
    const [row] = await dataSource.query('SELECT budget_nano, spent_nano, reserved_nano FROM quota_owner WHERE id = $1', [id]);
    return {
      budgetNano: BigInt(row.budget_nano),
      spentNano: BigInt(row.spent_nano),
      reservedNano: BigInt(row.reserved_nano),
      period: null,
      periodStart: null,
      resetsAt: null,
    };
  }

  function service(source: DataSource = dataSource) {
    const clock = new FakeClock();
    return { quota: new QuotaService(source, clock, SETTINGS), clock };
  }

  async function refusal(attempt: Promise<unknown>): Promise<GatewayError> {
    const outcome = await attempt.then(
      () => undefined,
      (error: unknown) => error,
    );
    if (!(outcome instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(outcome)}`);
    return outcome;
  }

  describe('admission', () => {
    it('admits an owner whose spent and reserved amounts are under the budget', async () => {
      const id = await owner({ budget: units(10), spent: units(6), reserved: units(4) - 1n });

      await expect(admit(service().quota, id)).resolves.toBeUndefined();
    });

    it('refuses with 402 insufficient_quota when spent reaches the budget exactly', async () => {
      const id = await owner({ budget: units(10), spent: units(10) });

      const error = await refusal(admit(service().quota, id));

      expect(error.code).toBe('insufficient_quota');
      expect(statusOf(error.code)).toBe(402);
    });

    it('refuses when spent and reserved together reach the budget', async () => {
      const id = await owner({ budget: units(10), spent: units(6), reserved: units(4) });

      expect((await refusal(admit(service().quota, id))).code).toBe('insufficient_quota');
    });

    it('refuses an owner already over the budget', async () => {
      const id = await owner({ budget: units(10), spent: units(25) });

      expect((await refusal(admit(service().quota, id))).code).toBe('insufficient_quota');
    });

    it('refuses an owner whose budget is zero', async () => {
      const id = await owner({ budget: 0n });

      expect((await refusal(admit(service().quota, id))).code).toBe('insufficient_quota');
    });

    it('always admits an owner without a budget (unlimited)', async () => {
      const id = await owner({ budget: null, spent: units(1_000_000_000), reserved: units(5) });
      const { quota } = service();
      quota.addUnwritten(id, `key-of-${id}`, units(1_000));

      await expect(admit(quota, id)).resolves.toBeUndefined();
    });
  });

  describe('spend not yet written', () => {
    it('answers from a cached balance synchronously, refusals included', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      expect(quota.admit(caller(id))).toBeInstanceOf(Promise);
      await admit(quota, id);

      expect(quota.admit(caller(id))).toBeUndefined();
      quota.addUnwritten(id, `key-of-${id}`, units(10));
      expect(() => quota.admit(caller(id))).toThrow('used up');
    });

    it('counts metered spend at once, before the writer has stored it', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      await admit(quota, id);

      quota.addUnwritten(id, `key-of-${id}`, units(10));

      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });

    it('adds up several unwritten amounts', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      quota.addUnwritten(id, `key-of-${id}`, units(4));
      quota.addUnwritten(id, `key-of-${id}`, units(5));
      await expect(admit(quota, id)).resolves.toBeUndefined();

      quota.addUnwritten(id, `key-of-${id}`, units(1));

      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });

    it('stops counting the amount once written, so it is not counted twice', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      quota.addUnwritten(id, `key-of-${id}`, units(6));

      const stored = await setSpent(id, units(6));
      quota.written(id, units(6), stored);

      await expect(admit(quota, id)).resolves.toBeUndefined();
    });

    it('keeps counting what is still unwritten after a part was written', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      quota.addUnwritten(id, `key-of-${id}`, units(6));
      quota.addUnwritten(id, `key-of-${id}`, units(4));

      const stored = await setSpent(id, units(6));
      quota.written(id, units(6), stored);

      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });

    it('takes the balance a write returned as the fresh balance', async () => {
      const id = await owner({ budget: units(10) });
      const { quota } = service();
      await admit(quota, id);
      quota.addUnwritten(id, `key-of-${id}`, units(10));

      // The write left the owner at 10 in the database; the cached balance must say so at once.
      const stored = await setSpent(id, units(10));
      quota.written(id, units(10), stored);

      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });
  });

  describe('budget periods and key budgets', () => {
    /** An owner with a monthly budget of 10 and `spent` in the month of the fake clock (March 2026). */
    async function monthlyOwner(spent: bigint): Promise<string> {
      const id = await owner({ budget: units(10), spent: units(1_000) });
      await dataSource.query(`UPDATE quota_owner SET budget_period = 'month' WHERE id = $1`, [id]);
      await dataSource.query(`INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano) VALUES ($1, '', '2026-03-01T00:00:00Z', $2)`, [
        id,
        spent.toString(),
      ]);
      return id;
    }

    it("judges an owner with a period by the period's spend, not the lifetime's", async () => {
      const under = await monthlyOwner(units(9));
      const used = await monthlyOwner(units(10));

      await expect(admit(service().quota, under)).resolves.toBeUndefined();
      const error = await refusal(admit(service().quota, used));
      expect(error.message).toBe("The budget of this key's quota owner is used up for this month; it resets at 2026-04-01T00:00:00.000Z.");
    });

    it('reads the balance again when its period ends, however fresh it is', async () => {
      const id = await monthlyOwner(units(10));
      const { quota, clock } = service();
      await refusal(admit(quota, id));

      clock.advance(Date.parse('2026-04-01T00:00:00Z') - clock.now() - 1);
      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
      clock.advance(1);

      await expect(admit(quota, id)).resolves.toBeUndefined();
      expect((await quota.standing(id)).balance?.periodStart).toBe(Date.parse('2026-04-01T00:00:00Z'));
    });

    it("refuses a key whose own budget its spend reached, the owner's budget aside, and only a key with a budget", async () => {
      const id = await owner({ budget: null });
      const keyId = '6f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21';
      await dataSource.query(`INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled) VALUES ($1, $2, 'gk-test', $3, '["*"]', true)`, [
        keyId,
        'e'.repeat(64),
        id,
      ]);
      await dataSource.query(`INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano) VALUES ($1, $2, '-infinity', $3)`, [
        id,
        keyId,
        units(5).toString(),
      ]);
      const { quota } = service();

      await expect(quota.admit(caller(id, units(6), keyId))).resolves.toBeUndefined();
      quota.addUnwritten(id, keyId, units(1));
      expect((await refusal(Promise.resolve().then(() => quota.admit(caller(id, units(6), keyId))))).message).toBe('The budget of this key is used up.');
      expect(quota.admit(caller(id, null, keyId))).toBeUndefined();
    });
  });

  describe('balance cache', () => {
    it('sees spend written by another replica once the balance TTL has passed', async () => {
      const id = await owner({ budget: units(10) });
      const { quota, clock } = service();
      await admit(quota, id);
      await setSpent(id, units(10));

      clock.advance(SETTINGS.balanceTtlMs - 1);
      await expect(admit(quota, id)).resolves.toBeUndefined();

      clock.advance(1);
      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });

    it('keeps the balance a write returned over an older read that was answered after it', async () => {
      const id = await owner({ budget: units(10) });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let readDone!: () => void;
      const read = new Promise<void>((resolve) => (readDone = resolve));
      // The read sees the row before the write, but its answer arrives after the write's.
      const slowReads = {
        query: async (sql: string, parameters: unknown[]) => {
          const rows = await dataSource.query(sql, parameters);
          readDone();
          await held;
          return rows;
        },
      } as unknown as DataSource;
      const { quota } = service(slowReads);

      const reading = admit(quota, id);
      await read;
      quota.written(id, units(10), await setSpent(id, units(10)));
      release();

      expect((await refusal(reading)).code).toBe('insufficient_quota');
      expect((await refusal(admit(quota, id))).code).toBe('insufficient_quota');
    });

    it('keeps admitting on the last known balance while the database is away', async () => {
      const id = await owner({ budget: units(10) });
      const failing = new FailingQueries(dataSource);
      const { quota, clock } = service(failing.asDataSource());
      await admit(quota, id);

      failing.failing = true;
      clock.advance(SETTINGS.balanceTtlMs * 10);

      await expect(admit(quota, id)).resolves.toBeUndefined();
      expect(failing.failedQueries).toBe(1);
    });

    it('answers 503 service_unavailable when the database is away and the owner was never read', async () => {
      const id = await owner({ budget: units(10) });
      const failing = new FailingQueries(dataSource);
      failing.failing = true;

      const error = await refusal(admit(service(failing.asDataSource()).quota, id));

      expect(error.code).toBe('service_unavailable');
    });
  });
});

/** The data source with its query() failing on demand, as when PostgreSQL is unreachable. */
class FailingQueries {
  failing = false;
  failedQueries = 0;

  constructor(private readonly real: DataSource) {}

  asDataSource(): DataSource {
    return new Proxy(this.real, {
      get: (target, property, receiver) => {
        if (property === 'query') {
          return (...args: Parameters<DataSource['query']>) => {
            if (!this.failing) return target.query(...args);
            this.failedQueries += 1;
            return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
          };
        }
        return Reflect.get(target, property, receiver);
      },
    });
  }
}
