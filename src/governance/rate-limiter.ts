import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import type { Principal } from '../auth/principal';
import { MinuteCounts, minuteOf, slidingCount, waitUntilAtMost } from './sliding-minute';
import type { RateLimitName, RateLimits } from '../config/rate-limits';

/** Whose limit: the key's own, or its owner's (shared by all the owner's keys). */
export type LimitScope = 'key' | 'owner';

/** Counts of one subject in one minute. `shared` is the total every replica had written at the last sync, this one's included. */
export interface MinuteTally {
  sharedRequests: number;
  sharedTokens: number;
  /** Counted here since the last sync began: not in the database yet. */
  pendingRequests: number;
  pendingTokens: number;
  /** Counted here and on their way to the database in the sync under way. */
  sendingRequests: number;
  sendingTokens: number;
}

/** A key or an owner with limits, as this replica counts it. */
export class LimitedSubject {
  /** Tallies by minute: the current and the previous one, and older ones not yet synced. */
  readonly minutes = new Map<number, MinuteTally>();
  /** Calls of this subject under way on this replica. */
  inFlight = 0;
  /** Calls under way on the other replicas, as of the last sync. */
  othersInFlight = 0;
  /** While the other replicas' counts of a subject new here are being read: its calls wait for them. */
  priming: Promise<void> | undefined;

  constructor(
    /** `key:<key id>` or `owner:<owner id>`: the row name in the shared tables. */
    readonly id: string,
    readonly scope: LimitScope,
    public limits: RateLimits,
    public usedAt: number,
  ) {}

  tally(minute: number): MinuteTally {
    let tally = this.minutes.get(minute);
    if (!tally) {
      tally = { sharedRequests: 0, sharedTokens: 0, pendingRequests: 0, pendingTokens: 0, sendingRequests: 0, sendingTokens: 0 };
      this.minutes.set(minute, tally);
    }
    return tally;
  }

  counts(kind: 'requests' | 'tokens', at: number): MinuteCounts {
    const minute = minuteOf(at);
    return { minute, current: total(this.minutes.get(minute), kind), previous: total(this.minutes.get(minute - 1), kind) };
  }
}

function total(tally: MinuteTally | undefined, kind: 'requests' | 'tokens'): number {
  if (!tally) return 0;
  return kind === 'requests'
    ? tally.sharedRequests + tally.pendingRequests + tally.sendingRequests
    : tally.sharedTokens + tally.pendingTokens + tally.sendingTokens;
}

/** An admitted call's end (for concurrency limits), or undefined when no limit applies. */
export type Admission = (() => void) | undefined;

/** What is left of each limit of a subject now (GET /v1/key); null where no limit is set. */
export interface LimitStanding {
  limits: RateLimits;
  remaining: { requests_per_minute: number | null; tokens_per_minute: number | null; concurrent_requests: number | null };
}

/** Subjects idle this long are forgotten (their counts have faded out of the sliding minute). */
const IDLE_MS = 3 * 60_000;

/** Retry-After for a concurrency limit: a call under way may end any moment. */
const CONCURRENCY_RETRY_SECONDS = 1;

/** A refused call: which limit, and how long until it would be admitted. */
interface Refusal {
  subject: LimitedSubject;
  name: RateLimitName;
  limit: number;
  waitMs: number;
}

const NAMES: Record<RateLimitName, string> = {
  requests_per_minute: 'requests per minute',
  tokens_per_minute: 'tokens per minute',
  concurrent_requests: 'concurrent requests',
};

/** The `x-ratelimit-*` header suffix of each limit. */
const HEADER_KINDS: Record<RateLimitName, string> = {
  requests_per_minute: 'requests',
  tokens_per_minute: 'tokens',
  concurrent_requests: 'concurrent',
};

/**
 * Per-key and per-owner rate limits (docs/operations.md "Rate limits"): requests counted at
 * admission, tokens when a call is metered, calls under way until their answer is closed, all in
 * a sliding minute. Counts are this replica's plus the other replicas' as of the last sync
 * (RateLimitSync), so admission never waits for the database. Keys and owners without limits
 * cost one property read per call.
 */
@Injectable()
export class RateLimiter {
  readonly subjects = new Map<string, LimitedSubject>();
  /** Refusals by entry and limit, for /metrics. */
  readonly refusals = new Map<string, number>();

  /** Reads the other replicas' counts of subjects new here (RateLimitSync); none: this replica counts alone. */
  private primer: ((subjects: LimitedSubject[]) => Promise<void>) | undefined;

  constructor(private readonly clock: Clock) {}

  usePrimer(primer: (subjects: LimitedSubject[]) => Promise<void>): void {
    this.primer = primer;
  }

  /**
   * Admits a call of `principal` or throws 429 `rate_limit_exceeded`. An admitted call is
   * counted at once; the returned function ends it (for concurrency) and must be called once,
   * when the call's answer is closed. Undefined when neither the key nor its owner has limits.
   * Synchronous, except for the first call of a key or owner on this replica, which waits for
   * the other replicas' counts of it.
   */
  admit(principal: Principal, entry: string): Admission | Promise<Admission> {
    if (!principal.keyLimits && !principal.ownerLimits) return undefined;
    const subjects = this.subjectsOf(principal);
    const priming = this.priming(subjects);
    return priming ? priming.then(() => this.admitNow(subjects, entry)) : this.admitNow(subjects, entry);
  }

  private subjectsOf(principal: Principal): LimitedSubject[] {
    const now = this.clock.now();
    const subjects: LimitedSubject[] = [];
    if (principal.keyLimits) subjects.push(this.subject(`key:${principal.keyId}`, 'key', principal.keyLimits, now));
    if (principal.ownerLimits) subjects.push(this.subject(`owner:${principal.ownerId}`, 'owner', principal.ownerLimits, now));
    return subjects;
  }

  /** What the subjects' calls wait for: the reading of the other replicas' counts, while one is under way. */
  private priming(subjects: LimitedSubject[]): Promise<void> | undefined {
    const waits = subjects.flatMap((subject) => (subject.priming ? [subject.priming] : []));
    if (waits.length === 0) return undefined;
    return Promise.all(waits).then(() => undefined);
  }

  private admitNow(subjects: LimitedSubject[], entry: string): Admission {
    const now = this.clock.now();
    for (const subject of subjects) {
      const refusal = refusalOf(subject, now);
      if (refusal) throw this.refuse(refusal, entry);
    }
    const minute = minuteOf(now);
    for (const subject of subjects) {
      subject.tally(minute).pendingRequests += 1;
      subject.inFlight += 1;
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      for (const subject of subjects) subject.inFlight -= 1;
    };
  }

  /** Counts a metered call's tokens against its key's and owner's limits, when they have any. */
  addTokens(keyId: string, ownerId: string, tokens: number): void {
    if (tokens <= 0 || this.subjects.size === 0) return;
    const minute = minuteOf(this.clock.now());
    const key = this.subjects.get(`key:${keyId}`);
    if (key) key.tally(minute).pendingTokens += tokens;
    const owner = this.subjects.get(`owner:${ownerId}`);
    if (owner) owner.tally(minute).pendingTokens += tokens;
  }

  /** The limits of `principal` and what is left of them now, the other replicas' calls included. */
  async standing(principal: Principal): Promise<{ key: LimitStanding | null; owner: LimitStanding | null }> {
    const subjects = this.subjectsOf(principal);
    await this.priming(subjects);
    const now = this.clock.now();
    const of = (id: string, limits: RateLimits | null): LimitStanding | null => (limits ? standingOf(this.subjects.get(id)!, limits, now) : null);
    return { key: of(`key:${principal.keyId}`, principal.keyLimits), owner: of(`owner:${principal.ownerId}`, principal.ownerLimits) };
  }

  /** Forgets subjects idle for a while, unless a call of theirs is under way or counts wait to be synced. */
  forgetIdle(): void {
    const now = this.clock.now();
    for (const [id, subject] of this.subjects) {
      if (now - subject.usedAt < IDLE_MS || subject.inFlight > 0) continue;
      const unsynced = [...subject.minutes.values()].some(
        (tally) => tally.pendingRequests + tally.pendingTokens + tally.sendingRequests + tally.sendingTokens > 0,
      );
      if (!unsynced) this.subjects.delete(id);
    }
  }

  private subject(id: string, scope: LimitScope, limits: RateLimits, now: number): LimitedSubject {
    let subject = this.subjects.get(id);
    if (!subject) {
      subject = new LimitedSubject(id, scope, limits, now);
      this.subjects.set(id, subject);
      const primed = subject;
      primed.priming = this.primer?.([primed]).finally(() => (primed.priming = undefined));
    }
    subject.limits = limits;
    subject.usedAt = now;
    return subject;
  }

  private refuse(refusal: Refusal, entry: string): GatewayError {
    const counter = `${entry}\u0000${refusal.name}`;
    this.refusals.set(counter, (this.refusals.get(counter) ?? 0) + 1);
    const seconds = Math.max(1, Math.ceil(refusal.waitMs / 1000));
    const whose = refusal.subject.scope === 'key' ? "This key's" : "This key's owner's";
    const kind = HEADER_KINDS[refusal.name];
    return new GatewayError('rate_limit_exceeded', `${whose} limit of ${refusal.limit} ${NAMES[refusal.name]} is reached; retry after ${seconds} s.`, seconds, {
      [`x-ratelimit-limit-${kind}`]: String(refusal.limit),
      [`x-ratelimit-remaining-${kind}`]: '0',
      [`x-ratelimit-reset-${kind}`]: `${seconds}s`,
    });
  }
}

/** The first limit of `subject` that refuses one more call now. */
function refusalOf(subject: LimitedSubject, now: number): Refusal | undefined {
  const { requests_per_minute: requests, tokens_per_minute: tokens, concurrent_requests: concurrent } = subject.limits;
  if (concurrent !== null && subject.inFlight + subject.othersInFlight >= concurrent) {
    return { subject, name: 'concurrent_requests', limit: concurrent, waitMs: CONCURRENCY_RETRY_SECONDS * 1000 };
  }
  if (requests !== null) {
    // One more call must fit: at most limit - 1 counted in the sliding minute.
    const waitMs = waitUntilAtMost(subject.counts('requests', now), now, requests - 1);
    if (waitMs > 0) return { subject, name: 'requests_per_minute', limit: requests, waitMs };
  }
  if (tokens !== null) {
    // Admitted while the minute's tokens are under the limit; the wait is until they are a token under it.
    const counts = subject.counts('tokens', now);
    if (slidingCount(counts, now) >= tokens) return { subject, name: 'tokens_per_minute', limit: tokens, waitMs: waitUntilAtMost(counts, now, tokens - 1) };
  }
  return undefined;
}

function standingOf(subject: LimitedSubject, limits: RateLimits, now: number): LimitStanding {
  const left = (limit: number | null, used: number) => (limit === null ? null : Math.max(0, Math.floor(limit - used)));
  return {
    limits,
    remaining: {
      requests_per_minute: left(limits.requests_per_minute, Math.ceil(slidingCount(subject.counts('requests', now), now))),
      tokens_per_minute: left(limits.tokens_per_minute, Math.ceil(slidingCount(subject.counts('tokens', now), now))),
      concurrent_requests: left(limits.concurrent_requests, subject.inFlight + subject.othersInFlight),
    },
  };
}
