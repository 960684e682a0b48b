import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, In } from 'typeorm';
import { returnedRows } from '../database/returned-rows';
import { BalanceRow, balanceOf, OwnerBalance } from '../metering/quota.service';
import type { UsageFigures } from '../metering/usage-figures';
import { Settlement, SUBMITTING, VideoTask } from './video-task.entity';
import { isTaskId } from './task-ids';

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
}

const BALANCE = 'RETURNING budget_nano, spent_nano, reserved_nano';

/**
 * The video tasks' rows and the owner money that moves with them. Every change of money is
 * one transaction with the task change that causes it, and each is conditional, so a task is
 * reserved once, released once and settled once whatever runs concurrently (DESIGN.md 4).
 */
@Injectable()
export class VideoTaskStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Takes the task's reservation from its owner's budget and creates the task (status
   * `submitting`), atomically. Null when the reservation does not fit: nothing is written.
   * `pendingNano` is spend this replica has metered but not yet written.
   */
  reserve(task: NewVideoTask, pendingNano: bigint): Promise<OwnerBalance | null> {
    return this.dataSource.transaction(async (manager) => {
      const [row] = returnedRows<BalanceRow>(
        await manager.query(
          `UPDATE quota_owner SET reserved_nano = reserved_nano + $2, updated_at = now()
           WHERE id = $1 AND (budget_nano IS NULL OR spent_nano + reserved_nano + $3 + $2 <= budget_nano) ${BALANCE}`,
          [task.ownerId, task.reservedNano.toString(), pendingNano.toString()],
        ),
      );
      if (!row) return null;
      await manager.getRepository(VideoTask).insert({ ...task, status: SUBMITTING, line: null, upstreamTaskId: null });
      return balanceOf(row);
    });
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
  abandon(id: string): Promise<{ ownerId: string; balance: OwnerBalance | undefined } | undefined> {
    return this.dataSource.transaction(async (manager) => {
      const [task] = returnedRows<{ owner_id: string; reserved_nano: string }>(
        await manager.query(`DELETE FROM video_task WHERE id = $1 AND upstream_task_id IS NULL AND settled_at IS NULL RETURNING owner_id, reserved_nano`, [id]),
      );
      if (!task) return undefined;
      return { ownerId: task.owner_id, balance: await this.moveMoney(manager, task.owner_id, BigInt(task.reserved_nano), 0n) };
    });
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
   */
  settle(task: VideoTask, entry: SettlementEntry): Promise<OwnerBalance | undefined> {
    return this.dataSource.transaction(async (manager) => {
      const [row] = returnedRows<{ reserved_nano: string }>(
        await manager.query(
          `UPDATE video_task SET status = $2, settled_at = $3, settlement = $4, cost_nano = $5, usage = $6
           WHERE id = $1 AND settled_at IS NULL RETURNING reserved_nano`,
          [task.id, entry.status, entry.settledAt, entry.settlement, entry.costNano.toString(), entry.figures ? JSON.stringify(entry.figures) : null],
        ),
      );
      if (!row) return undefined;
      await manager.query(
        `INSERT INTO usage_record (request_id, client_request_id, key_id, owner_id, model, interface, line, translated_to,
           status, error_code, stream, usage, cost_nano, started_at, duration_ms, upstream_headers_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, 200, $8, false, $9, $10, $11, $12, NULL)
         ON CONFLICT (request_id) DO NOTHING`,
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
        ],
      );
      return this.moveMoney(manager, task.ownerId, BigInt(row.reserved_nano), entry.costNano);
    });
  }

  private async moveMoney(manager: EntityManager, ownerId: string, releasedNano: bigint, spentNano: bigint): Promise<OwnerBalance | undefined> {
    const [row] = returnedRows<BalanceRow>(
      await manager.query(
        `UPDATE quota_owner SET reserved_nano = reserved_nano - $2, spent_nano = spent_nano + $3, updated_at = now() WHERE id = $1 ${BALANCE}`,
        [ownerId, releasedNano.toString(), spentNano.toString()],
      ),
    );
    return row ? balanceOf(row) : undefined;
  }
}
