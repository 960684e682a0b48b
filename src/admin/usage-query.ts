import type { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import type { UsageDraft } from '../metering/usage-draft';
import type { PriceBasis } from '../metering/pricing';
import type { Page } from './admin-store';

/** A usage record as stored or still queued (the writer's draft). */
export type UsageRow = Omit<UsageDraft, 'usage'> & { usage: UsageDraft['usage'] | null };

export interface UsageFilter {
  ownerId?: string;
  keyId?: string;
  model?: string;
  interface?: string;
  /** An exact status (429), or a class given as its first digit (4 for `4xx`). */
  status?: { exact: number } | { class: number };
  from?: Date;
  to?: Date;
  /** Records carrying every one of these tags. */
  tags?: string[];
  endUser?: string;
}

/** One row of the daily totals: a UTC day, a model and (when grouped so) an owner or a tag. */
export interface DailyTotal {
  day: string;
  model: string;
  ownerId: string | null;
  /** Set when grouped by tag: one of the records' tags, or null for the records without tags. */
  tag?: string | null;
  calls: number;
  failedCalls: number;
  costNano: bigint;
  usage: Record<string, number>;
}

/** Calls started in one minute. */
export interface MinuteTotal {
  minute: Date;
  calls: number;
  failedCalls: number;
  costNano: bigint;
}

/** A usage_record row as the driver returns it. */
export interface UsageRecordRow {
  request_id: string;
  client_request_id: string | null;
  key_id: string;
  owner_id: string;
  model: string;
  interface: string;
  line: string | null;
  translated_to: string | null;
  status: number;
  error_code: string | null;
  stream: boolean;
  usage: Record<string, number> | null;
  cost_nano: string;
  started_at: Date;
  duration_ms: number;
  upstream_headers_ms: number | null;
  tags: string[] | null;
  end_user: string | null;
  lines_tried: string[] | null;
  price_sheet: string | null;
  price_basis: PriceBasis | null;
}

const RECORD_COLUMNS = `request_id, client_request_id, key_id, owner_id, model, interface, line, translated_to, status,
  error_code, stream, usage, cost_nano, started_at, duration_ms, upstream_headers_ms, tags, end_user, lines_tried,
  price_sheet, price_basis`;

function usageRowOf(row: UsageRecordRow): UsageRow {
  return {
    requestId: row.request_id,
    clientRequestId: row.client_request_id,
    keyId: row.key_id,
    ownerId: row.owner_id,
    model: row.model,
    interface: row.interface,
    line: row.line,
    translatedTo: row.translated_to,
    status: row.status,
    errorCode: row.error_code,
    stream: row.stream,
    usage: row.usage,
    costNano: BigInt(row.cost_nano),
    startedAt: new Date(row.started_at),
    durationMs: row.duration_ms,
    upstreamHeadersMs: row.upstream_headers_ms,
    tags: row.tags,
    endUser: row.end_user,
    linesTried: row.lines_tried,
    priceSheet: row.price_sheet,
    priceBasis: row.price_basis,
  };
}

/**
 * Daily totals per model and tag of the UTC days $1 to $2 (owner $3, model $4 when given), summed
 * from the records, since usage_daily has no tags: a record counts under each of its tags, one
 * without tags under NULL; figures summed as the roll-up sums them (migration UsageTotals).
 */
const DAILY_BY_TAG_SQL = `
  WITH tagged AS (
    SELECT (started_at AT TIME ZONE 'UTC')::date AS day, model, tag, status, cost_nano, usage
      FROM usage_record LEFT JOIN LATERAL unnest(tags) AS tag ON true
     WHERE started_at >= $1::date AT TIME ZONE 'UTC' AND started_at < ($2::date + 1) AT TIME ZONE 'UTC'
       AND ($3::varchar IS NULL OR owner_id = $3) AND ($4::varchar IS NULL OR model = $4))
  SELECT to_char(calls.day, 'YYYY-MM-DD') AS day, calls.model, calls.tag, calls.calls, calls.failed_calls, calls.cost_nano,
         coalesce(figures.usage, '{}'::jsonb) AS usage
    FROM (SELECT day, model, tag, count(*) AS calls, count(*) FILTER (WHERE status >= 400) AS failed_calls, sum(cost_nano) AS cost_nano
            FROM tagged GROUP BY 1, 2, 3) calls
    LEFT JOIN (SELECT day, model, tag, jsonb_object_agg(figure, amount) AS usage
                 FROM (SELECT day, model, tag, figure.key AS figure, sum(figure.value::numeric) AS amount
                         FROM tagged, jsonb_each_text(usage) figure GROUP BY 1, 2, 3, 4) per_figure
                GROUP BY 1, 2, 3) figures
      ON figures.day = calls.day AND figures.model = calls.model AND figures.tag IS NOT DISTINCT FROM calls.tag
   ORDER BY calls.day, calls.model, calls.tag NULLS FIRST`;

/** `<time ISO>_<id>` of the last row of a page listed newest first (records, video tasks). */
export function timeCursor(at: Date, id: string): string {
  return `${at.toISOString()}_${id}`;
}

export function parseTimeCursor(after: string): { at: string; id: string } {
  const separator = after.indexOf('_');
  const at = after.slice(0, separator);
  if (separator < 0 || Number.isNaN(Date.parse(at)) || new Date(at).toISOString() !== at) {
    throw new GatewayError('invalid_request', 'after: not a cursor this API gave out (use the `next` value of the previous page).');
  }
  return { at, id: after.slice(separator + 1) };
}

/** Sums figure maps (numbers), for totals taken over several owners. */
function addFigures(into: Record<string, number>, figures: Record<string, number>): void {
  for (const [figure, amount] of Object.entries(figures)) into[figure] = (into[figure] ?? 0) + Number(amount);
}

/** Reads of the usage records and their daily totals, for the admin API. */
export class UsageQuery {
  constructor(private readonly dataSource: DataSource) {}

  async record(requestId: string): Promise<UsageRow | undefined> {
    const [row] = await this.dataSource.query<UsageRecordRow[]>(`SELECT ${RECORD_COLUMNS} FROM usage_record WHERE request_id = $1`, [requestId]);
    return row ? usageRowOf(row) : undefined;
  }

  /** Records matching every given filter, newest first, `limit` at a time. */
  async records(filter: UsageFilter, limit: number, after: string | undefined): Promise<Page<UsageRow>> {
    const conditions: string[] = [];
    const values: unknown[] = [];
    const where = (condition: (placeholder: string) => string, value: unknown) => {
      values.push(value);
      conditions.push(condition(`$${values.length}`));
    };
    if (filter.ownerId !== undefined) where((p) => `owner_id = ${p}`, filter.ownerId);
    if (filter.keyId !== undefined) where((p) => `key_id = ${p}::uuid`, filter.keyId);
    if (filter.model !== undefined) where((p) => `model = ${p}`, filter.model);
    if (filter.interface !== undefined) where((p) => `interface = ${p}`, filter.interface);
    if (filter.status && 'exact' in filter.status) where((p) => `status = ${p}`, filter.status.exact);
    if (filter.status && 'class' in filter.status) where((p) => `status / 100 = ${p}`, filter.status.class);
    if (filter.from) where((p) => `started_at >= ${p}`, filter.from);
    if (filter.to) where((p) => `started_at < ${p}`, filter.to);
    if (filter.tags !== undefined) where((p) => `tags @> ${p}::text[]`, filter.tags);
    if (filter.endUser !== undefined) where((p) => `end_user = ${p}`, filter.endUser);
    if (after !== undefined) {
      const cursor = parseTimeCursor(after);
      values.push(cursor.at, cursor.id);
      conditions.push(`(started_at, request_id) < ($${values.length - 1}::timestamptz, $${values.length})`);
    }
    values.push(limit + 1);
    const rows = await this.dataSource.query<UsageRecordRow[]>(
      `SELECT ${RECORD_COLUMNS} FROM usage_record ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
        ORDER BY started_at DESC, request_id DESC LIMIT $${values.length}`,
      values,
    );
    const records = rows.map(usageRowOf);
    if (records.length <= limit) return { rows: records, next: null };
    const page = records.slice(0, limit);
    const last = page[page.length - 1];
    return { rows: page, next: timeCursor(last.startedAt, last.requestId) };
  }

  /**
   * Daily totals from `usage_daily` (never the records, so a month costs a few rows per
   * model), for UTC days `from` to `to` inclusive, by day and model, or by day, model and owner.
   */
  async daily(range: { from: string; to: string }, filter: { ownerId?: string; model?: string }, byOwner: boolean): Promise<DailyTotal[]> {
    const rows = await this.dataSource.query<
      Array<{ day: string; owner_id: string; model: string; calls: string; failed_calls: string; cost_nano: string; usage: Record<string, number> }>
    >(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, owner_id, model, calls, failed_calls, cost_nano, usage FROM usage_daily
        WHERE day BETWEEN $1::date AND $2::date AND ($3::varchar IS NULL OR owner_id = $3) AND ($4::varchar IS NULL OR model = $4)
        ORDER BY day, model, owner_id`,
      [range.from, range.to, filter.ownerId ?? null, filter.model ?? null],
    );
    const totals = new Map<string, DailyTotal>();
    for (const row of rows) {
      const ownerId = byOwner ? row.owner_id : null;
      const key = `${row.day}\u0000${row.model}\u0000${ownerId ?? ''}`;
      let total = totals.get(key);
      if (!total) {
        total = { day: row.day, model: row.model, ownerId, calls: 0, failedCalls: 0, costNano: 0n, usage: {} };
        totals.set(key, total);
      }
      total.calls += Number(row.calls);
      total.failedCalls += Number(row.failed_calls);
      total.costNano += BigInt(row.cost_nano);
      addFigures(total.usage, row.usage);
    }
    return [...totals.values()];
  }

  /** Daily totals per model and tag (DAILY_BY_TAG_SQL), for UTC days `from` to `to` inclusive: a range of records, kept short by the caller. */
  async dailyByTag(range: { from: string; to: string }, filter: { ownerId?: string; model?: string }): Promise<DailyTotal[]> {
    const rows = await this.dataSource.query<
      Array<{ day: string; model: string; tag: string | null; calls: string; failed_calls: string; cost_nano: string; usage: Record<string, number> }>
    >(DAILY_BY_TAG_SQL, [range.from, range.to, filter.ownerId ?? null, filter.model ?? null]);
    return rows.map((row) => {
      const usage: Record<string, number> = {};
      addFigures(usage, row.usage);
      const costNano = BigInt(row.cost_nano);
      return { day: row.day, model: row.model, ownerId: null, tag: row.tag, calls: Number(row.calls), failedCalls: Number(row.failed_calls), costNano, usage };
    });
  }

  /** Calls per minute since `since` (minutes without calls are left out), oldest first. */
  async minutes(since: Date, filter: { ownerId?: string; model?: string }): Promise<MinuteTotal[]> {
    const rows = await this.dataSource.query<Array<{ minute: Date | string; calls: string; failed_calls: string; cost_nano: string }>>(
      `SELECT date_trunc('minute', started_at) AS minute, count(*) AS calls, count(*) FILTER (WHERE status >= 400) AS failed_calls,
          sum(cost_nano) AS cost_nano
        FROM usage_record WHERE started_at >= $1 AND ($2::varchar IS NULL OR owner_id = $2) AND ($3::varchar IS NULL OR model = $3)
        GROUP BY 1 ORDER BY 1`,
      [since, filter.ownerId ?? null, filter.model ?? null],
    );
    return rows.map((row) => ({
      minute: new Date(row.minute),
      calls: Number(row.calls),
      failedCalls: Number(row.failed_calls),
      costNano: BigInt(row.cost_nano),
    }));
  }

  /**
   * When each key was last used: the start of its newest record (null for none left). One
   * index probe per key (key_id, started_at), however many records a key has.
   */
  async lastUses(keyIds: string[]): Promise<Map<string, Date | null>> {
    if (keyIds.length === 0) return new Map();
    const rows = await this.dataSource.query<Array<{ id: string; last_used_at: Date | string | null }>>(
      `SELECT key.id, (SELECT max(started_at) FROM usage_record WHERE key_id = key.id) AS last_used_at FROM unnest($1::uuid[]) AS key(id)`,
      [keyIds],
    );
    return new Map(rows.map((row) => [row.id, row.last_used_at === null ? null : new Date(row.last_used_at)]));
  }
}
