import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { Rounds } from '../common/rounds';
import { USAGE_RETENTION_SETTINGS, UsageRetentionSettings } from '../config/settings/metering.settings';

const INTERVAL_NAME = 'usage-retention';
const DAY_MS = 86_400_000;
/** Between two batches, so the deletes never hold the database for long. */
const PAUSE_MS = 20;

/**
 * Deletes usage records older than the retention period, in small batches, and the budget
 * periods and delivered alerts that ended before it; the daily totals (`usage_daily`, kept by
 * the database at insert time) stay. Replicas may run rounds at once:
 * each batch takes only rows no other replica has locked (`SKIP LOCKED`).
 */
@Injectable()
export class UsageRetention implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('UsageRetention');
  private readonly rounds: Rounds<number>;

  constructor(
    private readonly dataSource: DataSource,
    scheduler: SchedulerRegistry,
    private readonly clock: Clock,
    @Inject(USAGE_RETENTION_SETTINGS) private readonly settings: UsageRetentionSettings,
  ) {
    this.rounds = new Rounds(scheduler, INTERVAL_NAME, () => this.deleteExpired(), 0);
  }

  onApplicationBootstrap(): void {
    if (this.settings.days <= 0 || this.settings.intervalMs <= 0) return;
    this.rounds.every(this.settings.intervalMs);
    void this.runOnce();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.rounds.stop();
  }

  /** One round: deletes every record past the period; resolves to how many. Rounds never overlap. */
  runOnce(): Promise<number> {
    return this.rounds.run();
  }

  private async deleteExpired(): Promise<number> {
    if (this.settings.days <= 0) return 0;
    const cutoff = new Date(this.clock.now() - this.settings.days * DAY_MS);
    let total = 0;
    try {
      for (;;) {
        const [{ deleted }] = await this.dataSource.query<Array<{ deleted: number }>>(
          `WITH gone AS (
             DELETE FROM usage_record WHERE request_id IN (
               SELECT request_id FROM usage_record WHERE started_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
             RETURNING 1)
           SELECT count(*)::int AS deleted FROM gone`,
          [cutoff, this.settings.batchSize],
        );
        total += deleted;
        if (deleted < this.settings.batchSize || this.rounds.isStopped) break;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      }
      await this.deletePastPeriods(cutoff);
    } catch (error) {
      this.logger.warn(`usage retention stopped after ${total} records: ${String(error)}; the next round goes on`);
    }
    if (total > 0) this.logger.log(`deleted ${total} usage records started before ${cutoff.toISOString()}`);
    return total;
  }

  /**
   * Budget periods that ended before the cutoff (a period is at most 31 days long, so one that
   * started 32 days before it has ended) and the alerts of such periods, delivered: their records
   * are gone too. An alert of a period still running stays, or it would fire again.
   */
  private async deletePastPeriods(cutoff: Date): Promise<void> {
    const ended = new Date(cutoff.getTime() - 32 * DAY_MS);
    await this.dataSource.query(`DELETE FROM budget_spend WHERE period_start > '-infinity' AND period_start < $1`, [ended]);
    await this.dataSource.query(`DELETE FROM budget_alert WHERE delivered_at IS NOT NULL AND period_end < $1`, [cutoff]);
  }
}
