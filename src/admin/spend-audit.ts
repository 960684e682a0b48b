import type { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { type Pricing, pricingOf, type PricingSpec } from '../config/catalog-spec';
import { type PriceBasis, recordCostOf } from '../metering/pricing';
import type { UsageFigures } from '../metering/usage-figures';
import { expiryOf } from './admin-values';
import type { SpendAuditQuery } from './admin.dto';
import {
  type DailyDifferenceView,
  type DailyTotalDifference,
  LISTED_RECORD_DIFFERENCES,
  type OwnerSpentDifference,
  type SpendAuditView,
  type SpendDifference,
} from './admin.views';

const DAY_MS = 86_400_000;
/** Records read per statement: a page at a time, so an audit of millions holds one page. */
const PAGE_SIZE = 5_000;
/**
 * Days compared with their records start this long after the retention cutoff, so a replica
 * whose clock runs a little ahead, deleting a little later than this process thinks, never
 * makes a day look short.
 */
const RETENTION_MARGIN_MS = 3_600_000;

export interface SpendAuditOptions {
  /** USAGE_RETENTION_DAYS of the gateway: records older than this many days are gone, their totals stay; 0: kept for good. */
  retentionDays: number;
  /** The time (ms) the retention cutoff is counted back from. */
  now?: () => number;
  /** Records read per statement. */
  pageSize?: number;
  /** The most differences of single records one answer lists. */
  maxListed?: number;
}

/** A usage record as the audit reads it. */
interface RecordRow {
  request_id: string;
  owner_id: string;
  model: string;
  started_at: Date | string;
  /** started_at to the microsecond, for the next page's cursor. */
  cursor_at: string;
  usage: UsageFigures | null;
  cost_nano: string;
  price_sheet: string | null;
  price_basis: PriceBasis | null;
}

/** A stored sheet as the audit knows it: its prices, or why there are none. */
type Sheet = { pricing: Pricing } | { missing: true } | { unreadable: string };

/** A (day, owner, model) whose daily total differs from its records, as the database compares them. */
interface DailyRow {
  day: string;
  owner_id: string;
  model: string;
  total_nano: string;
  records_nano: string;
}

/** A UTC day as YYYY-MM-DD. */
function dayOf(time: number): string {
  return new Date(time).toISOString().slice(0, 10);
}

function instantOf(value: string | undefined, field: string): Date | undefined {
  return value === undefined ? undefined : expiryOf(value, field)!;
}

/** The audit's range as instants, checked as the usage list checks its own (a 400 naming the field). */
export function spendAuditRange(query: Pick<SpendAuditQuery, 'from' | 'to'>): { from: Date | undefined; to: Date | undefined } {
  const from = instantOf(query.from, 'from');
  const to = instantOf(query.to, 'to');
  if (from && to && to < from) throw new GatewayError('invalid_request', 'to: must not be before from');
  return { from, to };
}

/** The record has nothing to price: no sheet is needed to know its cost of 0 is right. */
function pricedAtNothing(row: RecordRow): boolean {
  return BigInt(row.cost_nano) === 0n && (row.usage === null || Object.keys(row.usage).length === 0);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Daily totals (`usage_daily`) that differ from the sum of the records stored for their day,
 * owner and model, over UTC days $1 to $2 (either null: unbounded) and owners $3 (null: all).
 * One statement, so a batch of records landing meanwhile is either in both sides or in neither
 * (the roll-up trigger writes the totals in the records' transaction). A day without records
 * left compares with 0, records without a total with a total of 0.
 */
const DAILY_DIFFERENCES_SQL = `
  WITH totals AS (
    SELECT day, owner_id, model, cost_nano FROM usage_daily
     WHERE ($1::date IS NULL OR day >= $1::date) AND ($2::date IS NULL OR day <= $2::date)
       AND ($3::varchar[] IS NULL OR owner_id = ANY($3::varchar[]))),
  sums AS (
    SELECT (started_at AT TIME ZONE 'UTC')::date AS day, owner_id, model, sum(cost_nano) AS cost_nano FROM usage_record
     WHERE ($1::date IS NULL OR started_at >= $1::date AT TIME ZONE 'UTC') AND ($2::date IS NULL OR started_at < ($2::date + 1) AT TIME ZONE 'UTC')
       AND ($3::varchar[] IS NULL OR owner_id = ANY($3::varchar[]))
     GROUP BY 1, 2, 3)
  SELECT to_char(day, 'YYYY-MM-DD') AS day, owner_id, model,
         coalesce(totals.cost_nano, 0)::text AS total_nano, coalesce(sums.cost_nano, 0)::text AS records_nano
    FROM totals FULL JOIN sums USING (day, owner_id, model)
   WHERE coalesce(totals.cost_nano, 0) <> coalesce(sums.cost_nano, 0)
   ORDER BY owner_id, day, model`;

/**
 * Owners' lifetime spent amounts beside the sum of their daily totals, in one statement (a batch
 * raises both in one transaction); every owner, or the one given ($1).
 */
const OWNER_SPENT_SQL = `
  SELECT o.id, o.spent_nano::text AS spent_nano, coalesce(d.cost_nano, 0)::text AS records_nano
    FROM quota_owner o
    LEFT JOIN (SELECT owner_id, sum(cost_nano) AS cost_nano FROM usage_daily WHERE $1::varchar IS NULL OR owner_id = $1 GROUP BY owner_id) d
      ON d.owner_id = o.id
   WHERE $1::varchar IS NULL OR o.id = $1
   ORDER BY o.id`;

/**
 * The spend audit, for the admin API and the command line: every usage record's cost worked
 * out again from its figures at the prices it was billed at (its price sheet and price basis),
 * each owner's lifetime spent amount against its daily totals, and the daily totals against the
 * records they were summed from, on the days retention has not reached. Read only.
 */
export class SpendAudit {
  private readonly now: () => number;
  private readonly pageSize: number;
  private readonly maxListed: number;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: SpendAuditOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.pageSize = options.pageSize ?? PAGE_SIZE;
    this.maxListed = options.maxListed ?? LISTED_RECORD_DIFFERENCES;
  }

  async verify(query: SpendAuditQuery): Promise<SpendAuditView> {
    const { from, to } = spendAuditRange(query);
    const owner = query.owner;

    const records = await this.checkRecords(owner, from, to);
    const owners = await this.checkOwners(owner, records.costDifferences);
    const daily = await this.checkDays(owner, from, to);

    return {
      owner: owner ?? null,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      records_checked: records.checked,
      records_without_prices: records.withoutPrices,
      owners_checked: owners.checked,
      unlisted_differences: records.unlisted,
      differences: [...records.differences, ...owners.differences, ...daily],
    };
  }

  /** Every record of the filter, a page at a time in start order, its cost against its prices. */
  private async checkRecords(owner: string | undefined, from: Date | undefined, to: Date | undefined) {
    const sheets = new Map<string, Sheet>();
    const differences: SpendDifference[] = [];
    /** Request ids of the listed cost differences, by `day|owner|model`, for the owners' days. */
    const costDifferences = new Map<string, string[]>();
    let checked = 0;
    let withoutPrices = 0;
    let unlisted = 0;
    const found = (difference: SpendDifference) => {
      if (differences.length < this.maxListed) differences.push(difference);
      else unlisted += 1;
    };

    let cursor: { at: string; id: string } | undefined;
    for (;;) {
      const page = await this.recordPage(owner, from, to, cursor);
      await this.loadSheets(page, sheets);
      for (const row of page) {
        if (row.price_sheet === null) {
          if (pricedAtNothing(row)) checked += 1;
          else withoutPrices += 1;
          continue;
        }
        checked += 1;
        const sheet = sheets.get(row.price_sheet)!;
        if ('missing' in sheet) {
          found({ kind: 'price_sheet_missing', request_id: row.request_id, owner_id: row.owner_id, price_sheet: row.price_sheet });
          continue;
        }
        let recomputed: bigint;
        try {
          if ('unreadable' in sheet) throw new Error(`price sheet ${row.price_sheet}: ${sheet.unreadable}`);
          recomputed = recordCostOf(row.usage ?? undefined, sheet.pricing, row.price_basis);
        } catch (error) {
          found({ kind: 'record_unreadable', request_id: row.request_id, owner_id: row.owner_id, price_sheet: row.price_sheet, message: messageOf(error) });
          continue;
        }
        const cost = BigInt(row.cost_nano);
        if (cost === recomputed) continue;
        const startedAt = new Date(row.started_at);
        const listed = differences.length < this.maxListed;
        found({
          kind: 'record_cost',
          request_id: row.request_id,
          owner_id: row.owner_id,
          model: row.model,
          started_at: startedAt.toISOString(),
          cost_nano: cost.toString(),
          recomputed_nano: recomputed.toString(),
          difference_nano: (cost - recomputed).toString(),
        });
        if (listed) {
          const key = `${dayOf(startedAt.getTime())}|${row.owner_id}|${row.model}`;
          costDifferences.set(key, [...(costDifferences.get(key) ?? []), row.request_id]);
        }
      }
      if (page.length < this.pageSize) break;
      const last = page[page.length - 1];
      cursor = { at: last.cursor_at, id: last.request_id };
    }
    return { checked, withoutPrices, unlisted, differences, costDifferences };
  }

  private recordPage(
    owner: string | undefined,
    from: Date | undefined,
    to: Date | undefined,
    cursor: { at: string; id: string } | undefined,
  ): Promise<RecordRow[]> {
    const conditions: string[] = [];
    const values: unknown[] = [];
    const where = (condition: (placeholder: string) => string, value: unknown) => {
      values.push(value);
      conditions.push(condition(`$${values.length}`));
    };
    if (owner !== undefined) where((p) => `owner_id = ${p}`, owner);
    if (from) where((p) => `started_at >= ${p}`, from);
    if (to) where((p) => `started_at < ${p}`, to);
    if (cursor) {
      values.push(cursor.at, cursor.id);
      conditions.push(`(started_at, request_id) > ($${values.length - 1}::timestamptz, $${values.length})`);
    }
    values.push(this.pageSize);
    return this.dataSource.query<RecordRow[]>(
      `SELECT request_id, owner_id, model, started_at, to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at,
              usage, cost_nano::text AS cost_nano, price_sheet, price_basis
         FROM usage_record ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
        ORDER BY started_at, request_id LIMIT $${values.length}`,
      values,
    );
  }

  /** Reads the sheets a page names that the audit has not read yet: a few per catalog, one more per price change. */
  private async loadSheets(page: RecordRow[], sheets: Map<string, Sheet>): Promise<void> {
    const wanted = [...new Set(page.map((row) => row.price_sheet).filter((id): id is string => id !== null && !sheets.has(id)))];
    if (wanted.length === 0) return;
    const rows = await this.dataSource.query<Array<{ id: string; pricing: PricingSpec | string }>>(
      `SELECT id, pricing FROM price_sheet WHERE id = ANY($1::varchar[])`,
      [wanted],
    );
    for (const id of wanted) sheets.set(id, { missing: true });
    for (const row of rows) {
      try {
        const spec = typeof row.pricing === 'string' ? (JSON.parse(row.pricing) as PricingSpec) : row.pricing;
        sheets.set(row.id, { pricing: pricingOf(spec) });
      } catch (error) {
        sheets.set(row.id, { unreadable: messageOf(error) });
      }
    }
  }

  /**
   * Each owner's spent amount against the sum of its daily totals (all time: retention leaves the
   * totals); for an owner whose amounts differ, the days that differ from their records.
   */
  private async checkOwners(owner: string | undefined, costDifferences: Map<string, string[]>) {
    const rows = await this.dataSource.query<Array<{ id: string; spent_nano: string; records_nano: string }>>(OWNER_SPENT_SQL, [owner ?? null]);
    const differing = rows.filter((row) => BigInt(row.spent_nano) !== BigInt(row.records_nano));
    const days =
      differing.length === 0
        ? []
        : await this.dailyDifferences(
            this.firstIntactDay(),
            null,
            differing.map((row) => row.id),
          );
    const differences: OwnerSpentDifference[] = differing.map((row) => ({
      kind: 'owner_spent',
      owner_id: row.id,
      spent_nano: row.spent_nano,
      records_nano: row.records_nano,
      difference_nano: (BigInt(row.spent_nano) - BigInt(row.records_nano)).toString(),
      days: days
        .filter((day) => day.owner_id === row.id)
        .map((day): DailyDifferenceView => {
          const requestIds = costDifferences.get(`${day.day}|${day.owner_id}|${day.model}`);
          return {
            day: day.day,
            model: day.model,
            total_nano: day.total_nano,
            records_nano: day.records_nano,
            ...(requestIds ? { request_ids: requestIds } : {}),
          };
        }),
    }));
    return { checked: rows.length, differences };
  }

  /** Daily totals of the days the range touches (all days without one) that differ from their records. */
  private async checkDays(owner: string | undefined, from: Date | undefined, to: Date | undefined): Promise<DailyTotalDifference[]> {
    if (from && to && to.getTime() === from.getTime()) return [];
    const intact = this.firstIntactDay();
    const first = from === undefined ? intact : intact === null || from.getTime() > intact ? Math.floor(from.getTime() / DAY_MS) * DAY_MS : intact;
    const last = to === undefined ? null : Math.floor((to.getTime() - 1) / DAY_MS) * DAY_MS;
    if (first !== null && last !== null && last < first) return [];
    const rows = await this.dailyDifferences(first, last, owner === undefined ? null : [owner]);
    return rows.map((row) => ({
      kind: 'daily_total',
      owner_id: row.owner_id,
      day: row.day,
      model: row.model,
      total_nano: row.total_nano,
      records_nano: row.records_nano,
    }));
  }

  private dailyDifferences(first: number | null, last: number | null, owners: string[] | null): Promise<DailyRow[]> {
    return this.dataSource.query<DailyRow[]>(DAILY_DIFFERENCES_SQL, [first === null ? null : dayOf(first), last === null ? null : dayOf(last), owners]);
  }

  /**
   * Midnight UTC of the first day retention has not reached, with RETENTION_MARGIN_MS to spare:
   * its records are all still stored, so its totals must equal their sum. Null without retention.
   */
  private firstIntactDay(): number | null {
    if (this.options.retentionDays <= 0) return null;
    const cutoff = this.now() - this.options.retentionDays * DAY_MS + RETENTION_MARGIN_MS;
    return Math.ceil(cutoff / DAY_MS) * DAY_MS;
  }
}
