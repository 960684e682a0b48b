import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { openDataSource } from '../database/data-source';
import type { AlertDelivery } from '../governance/alert-delivery';
import { NewVideoTask, VideoTaskStore } from '../video/video-task.store';
import { newTaskId } from '../video/task-ids';
import type { VideoTask } from '../video/video-task.entity';
import { addSpend, recountPeriod } from './budget-ledger';
import { SlotSpend, SPEND_SLOT_MS } from './usage-lines';

/**
 * The money statements against a real database (the embedded engine): where a cost lands by
 * the time its call started, where a video task's reservation and cost land by its submit,
 * and what a period set on an owner that has spent counts.
 */

const JAN_31_LATE = Date.parse('2027-01-31T23:50:00Z');
const FEB_1_EARLY = Date.parse('2027-02-01T00:05:00Z');
const JAN = '2027-01-01T00:00:00.000Z';
const FEB = '2027-02-01T00:00:00.000Z';

class SetClock extends Clock {
  at = JAN_31_LATE;
  override now(): number {
    return this.at;
  }
}

describe('budget ledger', () => {
  let dataSource: DataSource;
  let owners = 0;

  beforeAll(async () => {
    dataSource = await openDataSource({ dataDir: 'memory' });
  });

  afterAll(() => dataSource?.destroy());

  /** A fresh owner with one key; the owner has a monthly budget unless said otherwise. */
  async function owner(period: string | null = 'month', budget = 1_000_000n, keyBudget: bigint | null = null): Promise<{ ownerId: string; keyId: string }> {
    owners += 1;
    const ownerId = `ledger-owner-${owners}`;
    const keyId = randomUUID();
    await dataSource.query(`INSERT INTO quota_owner (id, kind, budget_nano, budget_period) VALUES ($1, 'project', $2, $3)`, [
      ownerId,
      budget.toString(),
      period,
    ]);
    await dataSource.query(
      `INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled, budget_nano) VALUES ($1, $2, 'gk-test', $3, '["*"]', true, $4)`,
      [keyId, randomUUID().replaceAll('-', '').padEnd(64, '0'), ownerId, keyBudget?.toString() ?? null],
    );
    return { ownerId, keyId };
  }

  async function periods(ownerId: string): Promise<Array<{ key_id: string; start: string; spent: string; reserved: string }>> {
    const rows: Array<{ key_id: string; start: Date | string; spent: string; reserved: string }> = await dataSource.query(
      `SELECT key_id, CASE WHEN period_start = '-infinity' THEN NULL ELSE period_start END AS start, spent_nano::text AS spent, reserved_nano::text AS reserved
         FROM budget_spend WHERE owner_id = $1 ORDER BY period_start, key_id`,
      [ownerId],
    );
    return rows.map((row) => ({ ...row, start: row.start === null ? 'for good' : new Date(row.start).toISOString() }));
  }

  function slot(ownerId: string, keyId: string, at: number, costNano: bigint): SlotSpend {
    return { ownerId, keyId, slot: at - (at % SPEND_SLOT_MS), costNano };
  }

  it("adds each cost to the period its call started in, the owner's and the key's, and all of it to the lifetime spend", async () => {
    const { ownerId, keyId } = await owner();

    const written = await dataSource.transaction((manager) =>
      addSpend(manager, [slot(ownerId, keyId, JAN_31_LATE, 30n), slot(ownerId, keyId, FEB_1_EARLY, 12n)], new Date(FEB_1_EARLY)),
    );

    expect(await periods(ownerId)).toEqual([
      { key_id: '', start: JAN, spent: '30', reserved: '0' },
      { key_id: keyId, start: JAN, spent: '30', reserved: '0' },
      { key_id: '', start: FEB, spent: '12', reserved: '0' },
      { key_id: keyId, start: FEB, spent: '12', reserved: '0' },
    ]);
    expect(written.owners).toEqual([expect.objectContaining({ id: ownerId, spent_nano: '42' })]);
    expect(new Date(written.owners[0].period_start!).toISOString()).toBe(FEB);
  });

  it('counts in UTC the periods of a time zone the database does not know, rather than failing the statement', async () => {
    const { ownerId, keyId } = await owner();
    await dataSource.query(`UPDATE quota_owner SET budget_timezone = 'Nowhere/Atlantis' WHERE id = $1`, [ownerId]);

    await dataSource.transaction((manager) => addSpend(manager, [slot(ownerId, keyId, JAN_31_LATE, 7n)], new Date(JAN_31_LATE)));

    expect(await periods(ownerId)).toEqual([
      { key_id: '', start: JAN, spent: '7', reserved: '0' },
      { key_id: keyId, start: JAN, spent: '7', reserved: '0' },
    ]);
  });

  it('keeps a key of an owner without a period for good, and no owner row beside the lifetime columns', async () => {
    const { ownerId, keyId } = await owner(null);

    await dataSource.transaction((manager) => addSpend(manager, [slot(ownerId, keyId, JAN_31_LATE, 5n), slot(ownerId, keyId, FEB_1_EARLY, 6n)], new Date()));

    expect(await periods(ownerId)).toEqual([{ key_id: keyId, start: 'for good', spent: '11', reserved: '0' }]);
  });

  describe('video tasks', () => {
    const clock = new SetClock();
    const alerts = { nudge: () => undefined } as unknown as AlertDelivery;
    let store: VideoTaskStore;

    beforeAll(() => {
      store = new VideoTaskStore(dataSource, clock, alerts);
    });

    function task(ownerId: string, keyId: string, reservedNano: bigint): NewVideoTask {
      return {
        id: newTaskId(),
        ownerId,
        keyId,
        interface: 'video_b',
        model: 'video-model',
        draft: false,
        durationSeconds: 4,
        resolution: null,
        videoInput: false,
        inputImageCount: 0,
        reservedNano,
        pricing: null,
        submitRequestId: randomUUID(),
        clientRequestId: null,
        submittedAt: new Date(clock.now()),
        nextPollAt: new Date(clock.now()),
        tags: null,
        endUser: null,
      };
    }

    it('reserves in the period of the submit and settles there, whenever the settlement comes', async () => {
      const { ownerId, keyId } = await owner();
      clock.at = JAN_31_LATE;
      const submitted = task(ownerId, keyId, 100n);
      const reserved = await store.reserve(submitted, { owner: 0n, key: 0n });
      expect(reserved).toMatchObject({ owner: { reservedNano: 100n, spentNano: 0n }, key: { reservedNano: 100n } });

      clock.at = FEB_1_EARLY;
      const stored = (await store.find(submitted.id)) as VideoTask;
      const settled = await store.settle(stored, {
        status: 'succeeded',
        settlement: 'usage',
        costNano: 70n,
        figures: undefined,
        settledAt: new Date(FEB_1_EARLY),
        errorCode: null,
        priceSheet: null,
        priceBasis: null,
      });

      expect(await periods(ownerId)).toEqual([
        { key_id: '', start: JAN, spent: '70', reserved: '0' },
        { key_id: keyId, start: JAN, spent: '70', reserved: '0' },
      ]);
      // February's figures did not move: what the settlement returns for them is not there.
      expect(settled).toEqual({ owner: undefined, key: undefined, alerted: false });
      const [lifetime] = await dataSource.query(`SELECT spent_nano::text AS spent, reserved_nano::text AS reserved FROM quota_owner WHERE id = $1`, [ownerId]);
      expect(lifetime).toEqual({ spent: '70', reserved: '0' });
    });

    it("refuses a reservation the period's budget or the key's own cannot hold, writing nothing", async () => {
      const { ownerId, keyId } = await owner('month', 150n, 120n);
      clock.at = FEB_1_EARLY;
      await dataSource.transaction((manager) => addSpend(manager, [slot(ownerId, keyId, JAN_31_LATE, 1_000n)], new Date(FEB_1_EARLY)));

      // January's spend is past: February's budget holds a reservation up to the key's 120.
      expect(await store.reserve(task(ownerId, keyId, 120n), { owner: 0n, key: 0n })).toMatchObject({ key: { reservedNano: 120n } });
      expect(await store.reserve(task(ownerId, keyId, 1n), { owner: 0n, key: 0n })).toEqual({ refused: 'key' });
      expect(await store.reserve(task(ownerId, keyId, 31n), { owner: 0n, key: 0n })).toEqual({ refused: 'owner' });
      const [open] = await dataSource.query(`SELECT count(*)::int AS n FROM video_task WHERE owner_id = $1`, [ownerId]);
      expect(open.n).toBe(1);
    });

    it('counts open tasks submitted in a period set afterwards, so their release comes off it', async () => {
      const { ownerId, keyId } = await owner(null);
      clock.at = FEB_1_EARLY;
      const submitted = task(ownerId, keyId, 40n);
      await store.reserve(submitted, { owner: 0n, key: 0n });
      await dataSource.query(`UPDATE quota_owner SET budget_period = 'month' WHERE id = $1`, [ownerId]);

      await dataSource.transaction((manager) => recountPeriod(manager, ownerId, new Date(FEB_1_EARLY)));
      const counted = await periods(ownerId);
      await store.abandon(submitted.id);

      expect(counted).toEqual([
        { key_id: keyId, start: 'for good', spent: '0', reserved: '40' },
        { key_id: '', start: FEB, spent: '0', reserved: '40' },
        { key_id: keyId, start: FEB, spent: '0', reserved: '40' },
      ]);
      expect((await periods(ownerId)).filter((row) => row.start === FEB)).toEqual([
        { key_id: '', start: FEB, spent: '0', reserved: '0' },
        { key_id: keyId, start: FEB, spent: '0', reserved: '0' },
      ]);
    });
  });
});
