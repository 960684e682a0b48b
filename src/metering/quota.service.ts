import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Principal } from '../auth/principal';
import { Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import { QUOTA_SETTINGS, QuotaSettings } from '../config/settings/metering.settings';
import { Balance, BudgetPeriod, millis } from './budget-ledger';

export type { Balance } from './budget-ledger';

/** A balance as the read below returns it (bigint and times as the drivers give them). */
interface BalanceRow {
  budget_nano: string | null;
  spent_nano: string;
  reserved_nano: string;
  budget_period: BudgetPeriod | null;
  period_start: Date | string | null;
  period_end: Date | string | null;
}

function balanceOf(row: BalanceRow): Balance {
  return {
    budgetNano: row.budget_nano === null ? null : BigInt(row.budget_nano),
    spentNano: BigInt(row.spent_nano),
    reservedNano: BigInt(row.reserved_nano),
    period: row.budget_period,
    periodStart: row.period_start === null ? null : millis(row.period_start),
    resetsAt: row.period_end === null ? null : millis(row.period_end),
  };
}

const PERIOD = `CASE WHEN o.budget_period IS NULL THEN NULL ELSE budget_period_start(o.budget_period, o.budget_timezone, $2) END`;
const PERIOD_END = `CASE WHEN o.budget_period IS NULL THEN NULL ELSE budget_period_end(o.budget_period, o.budget_timezone, $2) END`;

/** An owner's budget: for good, or its current period's (the owner's own row of `budget_spend`). */
const OWNER_BALANCE_SQL = `SELECT o.budget_nano, o.budget_period, ${PERIOD} AS period_start, ${PERIOD_END} AS period_end,
    CASE WHEN o.budget_period IS NULL THEN o.spent_nano ELSE coalesce(s.spent_nano, 0) END AS spent_nano,
    CASE WHEN o.budget_period IS NULL THEN o.reserved_nano ELSE coalesce(s.reserved_nano, 0) END AS reserved_nano
  FROM quota_owner o
  LEFT JOIN budget_spend s ON s.owner_id = o.id AND s.key_id = '' AND s.period_start = budget_period_start(o.budget_period, o.budget_timezone, $2)
  WHERE o.id = $1`;

/** A key's own budget, in its owner's period. */
const KEY_BALANCE_SQL = `SELECT k.budget_nano, o.budget_period, ${PERIOD} AS period_start, ${PERIOD_END} AS period_end,
    coalesce(s.spent_nano, 0) AS spent_nano, coalesce(s.reserved_nano, 0) AS reserved_nano
  FROM api_key k JOIN quota_owner o ON o.id = k.owner_id
  LEFT JOIN budget_spend s ON s.owner_id = k.owner_id AND s.key_id = k.id::text
    AND s.period_start = budget_period_start(o.budget_period, o.budget_timezone, $2)
  WHERE k.id = $1`;

interface CachedBalance {
  balance: Balance;
  loadedAt: number;
  /** Counts the balances this replica took for the subject, so a slow read cannot replace a newer one. */
  version: number;
}

/**
 * Balances of one kind of budget (owners', keys'): a short-lived cache of what the database
 * says, plus what this replica metered and has not written yet.
 */
class BalanceBook {
  private readonly balances = new Map<string, CachedBalance>();
  private readonly loading = new Map<string, Promise<Balance | null>>();
  private readonly unwritten = new Map<string, bigint>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly read: (id: string) => Promise<Balance | null>,
  ) {}

  /** The cached balance while fresh and in its period, else read again; then `check` judges it. */
  admit(id: string, check: (balance: Balance | null, used: bigint) => void): void | Promise<void> {
    const cached = this.balances.get(id);
    if (cached && this.isFresh(cached)) return check(cached.balance, this.used(id, cached.balance));
    return this.reload(id, cached).then((balance) => check(balance, balance ? this.used(id, balance) : 0n));
  }

  /**
   * The balance as admission sees it now (cached while fresh, else read again) and what this
   * replica metered and has not written: taken together, as a write that lands meanwhile moves
   * its cost from one to the other at once.
   */
  async standing(id: string): Promise<{ balance: Balance | null; pendingNano: bigint }> {
    const cached = this.balances.get(id);
    const balance = cached && this.isFresh(cached) ? cached.balance : await this.reload(id, cached);
    return { balance, pendingNano: this.pending(id) };
  }

  private used(id: string, balance: Balance): bigint {
    return balance.spentNano + balance.reservedNano + (this.unwritten.get(id) ?? 0n);
  }

  addUnwritten(id: string, costNano: bigint): void {
    this.unwritten.set(id, (this.unwritten.get(id) ?? 0n) + costNano);
  }

  pending(id: string): bigint {
    return this.unwritten.get(id) ?? 0n;
  }

  observed(id: string, balance: Balance | undefined): void {
    if (balance) this.keep(id, balance);
  }

  written(id: string, costNano: bigint, balance: Balance | undefined): void {
    const left = (this.unwritten.get(id) ?? 0n) - costNano;
    if (left > 0n) this.unwritten.set(id, left);
    else this.unwritten.delete(id);
    if (balance) this.keep(id, balance);
  }

  private keep(id: string, balance: Balance): void {
    const version = (this.balances.get(id)?.version ?? 0) + 1;
    this.balances.set(id, { balance, loadedAt: this.clock.now(), version });
  }

  private isFresh(cached: CachedBalance): boolean {
    const now = this.clock.now();
    return now - cached.loadedAt < this.ttlMs && (cached.balance.resetsAt === null || now < cached.balance.resetsAt);
  }

  /** The balance read again; calls that find it stale at once share one read. */
  private reload(id: string, stale: CachedBalance | undefined): Promise<Balance | null> {
    let pending = this.loading.get(id);
    if (!pending) {
      pending = this.load(id, stale);
      this.loading.set(id, pending);
    }
    return pending;
  }

  private async load(id: string, stale: CachedBalance | undefined): Promise<Balance | null> {
    try {
      const read = await this.read(id);
      if (!read) return null;
      // A write that returned the row while this read was on its way knows better.
      const newer = this.balances.get(id);
      if (newer && newer.version !== stale?.version && newer.balance.periodStart === read.periodStart) return newer.balance;
      this.keep(id, read);
      return read;
    } catch {
      // The database is away: keep admitting on the last known balance.
      if (stale) return stale.balance;
      throw new GatewayError('service_unavailable', 'The gateway cannot check budgets right now; retry shortly.', 1);
    } finally {
      this.loading.delete(id);
    }
  }
}

/** "for this month; it resets at …" for a budget with a period, "" for one without. */
function periodText(balance: Balance): string {
  if (balance.period === null || balance.resetsAt === null) return '';
  return ` for this ${balance.period}; it resets at ${new Date(balance.resetsAt).toISOString()}`;
}

function checkOwner(balance: Balance | null, used: bigint): void {
  if (!balance || balance.budgetNano === null || used < balance.budgetNano) return;
  throw new GatewayError('insufficient_quota', `The budget of this key's quota owner is used up${periodText(balance)}.`);
}

/** A key's budget is the key's as its cached principal has it; its balance gives the spend. */
function checkKey(budgetNano: bigint, balance: Balance | null, used: bigint): void {
  if (!balance || used < budgetNano) return;
  throw new GatewayError('insufficient_quota', `The budget of this key is used up${periodText(balance)}.`);
}

/**
 * Admission against budgets (DESIGN.md section 4: admitted while spent + reserved < budget):
 * the owner's, and the key's own when it has one, each for good or in the owner's current
 * period (docs/configuration.md "Budgets"). Balances come from a short-lived in-process cache;
 * spend this replica has metered but not yet written counts at once, so a burst cannot outrun
 * the batched writer. Across replicas the overshoot is bounded by the calls in flight plus the
 * calls admitted while another replica's spend is on its way: one flush interval of its writer
 * and one TTL of this cache (docs/operations.md "Several replicas"). A cached balance whose
 * period has ended is read again before the next call.
 */
@Injectable()
export class QuotaService {
  private readonly owners: BalanceBook;
  private readonly keys: BalanceBook;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    @Inject(QUOTA_SETTINGS) settings: QuotaSettings,
  ) {
    this.owners = new BalanceBook(clock, settings.balanceTtlMs, (id) => this.readWith(OWNER_BALANCE_SQL, id));
    this.keys = new BalanceBook(clock, settings.balanceTtlMs, (id) => this.readWith(KEY_BALANCE_SQL, id));
  }

  /**
   * Throws 402 `insufficient_quota` when the owner's budget or the key's own is used up.
   * Answered synchronously (nothing, or a throw) while the balances are cached, as they are for
   * all but the first call of a TTL.
   */
  admit(principal: Principal): void | Promise<void> {
    const owner = this.owners.admit(principal.ownerId, checkOwner);
    const keyBudget = principal.keyBudgetNano;
    if (keyBudget === null) return owner;
    const key = () => this.keys.admit(principal.keyId, (balance, used) => checkKey(keyBudget, balance, used));
    return owner ? owner.then(key) : key();
  }

  /** A metered cost that is queued for writing. */
  addUnwritten(ownerId: string, keyId: string, costNano: bigint): void {
    if (costNano === 0n) return;
    this.owners.addUnwritten(ownerId, costNano);
    this.keys.addUnwritten(keyId, costNano);
  }

  /** Spend this replica has metered and not yet written, of an owner. */
  pending(ownerId: string): bigint {
    return this.owners.pending(ownerId);
  }

  /** The same, of a key. */
  pendingOfKey(keyId: string): bigint {
    return this.keys.pending(keyId);
  }

  /** The owner's current balance as a write just left it (a reservation, a release, a settlement). */
  observed(ownerId: string, balance: Balance | undefined): void {
    this.owners.observed(ownerId, balance);
  }

  observedKey(keyId: string, balance: Balance | undefined): void {
    this.keys.observed(keyId, balance);
  }

  /** The owner's queued cost is now in the database; `balance` is its current balance as the write left it. */
  written(ownerId: string, costNano: bigint, balance: Balance | undefined): void {
    this.owners.written(ownerId, costNano, balance);
  }

  writtenOfKey(keyId: string, costNano: bigint, balance: Balance | undefined): void {
    this.keys.written(keyId, costNano, balance);
  }

  /**
   * The owner's current balance as admission counts it, with the spend this replica has not
   * written yet (a balance read apart from that figure could miss a write landing between them).
   */
  standing(ownerId: string): Promise<{ balance: Balance | null; pendingNano: bigint }> {
    return this.owners.standing(ownerId);
  }

  /** The same of a key's own (its spend in its owner's period, whether or not it has a budget). */
  standingOfKey(keyId: string): Promise<{ balance: Balance | null; pendingNano: bigint }> {
    return this.keys.standing(keyId);
  }

  private async readWith(sql: string, id: string): Promise<Balance | null> {
    const rows: BalanceRow[] = await this.dataSource.query(sql, [id, new Date(this.clock.now())]);
    return rows[0] ? balanceOf(rows[0]) : null;
  }
}
