import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { PricingSpec } from '../config/catalog-spec';
import { openDataSource } from '../database/data-source';
import { GatewayError } from '../common/gateway-error';
import { SpendAudit, SpendAuditOptions } from './spend-audit';

/**
 * The spend audit against a real database (the embedded engine), with records, sheets and
 * totals written here by hand: what it recomputes, how it pages, what it counts, what it leaves
 * to retention. Each test has owners of its own and audits only them. The audit through the
 * gateway's own writes: test/usage-verify.e2e-spec.ts.
 */

const DAY_MS = 86_400_000;
/** 12:00 UTC on a fixed day: the tests' "now". */
const NOW = Date.parse('2026-11-20T12:00:00Z');

/** A text model with a long-context tier: 2 and 8 per 1M tokens, 4 and 12 above 1,000 input tokens. */
const TEXT: PricingSpec = {
  prices: { input_tokens: '2', output_tokens: '8' },
  price_tiers: [{ input_tokens_above: 1000, prices: { input_tokens: '4', output_tokens: '12' } }],
};
/** Images format B: 0.04 an image, 0.03 up to 4 MP, 0.02 up to 1 MP; 0.002 an input image. */
const IMAGES: PricingSpec = {
  prices: { output_images: '0.04', input_images: '0.002' },
  price_tiers: [
    { max_output_pixels: 1048576, prices: { output_images: '0.02' } },
    { max_output_pixels: 4194304, prices: { output_images: '0.03' } },
  ],
};
/** Video: 0.05 a second, 0.1 at 1080p. */
const VIDEO: PricingSpec = { prices: { output_seconds: '0.05' }, price_tiers: [{ resolution: ['1080p'], prices: { output_seconds: '0.1' } }] };

interface NewRecord {
  requestId?: string;
  model?: string;
  usage?: Record<string, number> | null;
  costNano: bigint;
  at?: number | string;
  sheet?: string | null;
  basis?: Record<string, unknown> | null;
}

describe('SpendAudit', () => {
  let dataSource: DataSource;
  let owners = 0;
  let sheets = 0;

  beforeAll(async () => {
    dataSource = await openDataSource({ dataDir: 'memory' });
  });

  afterAll(() => dataSource?.destroy());

  const audit = (options: Partial<SpendAuditOptions> = {}) => new SpendAudit(dataSource, { retentionDays: 0, now: () => NOW, ...options });

  /** A fresh owner, its spent amount 0 until records() raise it. */
  async function owner(): Promise<string> {
    owners += 1;
    const id = `audit-owner-${owners}`;
    await dataSource.query(`INSERT INTO quota_owner (id, kind) VALUES ($1, 'project')`, [id]);
    return id;
  }

  /** A stored sheet of these prices, under an id of its own. */
  async function sheet(pricing: PricingSpec | Record<string, unknown>): Promise<string> {
    sheets += 1;
    const id = `sheet-${String(sheets).padStart(26, '0')}`;
    await dataSource.query(`INSERT INTO price_sheet (id, pricing) VALUES ($1, $2::jsonb)`, [id, JSON.stringify(pricing)]);
    return id;
  }

  /**
   * Inserts the owner's records in one statement (the roll-up trigger sums them into the daily
   * totals) and raises its spent amount by their costs, as the usage writer does; the request ids.
   */
  async function records(ownerId: string, rows: NewRecord[]): Promise<string[]> {
    const values: unknown[] = [];
    const ids: string[] = [];
    const tuples = rows.map((row, index) => {
      const requestId = row.requestId ?? `${ownerId}-r${index}`;
      ids.push(requestId);
      const at = row.at ?? NOW - DAY_MS;
      values.push(
        requestId,
        randomUUID(),
        ownerId,
        row.model ?? 'text-model',
        row.usage === undefined ? JSON.stringify({ input_tokens: 500, output_tokens: 100 }) : row.usage === null ? null : JSON.stringify(row.usage),
        row.costNano.toString(),
        typeof at === 'number' ? new Date(at).toISOString() : at,
        row.sheet ?? null,
        row.basis ? JSON.stringify(row.basis) : null,
      );
      const p = values.length - 9;
      return `($${p + 1}, $${p + 2}::uuid, $${p + 3}, $${p + 4}, 'chat_completions', 200, $${p + 5}::jsonb, $${p + 6}::bigint, $${p + 7}::timestamptz, 5, $${p + 8}, $${p + 9}::jsonb)`;
    });
    await dataSource.query(
      `INSERT INTO usage_record (request_id, key_id, owner_id, model, interface, status, usage, cost_nano, started_at, duration_ms, price_sheet, price_basis)
       VALUES ${tuples.join(', ')}`,
      values,
    );
    const total = rows.reduce((sum, row) => sum + row.costNano, 0n);
    await dataSource.query(`UPDATE quota_owner SET spent_nano = spent_nano + $2 WHERE id = $1`, [ownerId, total.toString()]);
    return ids;
  }

  it('recomputes text, long-context, images and video records from their sheets and bases: nothing differs', async () => {
    const ownerId = await owner();
    const [text, images, video] = [await sheet(TEXT), await sheet(IMAGES), await sheet(VIDEO)];
    await records(ownerId, [
      // (500 × 2 + 100 × 8) per 1M tokens: 0.0018.
      { costNano: 1_800_000n, sheet: text },
      // Above 1,000 input tokens the tier prices the whole call: (2,000 × 4 + 100 × 12) per 1M.
      { costNano: 9_200_000n, sheet: text, usage: { input_tokens: 2000, output_tokens: 100 } },
      // A failed call: no figures, nothing to pay.
      { costNano: 0n, sheet: text, usage: null },
      // Two images, each at its pixel tier, and one input image: 0.02 + 0.03 + 0.002.
      {
        costNano: 52_000_000n,
        sheet: images,
        model: 'image-model',
        usage: { output_images: 2, input_images: 1 },
        basis: { output_pixels: [1048576, 4194304] },
      },
      // Five seconds at 1080p.
      { costNano: 500_000_000n, sheet: video, model: 'video-model', usage: { output_seconds: 5 }, basis: { resolution: '1080P', video_input: false } },
    ]);

    expect(await audit().verify({ owner: ownerId })).toEqual({
      owner: ownerId,
      from: null,
      to: null,
      records_checked: 5,
      records_without_prices: 0,
      owners_checked: 1,
      unlisted_differences: 0,
      differences: [],
    });
  });

  it('reports a record whose cost differs from its prices, with its daily total, and leaves the spent amount that matches the totals', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const at = NOW - 2 * DAY_MS;
    const [, drifted] = await records(ownerId, [
      { costNano: 1_800_000n, sheet: text, at },
      { costNano: 1_800_000n, sheet: text, at: at + 1000 },
    ]);
    // Edited after the fact: the daily total and the spent amount keep what was billed.
    await dataSource.query(`UPDATE usage_record SET cost_nano = 1700000 WHERE request_id = $1`, [drifted]);

    const answer = await audit().verify({ owner: ownerId });

    expect(answer.records_checked).toBe(2);
    expect(answer.differences).toEqual([
      {
        kind: 'record_cost',
        request_id: drifted,
        owner_id: ownerId,
        model: 'text-model',
        started_at: new Date(at + 1000).toISOString(),
        cost_nano: '1700000',
        recomputed_nano: '1800000',
        difference_nano: '-100000',
      },
      { kind: 'daily_total', owner_id: ownerId, day: '2026-11-18', model: 'text-model', total_nano: '3600000', records_nano: '3500000' },
    ]);
  });

  it('reports a spent amount that differs from the daily totals, with the days that differ from their records and the records behind them', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const [, drifted] = await records(ownerId, [
      { costNano: 1_800_000n, sheet: text, at: NOW - 3 * DAY_MS },
      { costNano: 1_800_000n, sheet: text, at: NOW - DAY_MS, model: 'other-model' },
    ]);
    await dataSource.query(`UPDATE quota_owner SET spent_nano = spent_nano + 42 WHERE id = $1`, [ownerId]);
    await dataSource.query(`UPDATE usage_record SET cost_nano = 1800007 WHERE request_id = $1`, [drifted]);

    const answer = await audit().verify({ owner: ownerId });

    expect(answer.differences).toEqual([
      expect.objectContaining({ kind: 'record_cost', request_id: drifted, difference_nano: '7' }),
      {
        kind: 'owner_spent',
        owner_id: ownerId,
        spent_nano: '3600042',
        records_nano: '3600000',
        difference_nano: '42',
        days: [{ day: '2026-11-19', model: 'other-model', total_nano: '1800000', records_nano: '1800007', request_ids: [drifted] }],
      },
      { kind: 'daily_total', owner_id: ownerId, day: '2026-11-19', model: 'other-model', total_nano: '1800000', records_nano: '1800007' },
    ]);
  });

  it('reports a record naming a sheet that is not stored, and one whose sheet cannot be read', async () => {
    const ownerId = await owner();
    const unreadable = await sheet({ prices: { input_tokens: 'lots' }, price_tiers: [] });
    const missing = 'f'.repeat(32);
    const [gone, unread] = await records(ownerId, [
      { costNano: 1_800_000n, sheet: missing },
      { costNano: 1_800_000n, sheet: unreadable },
    ]);

    const answer = await audit().verify({ owner: ownerId });

    expect(answer.records_checked).toBe(2);
    expect(answer.differences).toEqual([
      { kind: 'price_sheet_missing', request_id: gone, owner_id: ownerId, price_sheet: missing },
      { kind: 'record_unreadable', request_id: unread, owner_id: ownerId, price_sheet: unreadable, message: expect.stringContaining('input_tokens') },
    ]);
  });

  it('counts records without a sheet as without prices, except those with nothing to price', async () => {
    const ownerId = await owner();
    await records(ownerId, [
      { costNano: 1_800_000n, sheet: null },
      // Kept from before prices were kept, at any cost: not verifiable, not a difference.
      { costNano: 123n, sheet: null },
      { costNano: 0n, sheet: null, usage: null },
      { costNano: 0n, sheet: null, usage: {} },
    ]);

    const answer = await audit().verify({ owner: ownerId });

    expect(answer).toMatchObject({ records_checked: 2, records_without_prices: 2, differences: [] });
  });

  it('reads the records in pages in start order, ties and microseconds included, each once, and each sheet once', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const at = '2026-11-19T10:00:00.123';
    // Seven records, two with the same instant, three a microsecond apart: pages of two cut through both.
    const ids = await records(ownerId, [
      { costNano: 1_800_000n, sheet: text, at: `${at}456Z`, requestId: `${ownerId}-b` },
      { costNano: 1_800_000n, sheet: text, at: `${at}456Z`, requestId: `${ownerId}-a` },
      { costNano: 1_800_000n, sheet: text, at: `${at}457Z` },
      { costNano: 1_800_000n, sheet: text, at: `${at}458Z` },
      { costNano: 1_800_001n, sheet: text, at: `${at}459Z` },
      { costNano: 1_800_000n, sheet: text, at: '2026-11-19T10:00:01Z' },
      { costNano: 1_800_001n, sheet: text, at: '2026-11-19T10:00:02Z' },
    ]);
    const query = jest.spyOn(dataSource, 'query');

    const answer = await audit({ pageSize: 2 }).verify({ owner: ownerId });

    const sheetReads = query.mock.calls.filter(([sql]) => sql.includes('FROM price_sheet'));
    const pageReads = query.mock.calls.filter(([sql]) => sql.includes('FROM usage_record') && sql.includes('LIMIT'));
    query.mockRestore();
    expect(answer.records_checked).toBe(7);
    expect(answer.differences.filter((difference) => difference.kind === 'record_cost').map((difference) => difference.request_id)).toEqual([ids[4], ids[6]]);
    expect(sheetReads).toHaveLength(1);
    expect(pageReads).toHaveLength(4);
  });

  it('lists the first differences of single records and counts the rest', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const ids = await records(
      ownerId,
      [0, 1, 2, 3].map((index) => ({ costNano: 1_800_001n, sheet: text, at: NOW - DAY_MS + index })),
    );

    const answer = await audit({ maxListed: 3 }).verify({ owner: ownerId });

    expect(answer.unlisted_differences).toBe(1);
    expect(answer.differences.map((difference) => ('request_id' in difference ? difference.request_id : difference.kind))).toEqual(ids.slice(0, 3));
  });

  it('checks the records of the range only, and the daily totals of the days it touches', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const [, , late] = await records(ownerId, [
      { costNano: 1_800_001n, sheet: text, at: '2026-11-10T23:00:00Z' },
      { costNano: 1_800_000n, sheet: text, at: '2026-11-12T01:00:00Z' },
      { costNano: 1_800_001n, sheet: text, at: '2026-11-14T00:00:00Z' },
    ]);
    // The early and late records cost 1 more than their prices; every daily total of the owner is 5 off.
    await dataSource.query(`UPDATE usage_daily SET cost_nano = cost_nano + 5 WHERE owner_id = $1`, [ownerId]);

    const middle = await audit().verify({ owner: ownerId, from: '2026-11-11T12:00:00Z', to: '2026-11-14' });
    const last = await audit().verify({ owner: ownerId, from: '2026-11-14', to: '2026-11-14T00:00:00.001Z' });
    const empty = await audit().verify({ owner: ownerId, from: '2026-11-14', to: '2026-11-14' });

    expect(middle).toMatchObject({ from: '2026-11-11T12:00:00.000Z', to: '2026-11-14T00:00:00.000Z', records_checked: 1 });
    expect(middle.differences).toEqual([
      expect.objectContaining({ kind: 'owner_spent', spent_nano: '5400002', records_nano: '5400017', difference_nano: '-15' }),
      // The days touched: the 11th (no records left in it), 12th and 13th, each compared whole.
      { kind: 'daily_total', owner_id: ownerId, day: '2026-11-12', model: 'text-model', total_nano: '1800005', records_nano: '1800000' },
    ]);
    expect(last.records_checked).toBe(1);
    expect(last.differences).toEqual([
      expect.objectContaining({ kind: 'record_cost', request_id: late }),
      expect.objectContaining({ kind: 'owner_spent' }),
      { kind: 'daily_total', owner_id: ownerId, day: '2026-11-14', model: 'text-model', total_nano: '1800006', records_nano: '1800001' },
    ]);
    expect(empty.records_checked).toBe(0);
    expect(empty.differences).toEqual([expect.objectContaining({ kind: 'owner_spent' })]);
  });

  it('leaves alone the days retention may have reached: their totals outlive their records', async () => {
    const ownerId = await owner();
    const text = await sheet(TEXT);
    const [old] = await records(ownerId, [
      { costNano: 1_800_000n, sheet: text, at: NOW - 8 * DAY_MS },
      { costNano: 1_800_000n, sheet: text, at: NOW - 2 * DAY_MS },
    ]);
    // Retention of 7 days deleted the old record; its day's total and the spent amount stay.
    await dataSource.query(`DELETE FROM usage_record WHERE request_id = $1`, [old]);

    const kept = await audit({ retentionDays: 7 }).verify({ owner: ownerId });
    const forgetful = await audit({ retentionDays: 0 }).verify({ owner: ownerId });

    expect(kept).toMatchObject({ records_checked: 1, differences: [] });
    // Without retention configured, the deleted record's day no longer adds up.
    expect(forgetful.differences).toEqual([
      { kind: 'daily_total', owner_id: ownerId, day: '2026-11-12', model: 'text-model', total_nano: '1800000', records_nano: '0' },
    ]);
  });

  it('compares every owner without one given, and a missing one as none', async () => {
    const ownerId = await owner();
    await dataSource.query(`UPDATE quota_owner SET spent_nano = 9 WHERE id = $1`, [ownerId]);

    const all = await audit().verify({});
    const nobody = await audit().verify({ owner: 'no-such-owner' });

    expect(all.owners_checked).toBe(owners);
    expect(all.differences).toContainEqual({ kind: 'owner_spent', owner_id: ownerId, spent_nano: '9', records_nano: '0', difference_nano: '9', days: [] });
    expect(nobody).toEqual({
      owner: 'no-such-owner',
      from: null,
      to: null,
      records_checked: 0,
      records_without_prices: 0,
      owners_checked: 0,
      unlisted_differences: 0,
      differences: [],
    });
  });

  it('refuses a range that ends before it starts and an instant without a zone', async () => {
    const ends = await audit()
      .verify({ from: '2026-11-02', to: '2026-11-01' })
      .catch((error: unknown) => error);
    const zoneless = await audit()
      .verify({ to: '2026-11-01T10:00:00' })
      .catch((error: unknown) => error);

    expect(ends).toEqual(new GatewayError('invalid_request', 'to: must not be before from'));
    expect(zoneless).toBeInstanceOf(GatewayError);
    expect((zoneless as GatewayError).message).toMatch(/^to: must be an ISO 8601 date/);
  });
});
