import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { returnedRows } from '../database/returned-rows';
import { fireAlerts, lockedKeyBalance, lockedOwnerBalance, lockStanding, moveTaskMoney, Moved, movedOf } from '../metering/budget-ledger';
import { AlertDelivery } from '../governance/alert-delivery';
import type { UsageFigures } from '../metering/usage-figures';
import type { PriceBasis } from '../metering/pricing';
import { namedSheet, storeSheetsSql } from '../metering/price-sheets';
import { Settlement, SUBMITTING, VideoTask } from './video-task.entity';
import { isTaskId } from './task-ids';
import { Clock } from '../common/clock';

/** A task about to be submitted: every column the submit knows. */
export type NewVideoTask = Pick<
  VideoTask,
  | 'id'
  | 'ownerId'
  | 'keyId'
  | 'interface'
  | 'model'
  | 'draft'
  | 'durationSeconds'
  | 'resolution'
  | 'videoInput'
  | 'inputImageCount'
  | 'reservedNano'
  | 'pricing'
  | 'submitRequestId'
  | 'clientRequestId'
  | 'submittedAt'
  | 'nextPollAt'
  | 'tags'
  | 'endUser'
>;

/** How a task ends, and what it costs. */
export interface SettlementEntry {
  status: string;
  settlement: Settlement;
  costNano: bigint;
  figures: UsageFigures | undefined;
  settledAt: Date;
  /** `error_code` of the usage record: null for a billed success, else why it was not billed normally. */
  errorCode: string | null;
  /** The prices the cost was worked out with (metering/price-sheets.ts); null when not priced from figures. */
  priceSheet: string | null;
  priceBasis: PriceBasis | null;
}

/** A reservation refused: the budget it did not fit (the owner's or the key's own). */
export interface Refused {
  refused: 'owner' | 'key';
}

/**
 * The video tasks' rows and the owner money that moves with them. Every change of money is
 * one transaction with the task change that causes it, and each is conditional, so a task is
 * reserved once, released once and settled once whatever runs concurrently (DESIGN.md 4).
 */
@Injectable()
export class VideoTaskStore {
  private readonly logger = new Logger('VideoTasks');

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly alerts: AlertDelivery,
  ) {}

  /**
   * Takes the task's reservation from its owner's budget and the key's own, in the budget
   * period of its submit, and creates the task (status `submitting`), atomically. Refused when
   * the reservation does not fit either: nothing is written. `pending` is spend this replica
   * has metered but not yet written.
   */
  reserve(task: NewVideoTask, pending: { owner: bigint; key: bigint }): Promise<Moved | Refused> {
    return this.dataSource
      .transaction(async (manager) => {
        const locked = await lockStanding(manager, task.ownerId, task.keyId, task.submittedAt);
        if (!locked.owner) return { refused: 'owner' as const };
        if (!fits(lockedOwnerBalance(locked.owner, locked.periods), pending.owner + task.reservedNano)) return { refused: 'owner' as const };
        const key = lockedKeyBalance(locked.owner, task.keyId, locked.keyBudgetNano, locked.periods);
        if (!fits(key, pending.key + task.reservedNano)) return { refused: 'key' as const };
        const window = locked.owner.period_start === null ? null : new Date(locked.owner.period_start);
        const moved = await this.moveAndAlert(manager, { ownerId: task.ownerId, keyId: task.keyId, budgetWindow: window }, task.reservedNano, 0n);
        await manager.getRepository(VideoTask).insert({ ...task, budgetWindow: window, status: SUBMITTING, line: null, upstreamTaskId: null });
        return moved;
      })
      .then((outcome) => this.alerted(outcome));
  }

  /** The upstream accepted the submit: the task gets its upstream id and line. */
  async confirm(id: string, upstreamTaskId: string, line: string, nextPollAt: Date): Promise<void> {
    await this.dataSource.query(`UPDATE video_task SET upstream_task_id = $2, line = $3, status = 'queued', next_poll_at = $4 WHERE id = $1`, [
      id,
      upstreamTaskId,
      line,
      nextPollAt,
    ]);
  }

  /** The submit did not create an upstream task: the row goes and its reservation comes back. */
  abandon(id: string): Promise<({ ownerId: string; keyId: string } & Moved) | undefined> {
    return this.dataSource
      .transaction(async (manager) => {
        const [task] = returnedRows<{ owner_id: string; key_id: string; reserved_nano: string; budget_window: Date | null }>(
          await manager.query(
            `DELETE FROM video_task WHERE id = $1 AND upstream_task_id IS NULL AND settled_at IS NULL RETURNING owner_id, key_id, reserved_nano, budget_window`,
            [id],
          ),
        );
        if (!task) return undefined;
        const owner = { ownerId: task.owner_id, keyId: task.key_id, budgetWindow: task.budget_window };
        return { ownerId: owner.ownerId, keyId: owner.keyId, ...(await this.moveMoney(manager, owner, BigInt(task.reserved_nano), 0n)) };
      })
      .then((outcome) => this.alerted(outcome));
  }

  /**
   * The task of a gateway id; null for anything else. Only the gateway's own id form is looked
   * up: PostgreSQL refuses a NUL byte in text, and a guessed id must be a 404, not a 500.
   */
  async find(id: string): Promise<VideoTask | null> {
    if (!isTaskId(id)) return null;
    return this.dataSource.getRepository(VideoTask).findOneBy({ id });
  }

  /**
   * A query saw the task still in progress. The reconciler's polls count and set the next poll
   * time; a client's query (`nextPollAt` null) only updates the status.
   */
  async observed(id: string, status: string, nextPollAt: Date | null, countPoll: boolean): Promise<void> {
    await this.dataSource.query(
      `UPDATE video_task SET status = $2, next_poll_at = COALESCE($3, next_poll_at),
         polls = polls + $4, poll_failures = CASE WHEN $4 = 1 THEN 0 ELSE poll_failures END,
         last_error = CASE WHEN $4 = 1 THEN NULL ELSE last_error END
       WHERE id = $1 AND settled_at IS NULL`,
      [id, status, nextPollAt, countPoll ? 1 : 0],
    );
  }

  /** A poll got no usable answer. */
  async pollFailed(id: string, error: string, nextPollAt: Date): Promise<void> {
    await this.dataSource.query(
      `UPDATE video_task SET polls = polls + 1, poll_failures = poll_failures + 1, last_error = $2, next_poll_at = $3
       WHERE id = $1 AND settled_at IS NULL`,
      [id, error.slice(0, 256), nextPollAt],
    );
  }

  /**
   * Claims up to `limit` unsettled tasks that are due, for one replica: their next poll time
   * moves to `leaseUntil` in the same statement, and rows another replica is claiming are
   * skipped (`FOR UPDATE SKIP LOCKED`), so no two replicas poll one task at once.
   */
  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<VideoTask[]> {
    const claimed = returnedRows<{ id: string }>(
      await this.dataSource.query(
        `UPDATE video_task SET next_poll_at = $2
         WHERE id IN (
           SELECT id FROM video_task WHERE settled_at IS NULL AND next_poll_at <= $1
           ORDER BY next_poll_at LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [now, leaseUntil, limit],
      ),
    );
    if (claimed.length === 0) return [];
    return this.dataSource.getRepository(VideoTask).findBy({ id: In(claimed.map((row) => row.id)) });
  }

  /**
   * Ends the task, exactly once: marks it settled, releases its reservation, adds its cost to
   * the owner's spend and writes its usage record under the submit's request id, in one
   * transaction. Undefined when the task was settled already (by this or another replica).
   * Spend follows the records: should that request id have a record already, it stands and the
   * task's cost is not added (logged), as the usage writer adds no spend for a record it skips.
   */
  settle(task: VideoTask, entry: SettlementEntry): Promise<Moved | undefined> {
    return this.dataSource
      .transaction(async (manager) => {
        const [row] = returnedRows<{ reserved_nano: string }>(
          await manager.query(
            `UPDATE video_task SET status = $2, settled_at = $3, settlement = $4, cost_nano = $5, usage = $6
           WHERE id = $1 AND settled_at IS NULL RETURNING reserved_nano`,
            [task.id, entry.status, entry.settledAt, entry.settlement, entry.costNano.toString(), entry.figures ? JSON.stringify(entry.figures) : null],
          ),
        );
        if (!row) return undefined;
        const sheet = entry.priceSheet === null ? undefined : namedSheet(entry.priceSheet);
        if (sheet) await manager.query(storeSheetsSql(1), [sheet.id, sheet.pricing]);
        const stored = returnedRows<unknown>(
          await manager.query(
            `INSERT INTO usage_record (request_id, client_request_id, key_id, owner_id, model, interface, line, translated_to,
           status, error_code, stream, usage, cost_nano, started_at, duration_ms, upstream_headers_ms, tags, end_user, price_sheet, price_basis)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, 200, $8, false, $9, $10, $11, $12, NULL, $13, $14, $15, $16)
         ON CONFLICT (request_id) DO NOTHING RETURNING 1`,
            [
              task.submitRequestId,
              task.clientRequestId,
              task.keyId,
              task.ownerId,
              task.model,
              task.interface,
              task.line,
              entry.errorCode,
              entry.figures ? JSON.stringify(entry.figures) : null,
              entry.costNano.toString(),
              task.submittedAt,
              Math.max(0, entry.settledAt.getTime() - task.submittedAt.getTime()),
              task.tags,
              task.endUser,
              sheet?.id ?? null,
              sheet && entry.priceBasis ? JSON.stringify(entry.priceBasis) : null,
            ],
          ),
        );
        if (stored.length === 0) {
          this.logger.warn({
            msg: `video task ${task.id}: its submit's request id has a usage record already, which stands; the task's cost of ${entry.costNano} nano is not added to the spend`,
            request_id: task.submitRequestId,
            task_id: task.id,
          });
        }
        return this.moveMoney(manager, task, BigInt(row.reserved_nano), stored.length > 0 ? entry.costNano : 0n);
      })
      .then((outcome) => this.alerted(outcome));
  }

  /** Releases a task's reservation and adds its cost, in the period of its submit. */
  private async moveMoney(
    manager: EntityManager,
    task: Pick<VideoTask, 'ownerId' | 'keyId' | 'budgetWindow'>,
    releasedNano: bigint,
    spentNano: bigint,
  ): Promise<Moved> {
    return this.moveAndAlert(manager, task, -releasedNano, spentNano);
  }

  /** Moves the money and fires the owner's alert thresholds it reached; `alerted` is read once the transaction is in. */
  private async moveAndAlert(
    manager: EntityManager,
    task: Pick<VideoTask, 'ownerId' | 'keyId' | 'budgetWindow'>,
    reservedDelta: bigint,
    spentNano: bigint,
  ): Promise<Moved & { alerted: boolean }> {
    const now = new Date(this.clock.now());
    const window = task.budgetWindow === null ? null : new Date(task.budgetWindow);
    const moved = await moveTaskMoney(manager, { ownerId: task.ownerId, keyId: task.keyId, window }, reservedDelta, spentNano, now);
    const alerted = moved.owner ? await fireAlerts(manager, [moved.owner], moved.periods, now) : false;
    return { ...movedOf(moved.owner, task.keyId, moved.periods), alerted };
  }

  /** Has fired alerts sent now that their transaction is in. */
  private alerted<T>(outcome: T): T {
    if (outcome && typeof outcome === 'object' && 'alerted' in outcome && outcome.alerted) this.alerts.nudge();
    return outcome;
  }
}

/** Whether `more` fits the balance's budget beside what it holds already. */
function fits(balance: { budgetNano: bigint | null; spentNano: bigint; reservedNano: bigint }, more: bigint): boolean {
  return balance.budgetNano === null || balance.spentNano + balance.reservedNano + more <= balance.budgetNano;
}
