import { testPrincipal } from '../../test/support/principal';
import { Clock } from '../common/clock';
import { GatewayError } from '../common/gateway-error';
import type { Principal } from '../auth/principal';
import { Admission, RateLimiter } from './rate-limiter';
import { NO_LIMITS, RateLimits } from '../config/rate-limits';
import { MINUTE_MS } from './sliding-minute';

class TestClock extends Clock {
  constructor(public at: number) {
    super();
  }
  override now(): number {
    return this.at;
  }
}

const START = 29_000_000 * MINUTE_MS;

function principal(keyLimits: Partial<RateLimits> | null, ownerLimits: Partial<RateLimits> | null = null, keyId = 'key-1'): Principal {
  return testPrincipal({
    keyId,
    keyLimits: keyLimits && { ...NO_LIMITS, ...keyLimits },
    ownerLimits: ownerLimits && { ...NO_LIMITS, ...ownerLimits },
  });
}

/** Admits synchronously, as every call after a key's first does (no primer here): the call's end, or the refusal thrown. */
function admitted(limiter: RateLimiter, caller: Principal, entry = 'chat_completions'): Admission {
  const admission = limiter.admit(caller, entry);
  if (admission instanceof Promise) throw new Error('the admission waited');
  return admission;
}

function refusal(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('the call was admitted');
}

describe('RateLimiter', () => {
  let clock: TestClock;
  let limiter: RateLimiter;

  beforeEach(() => {
    clock = new TestClock(START + 30_000);
    limiter = new RateLimiter(clock);
  });

  it('admits a principal without limits without tracking it', () => {
    expect(admitted(limiter, principal(null), 'chat_completions')).toBeUndefined();
    expect(limiter.subjects.size).toBe(0);
  });

  it('refuses the 61st request of a minute with 429, its Retry-After and x-ratelimit headers, and admits again once the minute has slid on', () => {
    const caller = principal({ requests_per_minute: 60 });
    for (let call = 0; call < 60; call++) admitted(limiter, caller, 'chat_completions');

    const refused = refusal(() => admitted(limiter, caller, 'chat_completions'));

    expect(refused.code).toBe('rate_limit_exceeded');
    expect(refused.message).toBe("This key's limit of 60 requests per minute is reached; retry after 31 s.");
    expect(refused.retryAfterSeconds).toBe(31);
    expect(refused.headers).toEqual({ 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '31s' });
    expect(limiter.refusals.get('chat_completions\u0000requests_per_minute')).toBe(1);
    // A refused call is not counted: still refused just before the wait is over, admitted after it.
    clock.at += 30_900;
    expect(() => admitted(limiter, caller, 'chat_completions')).toThrow(GatewayError);
    clock.at += 100;
    expect(admitted(limiter, caller, 'chat_completions')).toEqual(expect.any(Function));
  });

  it("counts an owner's limit over all its keys, naming the owner in the refusal", () => {
    for (let call = 0; call < 3; call++) admitted(limiter, principal(null, { requests_per_minute: 5 }, 'key-1'), 'messages');
    for (let call = 0; call < 2; call++) admitted(limiter, principal(null, { requests_per_minute: 5 }, 'key-2'), 'messages');

    const refused = refusal(() => admitted(limiter, principal(null, { requests_per_minute: 5 }, 'key-3'), 'messages'));

    expect(refused.message).toMatch(/^This key's owner's limit of 5 requests per minute is reached/);
  });

  it('refuses a call over the concurrency limit until one under way ends, and ends each call once', () => {
    const caller = principal({ concurrent_requests: 2 });
    const first = admitted(limiter, caller, 'responses')!;
    admitted(limiter, caller, 'responses');

    const refused = refusal(() => admitted(limiter, caller, 'responses'));
    first();
    first();

    expect(refused.message).toBe("This key's limit of 2 concurrent requests is reached; retry after 1 s.");
    expect(refused.headers).toMatchObject({ 'x-ratelimit-limit-concurrent': '2' });
    expect(admitted(limiter, caller, 'responses')).toEqual(expect.any(Function));
    expect(() => admitted(limiter, caller, 'responses')).toThrow(GatewayError);
  });

  it("admits while the minute's tokens are under the limit, then refuses until enough of them have slid out", () => {
    const caller = principal({ tokens_per_minute: 1000 });
    admitted(limiter, caller, 'chat_completions');
    limiter.addTokens('key-1', 'team-a', 999);
    admitted(limiter, caller, 'chat_completions');
    limiter.addTokens('key-1', 'team-a', 500);

    const refused = refusal(() => admitted(limiter, caller, 'chat_completions'));

    expect(refused.message).toMatch(/^This key's limit of 1000 tokens per minute is reached; retry after \d+ s\.$/);
    // 1499 tokens 30 s into the minute: in the next, 1499 * (1 - f) <= 999 from f = 500/1499.
    expect(refused.retryAfterSeconds).toBe(51);
    clock.at = START + MINUTE_MS + 20_100;
    expect(admitted(limiter, caller, 'chat_completions')).toEqual(expect.any(Function));
  });

  it('counts tokens only for keys and owners it tracks', () => {
    limiter.addTokens('key-9', 'team-9', 1_000_000);
    expect(limiter.subjects.size).toBe(0);
  });

  it('tells what is left of each limit, and nothing for a principal without limits', async () => {
    const caller = principal({ requests_per_minute: 10, concurrent_requests: 3 }, { tokens_per_minute: 5000 });
    admitted(limiter, caller, 'chat_completions');
    admitted(limiter, caller, 'chat_completions');
    limiter.addTokens('key-1', 'team-a', 1200);

    expect(await limiter.standing(caller)).toEqual({
      key: {
        limits: { requests_per_minute: 10, tokens_per_minute: null, concurrent_requests: 3 },
        remaining: { requests_per_minute: 8, tokens_per_minute: null, concurrent_requests: 1 },
      },
      owner: {
        limits: { requests_per_minute: null, tokens_per_minute: 5000, concurrent_requests: null },
        remaining: { requests_per_minute: null, tokens_per_minute: 3800, concurrent_requests: null },
      },
    });
    expect(await limiter.standing(principal(null))).toEqual({ key: null, owner: null });
  });

  it('counts what other replicas reported: their calls under way and their minute counts', () => {
    const caller = principal({ requests_per_minute: 10, concurrent_requests: 4 });
    admitted(limiter, caller, 'chat_completions');
    const subject = limiter.subjects.get('key:key-1')!;
    subject.othersInFlight = 3;
    expect(() => admitted(limiter, caller, 'chat_completions')).toThrow("This key's limit of 4 concurrent requests is reached; retry after 1 s.");
    subject.othersInFlight = 0;
    subject.tally(Math.floor(clock.now() / MINUTE_MS)).sharedRequests = 9;
    expect(() => admitted(limiter, caller, 'chat_completions')).toThrow(/limit of 10 requests per minute/);
  });

  it("makes the first call of a key new here wait for the other replicas' counts, and its simultaneous calls with it", async () => {
    let release: () => void = () => undefined;
    const primed: string[] = [];
    limiter.usePrimer(async (subjects) => {
      primed.push(...subjects.map((subject) => subject.id));
      await new Promise<void>((resolve) => (release = resolve));
      // Another replica admitted 59 of this minute's calls.
      subjects[0].tally(Math.floor(clock.now() / MINUTE_MS)).sharedRequests = 59;
    });
    const caller = principal({ requests_per_minute: 60 });

    const first = limiter.admit(caller, 'chat_completions');
    const second = limiter.admit(caller, 'chat_completions');
    expect(first).toBeInstanceOf(Promise);
    expect(second).toBeInstanceOf(Promise);
    release();

    await expect(first).resolves.toEqual(expect.any(Function));
    await expect(second).rejects.toThrow("This key's limit of 60 requests per minute is reached");
    expect(primed).toEqual(['key:key-1']);
    expect(() => admitted(limiter, caller)).toThrow(GatewayError);
  });

  it('forgets subjects idle for minutes once nothing of theirs waits to be synced or is under way', () => {
    const end = admitted(limiter, principal({ requests_per_minute: 10 }), 'chat_completions')!;
    clock.at += 4 * MINUTE_MS;
    limiter.forgetIdle();
    expect(limiter.subjects.size).toBe(1);
    end();
    limiter.forgetIdle();
    expect(limiter.subjects.size).toBe(1); // its count of the earlier minute was never synced
    limiter.subjects.get('key:key-1')!.minutes.clear();
    limiter.forgetIdle();
    expect(limiter.subjects.size).toBe(0);
  });
});
