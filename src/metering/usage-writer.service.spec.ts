import type { AlertDelivery } from '../governance/alert-delivery';
import { testPrincipal } from '../../test/support/principal';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { NANO_PER_UNIT } from '../config/money';
import { openDataSource } from '../database/data-source';
import { QuotaService } from './quota.service';
import type { UsageDraft } from './usage-draft';
import { RateLimiter } from '../governance/rate-limiter';
import { UsageWriter } from './usage-writer.service';
import { UsageWriterSettings } from '../config/settings/metering.settings';
import { createTestDatabase, TestDatabase } from '../../test/support/test-database';
import { usageDraft } from '../../test/support/usage-draft';

/** Long enough that no timer writes anything unless a test waits for it. */
const QUIET: UsageWriterSettings = { flushIntervalMs: 60_000, batchSize: 500, shutdownDeadlineMs: 10_000 };

const units = (amount: number): bigint => BigInt(amount) * NANO_PER_UNIT;

/**
 * The data source with transaction() failing on demand, as when PostgreSQL is unreachable.
 * `failFirst` transactions throw before touching the database; with `failAfterCommit` the
 * next transaction commits and then throws, as when the connection drops before COMMIT's reply.
 */
class FlakyDataSource {
  attempts = 0;
  failFirst = 0;
  /** Attempts (counted from 1) that throw as failFirst's do. */
  failOn: number[] = [];
  failAfterCommit = false;
  /** When set, transactions wait for it before they start. */
  gate: Promise<void> | undefined;
  /** When each attempt began and when each that reached the database ended (performance.now()). */
  readonly began: number[] = [];
  readonly ended: number[] = [];

  constructor(private readonly real: DataSource) {}

  asDataSource(): DataSource {
    return new Proxy(this.real, {
      get: (target, property, receiver) => {
        if (property !== 'transaction') return Reflect.get(target, property, receiver);
        return async (...args: unknown[]) => {
          this.attempts += 1;
          this.began.push(performance.now());
          if (this.gate) await this.gate;
          if (this.failFirst > 0 || this.failOn.includes(this.attempts)) {
            this.failFirst = Math.max(0, this.failFirst - 1);
            throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
          }
          const result = await (target.transaction as (...a: unknown[]) => Promise<unknown>)
            .apply(target, args)
            .finally(() => this.ended.push(performance.now()));
          if (this.failAfterCommit) {
            this.failAfterCommit = false;
            throw new Error('Connection terminated unexpectedly');
          }
          return result;
        };
      },
    });
  }
}

/** The owners here carry no alerts: nothing is sent. */
const NO_ALERTS = { nudge: () => undefined } as unknown as AlertDelivery;

/** QuotaService.admit as a promise (it answers a cached balance synchronously). */
async function admitted(quota: QuotaService, ownerId: string): Promise<void> {
  return quota.admit(testPrincipal({ ownerId, keyId: randomUUID() }));
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe(UsageWriter.name, () => {
  let database: TestDatabase;
  let dataSource: DataSource;
  let ownerCount = 0;
  const writers: UsageWriter[] = [];

  beforeAll(async () => {
    // The embedded engine; with TEST_DATABASE_URL (npm run test:pg) a PostgreSQL server, where the
    // batches go in through COPY … FROM STDIN instead of the engine's blob.
    database = await createTestDatabase();
    dataSource = await openDataSource(database.settings);
    // The writer logs failed batches; the tests cause them on purpose.
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => {
    for (const writer of writers.splice(0)) writer.onModuleDestroy();
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await dataSource?.destroy();
    await database?.drop();
  });

  async function owner(budget: bigint | null = null): Promise<string> {
    ownerCount += 1;
    const id = `owner-${ownerCount}`;
    await dataSource.query(`INSERT INTO quota_owner (id, kind, budget_nano) VALUES ($1, 'project', $2)`, [id, budget === null ? null : budget.toString()]);
    return id;
  }

  function draft(ownerId: string, costNano: bigint, requestId: string = randomUUID()): UsageDraft {
    return usageDraft({ requestId, keyId: randomUUID(), ownerId, costNano, startedAt: new Date() });
  }

  function writer(settings: UsageWriterSettings = QUIET, source: DataSource = dataSource) {
    const quota = new QuotaService(source, new Clock(), { balanceTtlMs: 60_000 });
    const usage = new UsageWriter(source, quota, new RateLimiter(new Clock()), new Clock(), NO_ALERTS, settings);
    writers.push(usage);
    return { usage, quota };
  }

  async function spent(ownerId: string): Promise<bigint> {
    const [row] = await dataSource.query('SELECT spent_nano FROM quota_owner WHERE id = $1', [ownerId]);
    return BigInt(row.spent_nano);
  }

  async function storedIds(ownerId: string): Promise<string[]> {
    const rows: Array<{ request_id: string }> = await dataSource.query('SELECT request_id FROM usage_record WHERE owner_id = $1 ORDER BY request_id', [
      ownerId,
    ]);
    return rows.map((row) => row.request_id);
  }

  describe('batches', () => {
    it('stores every field as given, characters that COPY gives a meaning included', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const odd = {
        ...draft(ownerId, 42n),
        clientRequestId: 'back\\slash \\N tab\tline\nreturn\r end',
        model: 'model \\. ünïcode',
        line: null,
        translatedTo: 'messages',
        errorCode: 'upstream_stream_broken',
        stream: true,
        usage: { input_tokens: 3, output_tokens: 0 },
        upstreamHeadersMs: null,
      };

      usage.enqueue(odd);
      await usage.flush();

      const [row] = await dataSource.query('SELECT * FROM usage_record WHERE request_id = $1', [odd.requestId]);
      expect(row).toMatchObject({
        client_request_id: odd.clientRequestId,
        key_id: odd.keyId,
        owner_id: ownerId,
        model: odd.model,
        interface: 'chat_completions',
        line: null,
        translated_to: 'messages',
        status: 200,
        error_code: 'upstream_stream_broken',
        stream: true,
        usage: { input_tokens: 3, output_tokens: 0 },
        cost_nano: '42',
        duration_ms: 15,
        upstream_headers_ms: null,
      });
      expect(new Date(row.started_at).getTime()).toBe(odd.startedAt.getTime());
    });

    it('stores every field as given when the batch holds a request id already stored (the lines go through a table of the transaction first)', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const stored = draft(ownerId, 1n);
      usage.enqueue(stored);
      await usage.flush();
      const odd = {
        ...draft(ownerId, 42n),
        clientRequestId: 'say "hi", {braces} back\\slash \\N tab\tline\nreturn\r end',
        model: 'NULL',
        line: '',
        translatedTo: ' ',
        errorCode: null,
        stream: true,
        usage: { input_tokens: 3, output_tokens: 0 },
        upstreamHeadersMs: null,
      };

      // The stored id collides, so the batch is written with the INSERT that skips stored ids.
      usage.enqueue({ ...stored });
      usage.enqueue(odd);
      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([stored.requestId, odd.requestId].sort());
      // Stored with the batch, not refused with it and then written alone.
      expect(usage.failedWrites).toBe(0);
      const [row] = await dataSource.query('SELECT * FROM usage_record WHERE request_id = $1', [odd.requestId]);
      expect(row).toMatchObject({
        client_request_id: odd.clientRequestId,
        key_id: odd.keyId,
        model: 'NULL',
        line: '',
        translated_to: ' ',
        error_code: null,
        stream: true,
        usage: odd.usage,
        cost_nano: '42',
        duration_ms: 15,
        upstream_headers_ms: null,
      });
      expect(new Date(row.started_at).getTime()).toBe(odd.startedAt.getTime());
      expect(await spent(ownerId)).toBe(43n);
    });

    it('writes queued records in batches of at most batchSize, one transaction each', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      const { usage } = writer({ ...QUIET, batchSize: 2 }, flaky.asDataSource());
      const drafts = [1, 2, 3, 4, 5].map((cost) => draft(ownerId, BigInt(cost)));

      for (const item of drafts) usage.enqueue(item);
      await usage.flush();

      expect(flaky.attempts).toBe(3);
      expect(await storedIds(ownerId)).toEqual(drafts.map((item) => item.requestId).sort());
      expect(await spent(ownerId)).toBe(15n);
      expect(usage.depth).toBe(0);
    });

    it('leaves records that arrive during a timed write for the next round, an interval later', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      let open!: () => void;
      flaky.gate = new Promise((resolve) => (open = resolve));
      const { usage } = writer({ ...QUIET, flushIntervalMs: 400 }, flaky.asDataSource());
      const first = draft(ownerId, 1n);
      const later = [2, 3, 4].map((cost) => draft(ownerId, BigInt(cost)));

      usage.enqueue(first);
      await until(async () => flaky.attempts === 1, 'the first timed write');
      for (const item of later) usage.enqueue(item);
      flaky.gate = undefined;
      open();
      await until(async () => (await storedIds(ownerId)).length === 4, 'the next round');

      // Written at once, the three would have been a transaction of their own right after the
      // first; they wait for the next round, a flush interval after the first write ended (a
      // timer does not fire early; Node may round its delay down by a millisecond).
      expect(flaky.attempts).toBe(2);
      expect(flaky.began[1] - flaky.ended[0]).toBeGreaterThanOrEqual(398);
      expect(await spent(ownerId)).toBe(10n);
    });

    it('stores every field of the record', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const item = { ...draft(ownerId, 123n), clientRequestId: 'client-7', stream: true, translatedTo: 'messages' };

      usage.enqueue(item);
      await usage.flush();

      const [row] = await dataSource.query('SELECT * FROM usage_record WHERE request_id = $1', [item.requestId]);
      expect(row).toMatchObject({
        client_request_id: 'client-7',
        key_id: item.keyId,
        owner_id: ownerId,
        model: 'chat-model',
        interface: 'chat_completions',
        line: 'line-a',
        translated_to: 'messages',
        status: 200,
        stream: true,
        usage: { input_tokens: 12, output_tokens: 7 },
        duration_ms: 15,
        upstream_headers_ms: 9,
      });
      expect(BigInt(row.cost_nano)).toBe(123n);
    });

    it('writes a queued record by itself after the flush interval', async () => {
      const ownerId = await owner();
      const { usage } = writer({ ...QUIET, flushIntervalMs: 10 });
      const item = draft(ownerId, 40n);

      usage.enqueue(item);

      await until(async () => (await storedIds(ownerId)).length === 1, 'the timed flush');
      expect(await spent(ownerId)).toBe(40n);
      expect(usage.findQueued(item.requestId)).toBeUndefined();
    });

    it('shows a record as queued until it is written', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const item = draft(ownerId, 1n);

      usage.enqueue(item);
      expect(usage.findQueued(item.requestId)).toEqual(item);

      await usage.flush();
      expect(usage.findQueued(item.requestId)).toBeUndefined();
    });
  });

  describe('request ids', () => {
    it('does not bill a request id that is already stored a second time', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const item = draft(ownerId, units(2));
      usage.enqueue(item);
      await usage.flush();

      usage.enqueue({ ...item });
      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([item.requestId]);
      expect(await spent(ownerId)).toBe(units(2));
    });

    it('does not bill a request id twice when it appears twice in one batch', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const item = draft(ownerId, units(2));

      usage.enqueue(item);
      usage.enqueue({ ...item });
      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([item.requestId]);
      expect(await spent(ownerId)).toBe(units(2));
    });

    it('bills once when a batch committed but its confirmation was lost and the batch is retried', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      flaky.failAfterCommit = true;
      const { usage } = writer(QUIET, flaky.asDataSource());
      const item = draft(ownerId, units(3));

      usage.enqueue(item);
      await usage.flush();
      expect(usage.depth).toBe(1);
      await usage.flush();

      expect(flaky.attempts).toBe(2);
      expect(usage.depth).toBe(0);
      expect(await storedIds(ownerId)).toEqual([item.requestId]);
      expect(await spent(ownerId)).toBe(units(3));
    });
  });

  describe('a record the database refuses', () => {
    // 70,000 does not fit the smallint status column: PostgreSQL refuses the record (22003).
    const refusedStatus = 70_000;

    it('is set aside and logged; the rest of its batch is written one by one and billed once', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      const { usage, quota } = writer(QUIET, flaky.asDataSource());
      const error = jest.spyOn(Logger.prototype, 'error');
      const items = [draft(ownerId, 2n), { ...draft(ownerId, 3n), status: refusedStatus }, draft(ownerId, 5n)];
      for (const item of items) usage.enqueue(item);

      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([items[0].requestId, items[2].requestId].sort());
      expect(await spent(ownerId)).toBe(7n);
      expect(usage.depth).toBe(0);
      expect(quota.pending(ownerId)).toBe(0n);
      // The batch, then each record by itself.
      expect(flaky.attempts).toBe(4);
      expect(usage.failedWrites).toBe(2);
      const [line] = error.mock.calls
        .map(([message]) => message as { msg: string; request_id: string })
        .filter((message) => message.request_id === items[1].requestId);
      const logged = line?.msg;
      expect(logged).toContain(`usage record ${items[1].requestId} refused by the database and set aside`);
      expect(logged).toContain('"status":70000');
      expect(logged).toContain('"costNano":"3"');
    });

    it('leaves the records not yet written by themselves queued when the database goes away meanwhile', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      // 1: the batch, refused; 2: the first record alone; 3: the refused one alone; 4: the database is away.
      // Then 5: the rest of the batch; 6: the database is away again, for the next batch.
      flaky.failOn = [4, 6];
      const { usage, quota } = writer({ ...QUIET, batchSize: 4 }, flaky.asDataSource());
      const items = [draft(ownerId, 2n), { ...draft(ownerId, 3n), status: refusedStatus }, draft(ownerId, 5n), draft(ownerId, 7n)];
      for (const item of items) usage.enqueue(item);

      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([items[0].requestId]);
      expect(usage.depth).toBe(2);
      expect(usage.findQueued(items[1].requestId)).toBeUndefined();
      expect(usage.findQueued(items[2].requestId)).toEqual(items[2]);
      expect(quota.pending(ownerId)).toBe(12n);

      const late = draft(ownerId, 11n);
      usage.enqueue(late);
      await usage.flush();

      expect(await storedIds(ownerId)).toEqual([items[0].requestId, items[2].requestId, items[3].requestId].sort());
      expect(await spent(ownerId)).toBe(14n);
      // Only what was handed over is off the unwritten spend: the late record's cost still counts.
      expect(quota.pending(ownerId)).toBe(11n);
      expect(usage.depth).toBe(1);

      await usage.flush();

      expect(await spent(ownerId)).toBe(25n);
      expect(usage.depth).toBe(0);
      expect(quota.pending(ownerId)).toBe(0n);
    });
  });

  describe('while the database fails', () => {
    it('keeps the records queued and counted against the budget, and adds the spend exactly once when written', async () => {
      const ownerId = await owner(units(10));
      const flaky = new FlakyDataSource(dataSource);
      flaky.failFirst = 3;
      const { usage, quota } = writer(QUIET, flaky.asDataSource());
      const item = draft(ownerId, units(10));
      usage.enqueue(item);

      for (let attempt = 1; attempt <= 3; attempt++) {
        await usage.flush();
        expect(usage.depth).toBe(1);
        expect(usage.findQueued(item.requestId)).toEqual(item);
        expect(await storedIds(ownerId)).toEqual([]);
        await expect(admitted(quota, ownerId)).rejects.toMatchObject({ code: 'insufficient_quota' });
      }
      await usage.flush();

      expect(flaky.attempts).toBe(4);
      expect(usage.depth).toBe(0);
      expect(await storedIds(ownerId)).toEqual([item.requestId]);
      expect(await spent(ownerId)).toBe(units(10));
    });

    it('retries by itself until the database is back', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      flaky.failFirst = 3;
      const { usage } = writer({ ...QUIET, flushIntervalMs: 10 }, flaky.asDataSource());
      const items = [draft(ownerId, 5n), draft(ownerId, 6n)];

      for (const item of items) usage.enqueue(item);

      await until(async () => (await storedIds(ownerId)).length === 2, 'the retried batch');
      expect(flaky.attempts).toBe(4);
      expect(await spent(ownerId)).toBe(11n);
      expect(usage.depth).toBe(0);
    });
  });

  describe('quota hand-over', () => {
    it('moves a written cost from unwritten to spent without counting it twice', async () => {
      const ownerId = await owner(units(10));
      const { usage, quota } = writer();
      await admitted(quota, ownerId);

      usage.enqueue(draft(ownerId, units(6)));
      await expect(admitted(quota, ownerId)).resolves.toBeUndefined();
      await usage.flush();

      await expect(admitted(quota, ownerId)).resolves.toBeUndefined();
      usage.enqueue(draft(ownerId, units(4)));
      await expect(admitted(quota, ownerId)).rejects.toMatchObject({ code: 'insufficient_quota' });
    });
  });

  describe('shutdown', () => {
    it('writes everything still queued on beforeApplicationShutdown', async () => {
      const ownerId = await owner();
      const { usage } = writer();
      const items = [draft(ownerId, 1n), draft(ownerId, 2n), draft(ownerId, 3n)];
      for (const item of items) usage.enqueue(item);

      await usage.beforeApplicationShutdown();

      expect(usage.depth).toBe(0);
      expect(await storedIds(ownerId)).toEqual(items.map((item) => item.requestId).sort());
      expect(await spent(ownerId)).toBe(6n);
    });

    it('keeps retrying on shutdown while the database is away, within the deadline', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      flaky.failFirst = 2;
      const { usage } = writer({ ...QUIET, flushIntervalMs: 20 }, flaky.asDataSource());
      const item = draft(ownerId, 9n);
      usage.enqueue(item);

      await usage.beforeApplicationShutdown();

      expect(flaky.attempts).toBe(3);
      expect(await storedIds(ownerId)).toEqual([item.requestId]);
      expect(await spent(ownerId)).toBe(9n);
    });

    it('gives up after the shutdown deadline instead of hanging when the database stays away', async () => {
      const ownerId = await owner();
      const flaky = new FlakyDataSource(dataSource);
      flaky.failFirst = Number.MAX_SAFE_INTEGER;
      const { usage } = writer({ ...QUIET, flushIntervalMs: 10, shutdownDeadlineMs: 200 }, flaky.asDataSource());
      const error = jest.spyOn(Logger.prototype, 'error');
      const item = draft(ownerId, 1n);
      usage.enqueue(item);

      await usage.beforeApplicationShutdown();

      expect(flaky.attempts).toBeGreaterThan(1);
      expect(usage.depth).toBe(1);
      expect(await spent(ownerId)).toBe(0n);
      // The log is the record's last copy: its line carries the request id as a field, to be found like the call's.
      expect(error).toHaveBeenCalledWith(
        expect.objectContaining({ request_id: item.requestId, msg: expect.stringContaining(`usage record ${item.requestId} not written before shutdown: {`) }),
      );
    });
  });
});
