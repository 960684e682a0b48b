import { MINUTE_MS, slidingCount, waitUntilAtMost } from './sliding-minute';

const MINUTE = 29_000_000;
const START = MINUTE * MINUTE_MS;

describe('sliding minute', () => {
  it('weighs the previous minute by the part of it still inside the last 60 s', () => {
    const counts = { minute: MINUTE, current: 10, previous: 60 };

    expect(slidingCount(counts, START)).toBe(70);
    expect(slidingCount(counts, START + 15_000)).toBe(55);
    expect(slidingCount(counts, START + 45_000)).toBe(25);
  });

  it('needs no wait while the count is within what is allowed', () => {
    expect(waitUntilAtMost({ minute: MINUTE, current: 59, previous: 0 }, START + 1_000, 59)).toBe(0);
  });

  it("waits for the previous minute's share to fade when the current minute alone is within it", () => {
    // 30 * (1 - f) + 20 <= 39  when  f >= 11/30: 22 s into the minute.
    const wait = waitUntilAtMost({ minute: MINUTE, current: 20, previous: 30 }, START + 10_000, 39);

    expect(wait).toBe(12_000);
    expect(slidingCount({ minute: MINUTE, current: 20, previous: 30 }, START + 10_000 + wait)).toBeLessThanOrEqual(39);
    expect(slidingCount({ minute: MINUTE, current: 20, previous: 30 }, START + 10_000 + wait - 100)).toBeGreaterThan(39);
  });

  it('waits into the next minute when the current minute alone is over it', () => {
    // 60 counted in this minute, 59 allowed: in the next minute 60 * (1 - f) <= 59 from f = 1/60, 1 s in.
    expect(waitUntilAtMost({ minute: MINUTE, current: 60, previous: 0 }, START + 30_000, 59)).toBe(31_000);
    // Nothing allowed: the whole next minute, until this minute's count has left the last 60 s.
    expect(waitUntilAtMost({ minute: MINUTE, current: 5, previous: 0 }, START + 30_000, 0)).toBe(90_000);
  });
});
