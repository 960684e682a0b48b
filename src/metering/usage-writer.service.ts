import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { BalanceRow, balanceOf, OwnerBalance, QuotaService } from './quota.service';
import type { UsageDraft } from './usage-draft';
import { returnedRows } from '../database/returned-rows';
import { CopyRows } from '../database/embedded-pool';
import { isEmbedded } from '../database/data-source';
import { arrayLiteral, valueText } from '../database/array-literal';

export interface UsageWriterSettings {
  /** Longest time a record waits before its batch is written. */
  flushIntervalMs: number;
  /** Most records per write: one transaction (an INSERT; a COPY on the embedded engine). */
  batchSize: number;
  /** On shutdown, how long to keep retrying while the database is away. */
  shutdownDeadlineMs: number;
}
export const USAGE_WRITER_SETTINGS = Symbol('USAGE_WRITER_SETTINGS');

/** Columns and their types: a batch goes in as one array per column (`unnest`), not N×16 parameters. */
const COLUMNS: Array<[string, string]> = [
  ['request_id', 'varchar'], ['client_request_id', 'varchar'], ['key_id', 'uuid'], ['owner_id', 'varchar'],
  ['model', 'varchar'], ['interface', 'varchar'], ['line', 'varchar'], ['translated_to', 'varchar'],
  ['status', 'int2'], ['error_code', 'varchar'], ['stream', 'bool'], ['usage', 'jsonb'], ['cost_nano', 'int8'],
  ['started_at', 'timestamptz'], ['duration_ms', 'int4'], ['upstream_headers_ms', 'int4'],
];
const INSERT_SQL = `INSERT INTO usage_record (${COLUMNS.map(([name]) => name).join(', ')})
  SELECT * FROM unnest(${COLUMNS.map(([, type], index) => `$${index + 1}::${type}[]`).join(', ')})`;

const COPY_SQL = `COPY usage_record (${COLUMNS.map(([name]) => name).join(', ')}) FROM '/dev/blob'`;

/** Characters COPY's text format gives a meaning: backslash and the row and column separators. */
const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function copyField(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  const text = valueText(value);
  return COPY_SPECIAL.test(text) ? text.replace(/[\\\t\n\r]/g, (character) => COPY_ESCAPES[character]) : text;
}

/**
 * The batch in COPY's text format: a line per record, tab-separated, `\N` for NULL. Joined, not
 * appended line by line: `join` gives one flat string, where `+=` left a string of a piece per
 * record for the engine's Blob to copy flat.
 */
export function copyText(rows: unknown[][]): string {
  const lines = new Array<string>(rows.length + 1);
  for (let index = 0; index < rows.length; index++) lines[index] = rows[index].map(copyField).join('\t');
  // The empty last element ends the last line with its newline.
  lines[rows.length] = '';
  return lines.join('\n');
}

function rowOf(draft: UsageDraft): unknown[] {
  return [
    draft.requestId, draft.clientRequestId, draft.keyId, draft.ownerId, draft.model, draft.interface, draft.line,
    draft.translatedTo, draft.status, draft.errorCode, draft.stream, draft.usage ? JSON.stringify(draft.usage) : null,
    draft.costNano.toString(), draft.startedAt, draft.durationMs, draft.upstreamHeadersMs,
  ];
}

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
  private queue: UsageDraft[] = [];
  private readonly queuedById = new Map<string, UsageDraft>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failures = 0;
  private failedAttempts = 0;
  private stopped = false;
  private readonly embedded: boolean;

  constructor(
    private readonly dataSource: DataSource,
    private readonly quota: QuotaService,
    @Inject(USAGE_WRITER_SETTINGS) private readonly settings: UsageWriterSettings,
  ) {
    this.embedded = isEmbedded(dataSource);
  }

  enqueue(draft: UsageDraft): void {
    this.queue.push(draft);
    this.queuedById.set(draft.requestId, draft);
    this.quota.addUnwritten(draft.ownerId, draft.costNano);
    // A full batch goes at once, unless writes are failing: then the back-off timer decides, or
    // every new record would retry at once against a database that is away.
    if (this.queue.length >= this.settings.batchSize && this.failures === 0) this.flushSoon(0);
    else this.flushSoon(this.settings.flushIntervalMs);
  }

  /** A record still waiting to be written, so lookups see a call at once. */
  findQueued(requestId: string): UsageDraft | undefined {
    return this.queuedById.get(requestId);
  }

  get depth(): number {
    return this.queue.length;
  }

  /** Batch writes that failed since start (retried ones and refused records alike), for the metrics. */
  get failedWrites(): number {
    return this.failedAttempts;
  }

  /** Writes everything queued now; resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.writeBatches(() => this.queue.length > 0);
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
    while (this.queue.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(500, this.settings.flushIntervalMs * 4)));
      await this.flush();
    }
    if (this.queue.length > 0) {
      this.logger.error(`${this.queue.length} usage records could not be written before shutdown; each follows, to be stored by hand`);
      // The process ends with them: the log is the only copy left of these billed calls.
      for (const draft of this.queue) {
        this.logger.error(`usage record ${draft.requestId} not written before shutdown: ${JSON.stringify(draftForLog(draft))}`);
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
   * thread, beside the calls) paid four messages and a commit for every one of them.
   */
  private writeDue(): Promise<void> {
    let first = true;
    return this.writeBatches(() => {
      const due = this.queue.length >= (first ? 1 : this.settings.batchSize);
      first = false;
      return due;
    });
  }

  private scheduleNext(): void {
    if (this.queue.length === 0 || this.stopped) return;
    if (this.failures > 0) this.flushSoon(Math.min(5000, 100 * 2 ** Math.min(this.failures, 6)));
    else this.flushSoon(this.queue.length >= this.settings.batchSize ? 0 : this.settings.flushIntervalMs);
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue.slice(0, this.settings.batchSize);
    const outcome = await this.tryStore(batch);
    if (outcome !== 'bad_record') return;
    // One record the database refuses must not hold back the others: write them one by one.
    for (const draft of batch) {
      const single = await this.tryStore([draft]);
      if (single === 'retry') return;
      if (single === 'bad_record') {
        this.logger.error(`usage record ${draft.requestId} refused by the database and set aside: ${JSON.stringify(draftForLog(draft))}`);
        this.acknowledge([draft], new Map());
      }
    }
  }

  /** Stores the records at the head of the queue and takes them off it when that worked. */
  private async tryStore(batch: UsageDraft[]): Promise<'stored' | 'retry' | 'bad_record'> {
    try {
      let balances: Map<string, OwnerBalance>;
      try {
        balances = await this.dataSource.transaction((manager) => this.store(manager, batch, this.failures > 0));
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        balances = await this.dataSource.transaction((manager) => this.store(manager, batch, true));
      }
      this.acknowledge(batch, balances);
      this.failures = 0;
      return 'stored';
    } catch (error) {
      this.failedAttempts += 1;
      if (isDataError(error)) return 'bad_record';
      this.failures += 1;
      if (this.failures === 1 || this.failures % 20 === 0) {
        this.logger.warn(`usage batch of ${batch.length} not written yet (attempt ${this.failures}): ${String(error)}`);
      }
      return 'retry';
    }
  }

  private acknowledge(batch: UsageDraft[], balances: Map<string, OwnerBalance>): void {
    this.queue.splice(0, batch.length);
    for (const draft of batch) this.queuedById.delete(draft.requestId);
    const costs = new Map<string, bigint>();
    for (const draft of batch) costs.set(draft.ownerId, (costs.get(draft.ownerId) ?? 0n) + draft.costNano);
    for (const [ownerId, cost] of costs) this.quota.written(ownerId, cost, balances.get(ownerId));
  }

  /**
   * Inserts the batch and adds its cost to the owners' spend, in the caller's transaction.
   * A batch is first written with a plain INSERT (the cheap path; on the embedded engine a
   * COPY, cheaper still); only when its outcome may already be stored (a retry) or a request id
   * collides is it written skipping stored ids.
   */
  private async store(manager: EntityManager, batch: UsageDraft[], skipStored: boolean): Promise<Map<string, OwnerBalance>> {
    const rows = batch.map(rowOf);
    const columns = (): string[] => COLUMNS.map((_, index) => arrayLiteral(rows, index));
    const insertedIds = new Set<string>();
    if (!skipStored && this.embedded) {
      await manager.query(COPY_SQL, [new CopyRows(copyText(rows))]);
      for (const draft of batch) insertedIds.add(draft.requestId);
    } else if (skipStored) {
      const inserted: Array<{ request_id: string }> = await manager.query(
        `${INSERT_SQL} ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
        columns(),
      );
      for (const row of inserted) insertedIds.add(row.request_id);
    } else {
      await manager.query(INSERT_SQL, columns());
      for (const draft of batch) insertedIds.add(draft.requestId);
    }
    const spend = new Map<string, bigint>();
    for (const draft of batch) {
      // delete(): a request id that occurs twice in one batch is stored, and billed, once.
      if (!insertedIds.delete(draft.requestId) || draft.costNano === 0n) continue;
      spend.set(draft.ownerId, (spend.get(draft.ownerId) ?? 0n) + draft.costNano);
    }
    const balances = new Map<string, OwnerBalance>();
    for (const [ownerId, cost] of spend) {
      const [row] = returnedRows<BalanceRow>(
        await manager.query(
          `UPDATE quota_owner SET spent_nano = spent_nano + $2, updated_at = now() WHERE id = $1
           RETURNING budget_nano, spent_nano, reserved_nano`,
          [ownerId, cost.toString()],
        ),
      );
      if (row) balances.set(ownerId, balanceOf(row));
    }
    return balances;
  }
}
