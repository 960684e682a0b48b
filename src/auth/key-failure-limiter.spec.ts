import { Clock } from '../common/clock';
import { KeyFailureLimiter } from './key-failure-limiter';

class FakeClock extends Clock {
  time = 1_000_000;
  override now(): number {
    return this.time;
  }
}

describe(KeyFailureLimiter.name, () => {
  function limiter(limit = 3, windowMs = 10_000) {
    const clock = new FakeClock();
    return { clock, limiter: new KeyFailureLimiter(clock, { limit, windowMs }) };
  }

  it('lets an address fail up to the limit, then answers the seconds left in its window', () => {
    const { clock, limiter: subject } = limiter();
    expect([1, 2, 3].map(() => subject.recordFailure('10.0.0.1'))).toEqual([undefined, undefined, undefined]);
    clock.time += 2_500;
    expect(subject.recordFailure('10.0.0.1')).toBe(8);
  });

  it('counts every address on its own', () => {
    const { limiter: subject } = limiter(1);
    subject.recordFailure('10.0.0.1');
    expect(subject.recordFailure('10.0.0.1')).toBe(10);
    expect(subject.recordFailure('10.0.0.2')).toBeUndefined();
  });

  it('starts a new window once the old one has ended', () => {
    const { clock, limiter: subject } = limiter(1, 1_000);
    subject.recordFailure('10.0.0.1');
    expect(subject.recordFailure('10.0.0.1')).toBe(1);
    clock.time += 1_000;
    expect(subject.recordFailure('10.0.0.1')).toBeUndefined();
  });

  it('never limits when the limit is 0', () => {
    const { limiter: subject } = limiter(0);
    for (let attempt = 0; attempt < 100; attempt++) expect(subject.recordFailure('10.0.0.1')).toBeUndefined();
    expect(subject.size).toBe(0);
  });

  it('keeps at most 10,000 addresses, dropping the oldest windows first', () => {
    const { clock, limiter: subject } = limiter(1);
    for (let index = 0; index < 25_000; index++) {
      subject.recordFailure(`address-${index}`);
      clock.time += 1;
    }
    expect(subject.size).toBe(10_000);
    // The newest addresses are still counted: their second failure is over the limit.
    expect(subject.recordFailure('address-24999')).toBeGreaterThan(0);
  });
});
