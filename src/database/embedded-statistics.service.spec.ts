import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { DataSource } from 'typeorm';
import { createEmbeddedTestDatabase, type TestDatabase } from '../../test/support/test-database';
import { openDataSource } from './data-source';
import { EmbeddedStatistics } from './embedded-statistics.service';

const RECORDS = 20_000;
const PAGE = 500;

interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  Plans?: PlanNode[];
}

/** The rows every table scan of the plan returned. */
function rowsScanned(node: PlanNode): number {
  const own = /Scan$/.test(node['Node Type']) && !/^Bitmap Index/.test(node['Node Type']) ? node['Actual Rows'] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsScanned(child), 0);
}

describe(EmbeddedStatistics.name, () => {
  let database: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
    database = await createEmbeddedTestDatabase();
    dataSource = await openDataSource(database.settings);
    await dataSource.query(
      `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, started_at, duration_ms)
       SELECT 'r-' || lpad(g::text, 6, '0'), '00000000-0000-0000-0000-000000000001', 'audited', 'chat-model', 'chat_completions', 200,
              timestamptz '2026-11-01T00:00:00Z' + g * interval '1 second', 1
         FROM generate_series(1, ${RECORDS}) g`,
    );
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await database?.drop();
  });

  /** How many records the spend audit's page query (spend-audit.ts) reads for a page of PAGE near the start. */
  async function recordsReadForOnePage(): Promise<number> {
    const [{ 'QUERY PLAN': plan }] = await dataSource.query<Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>>(
      `EXPLAIN (ANALYZE, FORMAT JSON)
       SELECT request_id, usage, cost_nano::text AS cost_nano, price_sheet, price_basis FROM usage_record
        WHERE owner_id = $1 AND (started_at, request_id) > ($2::timestamptz, $3)
        ORDER BY started_at, request_id LIMIT ${PAGE}`,
      ['audited', '2026-11-01T00:00:10Z', 'r-000010'],
    );
    return rowsScanned(plan[0].Plan);
  }

  it('gives the planner what the tables hold: an audit page then reads its records through an index, not every record after it', async () => {
    // Without statistics the planner takes the table for empty: it reads and sorts all that follows the cursor.
    expect(await recordsReadForOnePage()).toBeGreaterThan(RECORDS / 2);

    await new EmbeddedStatistics(dataSource, new SchedulerRegistry()).runOnce();

    expect(await recordsReadForOnePage()).toBeLessThanOrEqual(PAGE + 1);
    const [{ reltuples }] = await dataSource.query<Array<{ reltuples: number }>>(`SELECT reltuples FROM pg_class WHERE relname = 'usage_record'`);
    expect(reltuples).toBe(RECORDS);
  });

  it('runs a minute after start and then hourly, on the embedded engine only, and stops with the gateway', async () => {
    const scheduler = new SchedulerRegistry();
    const statistics = new EmbeddedStatistics(dataSource, scheduler);
    statistics.onApplicationBootstrap();
    expect(scheduler.getTimeouts()).toEqual(['embedded-statistics-first']);
    expect(scheduler.getIntervals()).toEqual([]);
    statistics.firstRound(); // what that timeout calls
    expect(scheduler.getTimeouts()).toEqual([]);
    expect(scheduler.getIntervals()).toEqual(['embedded-statistics']);
    await statistics.beforeApplicationShutdown();
    expect(scheduler.getIntervals()).toEqual([]);

    const onPostgres = new SchedulerRegistry();
    new EmbeddedStatistics({ options: { type: 'postgres', url: 'postgres://server/db' } } as unknown as DataSource, onPostgres).onApplicationBootstrap();
    expect(onPostgres.getTimeouts()).toEqual([]);
    expect(onPostgres.getIntervals()).toEqual([]);
  });

  it('lets a round in progress finish before the gateway stops, and starts none after', async () => {
    const statistics = new EmbeddedStatistics(dataSource, new SchedulerRegistry());
    const running = statistics.runOnce();
    let finished = false;
    void running.then(() => (finished = true));
    expect(statistics.runOnce()).toBe(running);
    await statistics.beforeApplicationShutdown();
    expect(finished).toBe(true);
    const analysed = async () =>
      (await dataSource.query<Array<{ at: string | null }>>(`SELECT last_analyze::text AS at FROM pg_stat_user_tables WHERE relname = 'usage_record'`))[0].at;
    const before = await analysed();
    await statistics.runOnce();
    expect(await analysed()).toBe(before);
  });

  it('logs a round that failed and leaves the next to try again', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const failing = { options: { driver: {} }, query: () => Promise.reject(new Error('the embedded database is closed')) } as unknown as DataSource;
    const statistics = new EmbeddedStatistics(failing, new SchedulerRegistry());
    await expect(statistics.runOnce()).resolves.toBeUndefined();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('planner statistics not updated: Error: the embedded database is closed'));
    await expect(statistics.runOnce()).resolves.toBeUndefined();
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
