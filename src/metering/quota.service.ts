import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import { QUOTA_SETTINGS, QuotaSettings } from '../config/settings/metering.settings';

export interface OwnerBalance {
  budgetNano: bigint | null;
  spentNano: bigint;
  reservedNano: bigint;
}

/** An owner row's money columns as the drivers return them (bigint as text). */
export interface BalanceRow {
  budget_nano: string | null;
  spent_nano: string;
  reserved_nano: string;
}

export function balanceOf(row: BalanceRow): OwnerBalance {
  return {
    budgetNano: row.budget_nano === null ? null : BigInt(row.budget_nano),
    spentNano: BigInt(row.spent_nano),
    reservedNano: BigInt(row.reserved_nano),
  };
}

interface CachedBalance {
  balance: OwnerBalance;
  loadedAt: number;
  /** Counts the balances this replica took for the owner, so a slow read cannot replace a newer one. */
  version: number;
}

/**
 * Admission against an owner's budget (DESIGN.md section 4: admitted while
 * spent + reserved < budget). Balances come from a short-lived in-process cache; spend this
 * replica has metered but not yet written counts at once, so a burst cannot outrun the
 * batched writer. Across replicas the overshoot is bounded by the calls in flight plus the
 * calls admitted while another replica's spend is on its way: one flush interval of its writer
 * and one TTL of this cache (docs/operations.md "Several replicas").
 */
@Injectable()
export class QuotaService {
  private readonly balances = new Map<string, CachedBalance>();
  private readonly loading = new Map<string, Promise<OwnerBalance | null>>();
  private readonly unwritten = new Map<string, bigint>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    @Inject(QUOTA_SETTINGS) private readonly settings: QuotaSettings,
  ) {}

  /**
   * Throws 402 `insufficient_quota` when the owner's budget is used up. Answered synchronously
   * (nothing, or a throw) while the owner's balance is cached, as it is for all but the first
   * call of a TTL.
   */
  admit(ownerId: string): void | Promise<void> {
    const cached = this.balances.get(ownerId);
    if (cached && this.isFresh(cached)) return this.check(ownerId, cached.balance);
    return this.reload(ownerId, cached).then((balance) => this.check(ownerId, balance));
  }

  private check(ownerId: string, balance: OwnerBalance | null): void {
    if (!balance || balance.budgetNano === null) return;
    const used = balance.spentNano + balance.reservedNano + (this.unwritten.get(ownerId) ?? 0n);
    if (used >= balance.budgetNano) {
      throw new GatewayError('insufficient_quota', "The budget of this key's quota owner is used up.");
    }
  }

  /** A metered cost that is queued for writing. */
  addUnwritten(ownerId: string, costNano: bigint): void {
    if (costNano === 0n) return;
    this.unwritten.set(ownerId, (this.unwritten.get(ownerId) ?? 0n) + costNano);
  }

  /** Spend this replica has metered and not yet written. */
  pending(ownerId: string): bigint {
    return this.unwritten.get(ownerId) ?? 0n;
  }

  /** The owner's row as a write just left it (a reservation, a release, a settlement). */
  observed(ownerId: string, balance: OwnerBalance): void {
    this.keep(ownerId, balance);
  }

  /** The queued cost is now in the database; `balance` is the row as the write left it. */
  written(ownerId: string, costNano: bigint, balance: OwnerBalance | undefined): void {
    const left = (this.unwritten.get(ownerId) ?? 0n) - costNano;
    if (left > 0n) this.unwritten.set(ownerId, left);
    else this.unwritten.delete(ownerId);
    if (balance) this.keep(ownerId, balance);
  }

  private keep(ownerId: string, balance: OwnerBalance): void {
    const version = (this.balances.get(ownerId)?.version ?? 0) + 1;
    this.balances.set(ownerId, { balance, loadedAt: this.clock.now(), version });
  }

  private isFresh(cached: CachedBalance): boolean {
    return this.clock.now() - cached.loadedAt < this.settings.balanceTtlMs;
  }

  /** The owner's row as the database has it now (null: no such owner); throws when the database does not answer. */
  async read(ownerId: string): Promise<OwnerBalance | null> {
    const rows: BalanceRow[] = await this.dataSource.query('SELECT budget_nano, spent_nano, reserved_nano FROM quota_owner WHERE id = $1', [ownerId]);
    return rows[0] ? balanceOf(rows[0]) : null;
  }

  /** The owner's balance read again; calls that find it stale at once share one read. */
  private reload(ownerId: string, stale: CachedBalance | undefined): Promise<OwnerBalance | null> {
    let pending = this.loading.get(ownerId);
    if (!pending) {
      pending = this.load(ownerId, stale);
      this.loading.set(ownerId, pending);
    }
    return pending;
  }

  private async load(ownerId: string, stale: CachedBalance | undefined): Promise<OwnerBalance | null> {
    try {
      const read = await this.read(ownerId);
      if (!read) return null;
      // A write that returned the row while this read was on its way knows better.
      const newer = this.balances.get(ownerId);
      if (newer && newer.version !== stale?.version) return newer.balance;
      const balance = read;
      this.keep(ownerId, balance);
      return balance;
    } catch {
      // The database is away: keep admitting on the last known balance.
      if (stale) return stale.balance;
      throw new GatewayError('service_unavailable', 'The gateway cannot check budgets right now; retry shortly.', 1);
    } finally {
      this.loading.delete(ownerId);
    }
  }
}
