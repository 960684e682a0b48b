import { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import type { UsageDraft } from '../metering/usage-draft';
import { expiryOf } from './admin-values';
import { UsageFilter, UsageQuery } from './usage-query';
import type { DailyQuery, MinutesQuery, UsageListQuery } from './admin.dto';
import { dailyView, usageView } from './admin.views';
import { minuteView } from './operations.views';

const DEFAULT_PAGE = 100;
const MAX_DAYS = 366;
/** Totals by tag are summed from the records themselves: a month at most. */
const MAX_TAG_DAYS = 31;
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

function instantOf(value: string | undefined, field: string): Date | undefined {
  return value === undefined ? undefined : expiryOf(value, field)!;
}

/** Midnight UTC of a YYYY-MM-DD day that exists (2026-02-30 does not). */
function calendarDay(day: string, field: string): number {
  const time = Date.parse(`${day}T00:00:00Z`);
  // Year 0 parses in JavaScript but not in PostgreSQL, which has no year 0.
  if (Number.isNaN(time) || new Date(time).toISOString().slice(0, 10) !== day || day.startsWith('0000')) {
    throw new GatewayError('invalid_request', `${field}: ${day} is not a calendar date`);
  }
  return time;
}

function statusFilter(status: string | undefined): UsageFilter['status'] {
  if (status === undefined) return undefined;
  return status.endsWith('xx') ? { class: Number(status[0]) } : { exact: Number(status) };
}

/**
 * The usage look-ups of the admin API and the command line: one record by request id, a page of
 * records, daily totals, each checked and shaped the same way for both.
 */
export class UsageReads {
  private readonly usage: UsageQuery;

  /** `findQueued`: a record this process has not written yet (the API's usage writer); none for the command line. */
  constructor(
    dataSource: DataSource,
    private readonly findQueued: (requestId: string) => UsageDraft | undefined = () => undefined,
  ) {
    this.usage = new UsageQuery(dataSource);
  }

  async usageRecord(requestId: string) {
    const queued = this.findQueued(requestId);
    if (queued) return usageView(queued, false);
    const stored = await this.usage.record(requestId);
    if (!stored) throw new GatewayError('not_found', `No usage record has the request id ${JSON.stringify(requestId)}.`);
    return usageView(stored, true);
  }

  async usageRecords(query: UsageListQuery) {
    const filter: UsageFilter = {
      ownerId: query.owner,
      keyId: query.key,
      model: query.model,
      interface: query.interface,
      status: statusFilter(query.status),
      from: instantOf(query.from, 'from'),
      to: instantOf(query.to, 'to'),
      tags: query.tag,
      endUser: query.end_user,
    };
    if (filter.from && filter.to && filter.to < filter.from) throw new GatewayError('invalid_request', 'to: must not be before from');
    const page = await this.usage.records(filter, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map((row) => usageView(row, true)), next: page.next };
  }

  async dailyTotals(query: DailyQuery) {
    const from = calendarDay(query.from, 'from');
    const to = calendarDay(query.to, 'to');
    if (to < from) throw new GatewayError('invalid_request', 'to: must not be before from');
    if ((to - from) / DAY_MS >= MAX_DAYS) throw new GatewayError('invalid_request', `to: at most ${MAX_DAYS} days after from`);
    const filter = { ownerId: query.owner, model: query.model };
    if (query.group_by === 'tag') {
      if ((to - from) / DAY_MS >= MAX_TAG_DAYS) {
        throw new GatewayError('invalid_request', `to: group_by=tag covers at most ${MAX_TAG_DAYS} days, from and to included`);
      }
      return { data: (await this.usage.dailyByTag(query, filter)).map(dailyView) };
    }
    const totals = await this.usage.daily(query, filter, query.group_by === 'owner');
    return { data: totals.map(dailyView) };
  }

  lastUses(keyIds: string[]) {
    return this.usage.lastUses(keyIds);
  }

  /** Calls per minute over the last `minutes` minutes (default 180). */
  async minuteTotals(query: MinutesQuery, now: Date = new Date()) {
    const since = new Date(Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS - ((query.minutes ?? 180) - 1) * MINUTE_MS);
    const totals = await this.usage.minutes(since, { ownerId: query.owner, model: query.model });
    return { data: totals.map(minuteView) };
  }
}
