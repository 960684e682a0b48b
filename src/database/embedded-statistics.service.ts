import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { Rounds } from '../common/rounds';
import { isEmbedded } from './data-source';

const FIRST_NAME = 'embedded-statistics-first';
const INTERVAL_NAME = 'embedded-statistics';
/** The first round: after start-up's own work (migrations, the catalog, the first calls). */
const FIRST_AFTER_MS = 60_000;
/** Then: a table's statistics need its shape (rows per page, how values spread), not its latest row. */
const EVERY_MS = 3_600_000;

/**
 * Keeps the embedded database's planner statistics. On a PostgreSQL server autovacuum analyses
 * tables as they change; PGlite runs no autovacuum, so without this the planner never learns
 * what a table holds. Over usage records it then picks plans for an empty table: a page of the
 * spend audit read and sorted every record after its cursor instead of the next page through an
 * index, which made an audit of 2.65 million records take longer than 5 minutes. `ANALYZE`
 * samples each table; about 0.2-0.3 s of the engine's thread at a million records, a minute
 * after start and then hourly. Does nothing on PostgreSQL.
 */
@Injectable()
export class EmbeddedStatistics implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EmbeddedStatistics');
  private readonly rounds: Rounds<void>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly scheduler: SchedulerRegistry,
  ) {
    this.rounds = new Rounds(scheduler, INTERVAL_NAME, () => this.analyze(), undefined);
  }

  onApplicationBootstrap(): void {
    if (!isEmbedded(this.dataSource)) return;
    const first = setTimeout(() => this.firstRound(), FIRST_AFTER_MS);
    first.unref();
    this.scheduler.addTimeout(FIRST_NAME, first);
  }

  /** The first round, a minute after start; it sets the hourly ones going. */
  firstRound(): void {
    if (this.scheduler.doesExist('timeout', FIRST_NAME)) this.scheduler.deleteTimeout(FIRST_NAME);
    if (this.rounds.isStopped) return;
    void this.runOnce();
    this.rounds.every(EVERY_MS);
  }

  beforeApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('timeout', FIRST_NAME)) this.scheduler.deleteTimeout(FIRST_NAME);
    return this.rounds.stop();
  }

  /** One round of `ANALYZE` over every table; rounds never overlap, and a failed one is logged and left to the next. */
  runOnce(): Promise<void> {
    return this.rounds.run();
  }

  private async analyze(): Promise<void> {
    const started = Date.now();
    try {
      await this.dataSource.query('ANALYZE');
      this.logger.debug(`planner statistics updated in ${Date.now() - started} ms`);
    } catch (error) {
      this.logger.warn(`planner statistics not updated: ${String(error)}; the next round tries again`);
    }
  }
}
