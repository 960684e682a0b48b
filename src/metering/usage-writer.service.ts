import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { QuotaService } from './quota.service';
import { addSpend, fireAlerts, keyBalanceOf, OwnerStandingRow, PeriodRow, standingOf } from './budget-ledger';
import { AlertDelivery } from '../governance/alert-delivery';
import { Clock } from '../common/clock';
import { RateLimiter } from '../governance/rate-limiter';
import type { UsageDraft } from './usage-draft';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { returnedRows } from '../database/returned-rows';
import { CopyRows } from '../database/embedded-pool';
import { isEmbedded } from '../database/data-source';
import { draftOfLine, SlotSpend, SPEND_SLOT_MS, USAGE_COLUMNS, UsagePage, UsageQueue } from './usage-lines';
import { type PriceSheet, sheetsToStore, storeSheetsSql } from './price-sheets';
import { USAGE_WRITER_SETTINGS, UsageWriterSettings } from '../config/settings/metering.settings';

const COLUMN_LIST = USAGE_COLUMNS.join(', ');
/** A page's lines where the batch may hold an id already stored: a table of the transaction's own first. */
const INCOMING = 'usage_incoming';
const INCOMING_SQL = `CREATE TEMP TABLE ${INCOMING} ON COMMIT DROP AS SELECT ${COLUMN_LIST} FROM usage_record WITH NO DATA`;
/** Then what is new of them, stored; summed per key and quarter hour of the calls' start for the spend. */
const INSERT_NEW_SQL = `WITH inserted AS (
    INSERT INTO usage_record (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM ${INCOMING}
    ON CONFLICT (request_id) DO NOTHING RETURNING owner_id, key_id, started_at, cost_nano
  ) SELECT owner_id, key_id::text AS key_id, (floor(extract(epoch FROM started_at) * 1000 / ${SPEND_SLOT_MS}) * ${SPEND_SLOT_MS})::text AS slot,
      sum(cost_nano)::text AS cost
    FROM inserted GROUP BY 1, 2, 3`;

function sqlState(error: unknown): string | undefined {
  const failure = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = failure?.code ?? failure?.driverError?.code;
  return typeof code === 'string' ? code : undefined;
}

/** PostgreSQL data exceptions (class 22) and integrity violations (23): the record, not the database. */
function isDataError(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23'));
}

function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

/** What a batch's statements returned. */
interface Written {
  /** The price sheets stored with the batch. */
  sheets: PriceSheet[];
  owners: OwnerStandingRow[];
  periods: PeriodRow[];
  /** Some owner's alert threshold fired. */
  alerted: boolean;
}

function draftForLog(draft: UsageDraft): Record<string, unknown> {
  return { ...draft, costNano: draft.costNano.toString() };
}

/**
 * Writes usage records off the request path, in batches. A batch is one transaction that
 * inserts the records (a request id already stored is skipped, so a retried batch never
 * bills twice) and adds their cost to each owner's spend. While the database is away the
 * records stay queued and the batch is retried with back-off; shutdown waits for the queue.
 */
@Injectable()
export class UsageWriter implements BeforeApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger(UsageWriter.name);
  private readonly queue: UsageQueue;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failures = 0;
  private failedAttempts = 0;
  private stopped = false;
  private readonly embedded: boolean;
  /** Price sheets this writer's database holds: stored with the first batch after they were named. */
  private readonly storedSheets = new Set<string>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly quota: QuotaService,
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly alerts: AlertDelivery,
    @Inject(USAGE_WRITER_SETTINGS) private readonly settings: UsageWriterSettings,
  ) {
    this.embedded = isEmbedded(dataSource);
    this.queue = new UsageQueue(settings.batchSize);
  }

  enqueue(draft: UsageDraft): void {
    this.queue.add(draft);
    this.quota.addUnwritten(draft.ownerId, draft.keyId, draft.costNano);
    if (draft.usage) this.limiter.addTokens(draft.keyId, draft.ownerId, (draft.usage.input_tokens ?? 0) + (draft.usage.output_tokens ?? 0));
    // A full batch goes at once, unless writes are failing: then the back-off timer decides, or
    // every new record would retry at once against a database that is away.
    if (this.queue.depth >= this.settings.batchSize && this.failures === 0) this.flushSoon(0);
    else this.flushSoon(this.settings.flushIntervalMs);
  }

  /** A record still waiting to be written, so lookups see a call at once. */
  findQueued(requestId: string): UsageDraft | undefined {
    const line = this.queue.find(requestId);
    return line === undefined ? undefined : draftOfLine(line);
  }

  get depth(): number {
    return this.queue.depth;
  }

  /** Batch writes that failed since start (retried ones and refused records alike), for the metrics. */
  get failedWrites(): number {
    return this.failedAttempts;
  }

  /** Writes everything queued now; resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.writeBatches(() => this.queue.depth > 0);
  }

  /** Writes one batch at a time while `more()` holds (asked before each); stops at a failed write. */
  private async writeBatches(more: () => boolean): Promise<void> {
    while (this.flushing) await this.flushing;
    while (more()) {
      this.flushing = this.writeBatch();
      try {
        await this.flushing;
      } finally {
        this.flushing = undefined;
      }
      if (this.failures > 0) return;
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const deadline = Date.now() + this.settings.shutdownDeadlineMs;
    await this.flush();
    while (this.queue.depth > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(500, this.settings.flushIntervalMs * 4)));
      await this.flush();
    }
    if (this.queue.depth > 0) {
      this.logger.error(`${this.queue.depth} usage records could not be written before shutdown; each follows, to be stored by hand`);
      // The process ends with them: the log is the only copy left of these billed calls.
      for (const line of this.queue.lines()) {
        const draft = draftOfLine(line);
        this.logger.error({
          msg: `usage record ${draft.requestId} not written before shutdown: ${JSON.stringify(draftForLog(draft))}`,
          request_id: draft.requestId,
        });
      }
    }
    this.stopped = true;
  }

  onModuleDestroy(): void {
    if (this.timer) clearTimeout(this.timer);
    this.stopped = true;
  }

  private flushSoon(delayMs: number): void {
    if (this.stopped || this.flushing) return;
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.writeDue().then(() => this.scheduleNext());
    }, delayMs);
    this.timer.unref();
  }

  /**
   * A timer's round: one batch of what is queued, then further batches only while full ones
   * wait. Records that arrive during a write wait for the next round (the flush interval), so
   * calls arriving all the time make batches of an interval's worth of records instead of a
   * write per handful: each batch is a transaction, and the embedded engine (in its worker
   * thread, beside the calls) pays four messages and a commit for every one of them.
   */
  private writeDue(): Promise<void> {
    let first = true;
    return this.writeBatches(() => {
      const due = this.queue.depth >= (first ? 1 : this.settings.batchSize);
      first = false;
      return due;
    });
  }

  private scheduleNext(): void {
    if (this.queue.depth === 0 || this.stopped) return;
    if (this.failures > 0) this.flushSoon(Math.min(5000, 100 * 2 ** Math.min(this.failures, 6)));
    else this.flushSoon(this.queue.depth >= this.settings.batchSize ? 0 : this.settings.flushIntervalMs);
  }

  private async writeBatch(): Promise<void> {
    const page = this.queue.next();
    if (!page) return;
    const outcome = await this.tryStore(page);
    if (outcome === 'stored') this.queue.dropNext();
    if (outcome !== 'bad_record') return;
    // One record the database refuses must not hold back the others: write them one by one.
    while (page.count > 0) {
      const line = page.line(0);
      const draft = draftOfLine(line);
      const single = await this.tryStore(UsagePage.of(line, draft));
      if (single === 'retry') return;
      if (single === 'bad_record') {
        this.logger.error({
          msg: `usage record ${draft.requestId} refused by the database and set aside: ${JSON.stringify(draftForLog(draft))}`,
          request_id: draft.requestId,
        });
        this.quota.written(draft.ownerId, draft.costNano, undefined);
        this.quota.writtenOfKey(draft.keyId, draft.costNano, undefined);
      }
      this.queue.dropFirstLine();
    }
  }

  /** Stores a page of records and hands their cost over from unwritten to spent when that worked. */
  private async tryStore(page: UsagePage): Promise<'stored' | 'retry' | 'bad_record'> {
    try {
      let written: Written;
      try {
        written = await this.dataSource.transaction((manager) => this.store(manager, page, this.failures > 0));
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        written = await this.dataSource.transaction((manager) => this.store(manager, page, true));
      }
      this.handOver(page, written);
      this.failures = 0;
      return 'stored';
    } catch (error) {
      this.failedAttempts += 1;
      if (isDataError(error)) return 'bad_record';
      this.failures += 1;
      if (this.failures === 1 || this.failures % 20 === 0) {
        this.logger.warn(`usage batch of ${page.count} not written yet (attempt ${this.failures}): ${String(error)}`);
      }
      return 'retry';
    }
  }

  /**
   * Copies the page's lines into usage_record and adds their cost to the owners' and keys'
   * spend, in the caller's transaction. When its outcome may already be stored (a retry) or a
   * request id collides, the lines go to a table of the transaction's own first and only the
   * new ones on.
   */
  private async store(manager: EntityManager, page: UsagePage, skipStored: boolean): Promise<Written> {
    let slots: Iterable<SlotSpend> = page.slots.values();
    // Every sheet a record of the page names was named before the record was made.
    const sheets = sheetsToStore(this.storedSheets);
    if (sheets.length > 0)
      await manager.query(
        storeSheetsSql(sheets.length),
        sheets.flatMap((sheet) => [sheet.id, sheet.pricing]),
      );
    if (skipStored) {
      await manager.query(INCOMING_SQL);
      await this.copy(manager, INCOMING, page.content());
      const inserted = returnedRows<{ owner_id: string; key_id: string; slot: string; cost: string }>(await manager.query(INSERT_NEW_SQL));
      // A request id that occurs twice in one batch is stored, and billed, once.
      slots = inserted.map((row) => ({ ownerId: row.owner_id, keyId: row.key_id, slot: Number(row.slot), costNano: BigInt(row.cost) }));
    } else {
      await this.copy(manager, 'usage_record', page.content());
    }
    const now = new Date(this.clock.now());
    const { owners, periods } = await addSpend(manager, [...slots], now);
    return { sheets, owners, periods, alerted: await fireAlerts(manager, owners, periods, now) };
  }

  /** The page's cost moves from unwritten to written, each balance as the write left it. */
  private handOver(page: UsagePage, written: Written): void {
    for (const sheet of written.sheets) this.storedSheets.add(sheet.id);
    if (written.alerted) this.alerts.nudge();
    const owners = new Map(written.owners.map((row) => [row.id, row]));
    for (const [ownerId, cost] of page.costs) {
      const row = owners.get(ownerId);
      this.quota.written(ownerId, cost, row && standingOf(row, written.periods).balance);
    }
    const perKey = new Map<string, { ownerId: string; costNano: bigint }>();
    for (const spend of page.slots.values()) {
      const key = perKey.get(spend.keyId);
      if (key) key.costNano += spend.costNano;
      else perKey.set(spend.keyId, { ownerId: spend.ownerId, costNano: spend.costNano });
    }
    for (const [keyId, { ownerId, costNano }] of perKey) {
      const row = owners.get(ownerId);
      this.quota.writtenOfKey(keyId, costNano, row && keyBalanceOf(keyId, row, null, written.periods));
    }
  }

  /**
   * COPY of the lines into a table: on the embedded engine from the blob the query hands it, on
   * PostgreSQL from the client (`COPY … FROM STDIN`, which node-postgres speaks through
   * pg-copy-streams), on the transaction's own connection.
   */
  private async copy(manager: EntityManager, table: string, content: Buffer): Promise<void> {
    const sql = `COPY ${table} (${COLUMN_LIST}) FROM`;
    if (this.embedded) {
      await manager.query(`${sql} '/dev/blob'`, [new CopyRows(content)]);
      return;
    }
    const client = (await manager.queryRunner!.connect()) as PoolClient;
    await new Promise<void>((resolve, reject) => {
      const stream = client.query(copyFrom(`${sql} STDIN`));
      stream.on('error', reject);
      stream.on('finish', resolve);
      stream.end(content);
    });
  }
}
