import { testPrincipal } from '../../test/support/principal';
import type { SchedulerRegistry } from '@nestjs/schedule';
import type { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import type { Principal } from '../auth/principal';
import { RateLimiter } from './rate-limiter';
import { RateLimitSync } from './rate-limit-sync';
import { MINUTE_MS } from './sliding-minute';

const NOW = 29_000_000 * MINUTE_MS + 10_000;

const CALLER: Principal = testPrincipal({ keyId: 'key-1', keyLimits: { requests_per_minute: 10, tokens_per_minute: null, concurrent_requests: null } });

class FixedClock extends Clock {
  override now(): number {
    return NOW;
  }
}

/** A database that refuses while `away`, else adds the sent counts to its table and returns the totals, as the upsert does. */
function fakeDatabase() {
  const table = new Map<string, { requests: number; tokens: number }>();
  const database = { away: true, sent: [] as number[][] };
  const query = async (text: string, parameters: unknown[]) => {
    if (database.away) throw new Error('connection refused');
    if (!text.startsWith('INSERT INTO rate_count')) return [];
    const [subjects, minutes, requests, tokens] = parameters as [string[], number[], number[], number[]];
    database.sent.push(requests);
    return subjects.map((subject, index) => {
      const key = `${subject}|${minutes[index]}`;
      const row = table.get(key) ?? { requests: 0, tokens: 0 };
      row.requests += requests[index];
      row.tokens += tokens[index];
      table.set(key, row);
      return { subject, minute: String(minutes[index]), requests: String(row.requests), tokens: String(row.tokens) };
    });
  };
  return { database, dataSource: { query } as unknown as DataSource };
}

describe('RateLimitSync', () => {
  it('keeps the counts of a round the database refused, and sends them with the next round once it answers', async () => {
    const clock = new FixedClock();
    const limiter = new RateLimiter(clock);
    const { database, dataSource } = fakeDatabase();
    const sync = new RateLimitSync(dataSource, limiter, {} as SchedulerRegistry, clock, { syncIntervalMs: 250 });
    for (let call = 0; call < 3; call++) expect(limiter.admit(CALLER, 'chat_completions')).toEqual(expect.any(Function));

    await sync.runOnce();
    const tally = limiter.subjects.get('key:key-1')!.tally(Math.floor(NOW / MINUTE_MS));
    expect(tally).toMatchObject({ pendingRequests: 3, sendingRequests: 0, sharedRequests: 0 });

    database.away = false;
    expect(limiter.admit(CALLER, 'chat_completions')).toEqual(expect.any(Function));
    await sync.runOnce();

    // One round with all four calls of this minute (and the previous minute's nothing), then the shared total.
    expect(database.sent).toEqual([[4, 0]]);
    expect(tally).toMatchObject({ pendingRequests: 0, sendingRequests: 0, sharedRequests: 4 });
  });
});
