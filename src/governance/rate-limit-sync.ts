import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { Rounds } from '../common/rounds';
import { RATE_LIMIT_SETTINGS, RateLimitSettings } from '../config/settings/limits.settings';
import { LimitedSubject, RateLimiter } from './rate-limiter';
import { minuteOf } from './sliding-minute';

const INTERVAL_NAME = 'rate-limit-sync';
/** A replica's calls under way count for the others this long after its last sync (a stopped replica's fade). */
const IN_FLIGHT_FRESH_SECONDS = 10;

interface CountRow {
  subject: string;
  minute: string;
  requests: string;
  tokens: string;
}

/**
 * Shares the rate-limit counts of every replica through the database: each round adds this
 * replica's new counts to `rate_count` (one row per subject and minute) and reads back the
 * totals, and writes its calls under way to `rate_in_flight`, reading the others'. A replica
 * thus sees the others' calls at most one round (RATE_LIMIT_SYNC_MS) late: the bound by which a
 * limit can be exceeded across replicas. While the database is away each replica counts alone.
 */
@Injectable()
export class RateLimitSync implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('RateLimits');
  /** This process in `rate_in_flight`. */
  private readonly replica = randomUUID();
  private readonly rounds: Rounds<void>;
  private failing = false;
  private lastCleanMinute = 0;
  /** Set once this replica wrote rows of calls under way, which it removes when it stops. */
  private sharedInFlight = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly limiter: RateLimiter,
    scheduler: SchedulerRegistry,
    private readonly clock: Clock,
    @Inject(RATE_LIMIT_SETTINGS) private readonly settings: RateLimitSettings,
  ) {
    this.rounds = new Rounds(scheduler, INTERVAL_NAME, () => this.sync(), undefined);
  }

  onApplicationBootstrap(): void {
    this.limiter.usePrimer((subjects) => this.prime(subjects));
    if (this.settings.syncIntervalMs > 0) this.rounds.every(this.settings.syncIntervalMs);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.rounds.stop();
    // The others stop counting this replica's calls at once.
    if (this.sharedInFlight) await this.dataSource.query('DELETE FROM rate_in_flight WHERE replica = $1', [this.replica]).catch(() => undefined);
  }

  /** One round; rounds never overlap. Resolves when it is over, whether the database answered or not. */
  runOnce(): Promise<void> {
    return this.rounds.run();
  }

  /**
   * The other replicas' counts of subjects new on this replica, read before their first call is
   * admitted, so a key busy elsewhere is not taken for an idle one. Never fails: while the
   * database is away the subject starts from this replica's counts alone.
   */
  async prime(subjects: LimitedSubject[]): Promise<void> {
    const ids = subjects.map((subject) => subject.id);
    const minute = minuteOf(this.clock.now());
    try {
      const rows: CountRow[] = await this.dataSource.query(
        'SELECT subject, minute, requests, tokens FROM rate_count WHERE subject = ANY($1::varchar[]) AND minute >= $2',
        [ids, minute - 1],
      );
      const byId = new Map(subjects.map((subject) => [subject.id, subject]));
      for (const row of rows) {
        const tally = byId.get(row.subject)!.tally(Number(row.minute));
        tally.sharedRequests = Number(row.requests);
        tally.sharedTokens = Number(row.tokens);
      }
      const limited = subjects.filter((subject) => subject.limits.concurrent_requests !== null);
      if (limited.length > 0) await this.readOthersInFlight(limited);
    } catch {
      // Counted alone until the next round reaches the database.
    }
  }

  private async sync(): Promise<void> {
    this.limiter.forgetIdle();
    const subjects = [...this.limiter.subjects.values()];
    if (subjects.length === 0) return;
    const minute = minuteOf(this.clock.now());
    const sent = subjects.flatMap((subject) => takeForSending(subject, minute));
    try {
      await this.exchangeCounts(sent);
      await this.exchangeInFlight(subjects.filter((subject) => subject.limits.concurrent_requests !== null));
      if (this.failing) this.logger.log('rate-limit counts are shared through the database again');
      this.failing = false;
      if (minute !== this.lastCleanMinute) await this.clean(minute);
    } catch (error) {
      for (const { tally } of sent) {
        tally.pendingRequests += tally.sendingRequests;
        tally.pendingTokens += tally.sendingTokens;
        tally.sendingRequests = 0;
        tally.sendingTokens = 0;
      }
      if (!this.failing) this.logger.warn(`rate-limit counts not shared, each replica counts alone until the database answers: ${String(error)}`);
      this.failing = true;
    }
  }

  private async exchangeCounts(sent: Sending[]): Promise<void> {
    if (sent.length === 0) return;
    const rows: CountRow[] = await this.dataSource.query(
      `INSERT INTO rate_count (subject, minute, requests, tokens)
       SELECT * FROM unnest($1::varchar[], $2::bigint[], $3::bigint[], $4::bigint[])
       ON CONFLICT (subject, minute) DO UPDATE
         SET requests = rate_count.requests + EXCLUDED.requests, tokens = rate_count.tokens + EXCLUDED.tokens
       RETURNING subject, minute, requests, tokens`,
      [
        sent.map((item) => item.subject.id),
        sent.map((item) => item.minute),
        sent.map((item) => item.tally.sendingRequests),
        sent.map((item) => item.tally.sendingTokens),
      ],
    );
    const totals = new Map(rows.map((row) => [`${row.subject}\u0000${row.minute}`, row]));
    for (const { subject, minute, tally } of sent) {
      const row = totals.get(`${subject.id}\u0000${minute}`);
      if (!row) continue;
      tally.sharedRequests = Number(row.requests);
      tally.sharedTokens = Number(row.tokens);
      tally.sendingRequests = 0;
      tally.sendingTokens = 0;
    }
  }

  private async exchangeInFlight(subjects: LimitedSubject[]): Promise<void> {
    if (subjects.length === 0) return;
    const ids = subjects.map((subject) => subject.id);
    await this.dataSource.query(
      `INSERT INTO rate_in_flight (subject, replica, in_flight, seen_at)
       SELECT subject, $2, in_flight, now() FROM unnest($1::varchar[], $3::int[]) AS t(subject, in_flight)
       ON CONFLICT (subject, replica) DO UPDATE SET in_flight = EXCLUDED.in_flight, seen_at = now()`,
      [ids, this.replica, subjects.map((subject) => subject.inFlight)],
    );
    this.sharedInFlight = true;
    await this.readOthersInFlight(subjects);
  }

  private async readOthersInFlight(subjects: LimitedSubject[]): Promise<void> {
    const ids = subjects.map((subject) => subject.id);
    const rows: Array<{ subject: string; in_flight: string }> = await this.dataSource.query(
      `SELECT subject, sum(in_flight) AS in_flight FROM rate_in_flight
        WHERE subject = ANY($1::varchar[]) AND replica <> $2 AND seen_at > now() - make_interval(secs => $3)
        GROUP BY subject`,
      [ids, this.replica, IN_FLIGHT_FRESH_SECONDS],
    );
    const others = new Map(rows.map((row) => [row.subject, Number(row.in_flight)]));
    for (const subject of subjects) subject.othersInFlight = others.get(subject.id) ?? 0;
  }

  /** Rows no sliding minute reads any more, from every replica's counts. */
  private async clean(minute: number): Promise<void> {
    this.lastCleanMinute = minute;
    await this.dataSource.query('DELETE FROM rate_count WHERE minute < $1', [minute - 2]);
    await this.dataSource.query(`DELETE FROM rate_in_flight WHERE seen_at < now() - interval '1 minute'`);
  }
}

interface Sending {
  subject: LimitedSubject;
  minute: number;
  tally: LimitedSubject['minutes'] extends Map<number, infer T> ? T : never;
}

/**
 * The tallies of `subject` to send this round: every minute with new counts, and the current and
 * previous minute even without, so the other replicas' counts are read back. Minutes older than
 * the previous one are dropped once nothing of theirs waits to be sent.
 */
function takeForSending(subject: LimitedSubject, minute: number): Sending[] {
  subject.tally(minute);
  subject.tally(minute - 1);
  const sending: Sending[] = [];
  for (const [at, tally] of subject.minutes) {
    const fresh = tally.pendingRequests > 0 || tally.pendingTokens > 0;
    if (at < minute - 1 && !fresh) {
      subject.minutes.delete(at);
      continue;
    }
    tally.sendingRequests = tally.pendingRequests;
    tally.sendingTokens = tally.pendingTokens;
    tally.pendingRequests = 0;
    tally.pendingTokens = 0;
    sending.push({ subject, minute: at, tally });
  }
  return sending;
}
