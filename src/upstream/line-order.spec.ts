import { drawnFirst, linesTriedOf, retryDelayMs } from './line-order';

describe(drawnFirst.name, () => {
  const lines = ['a', 'b', 'c'];
  const all = () => true;

  it('puts the line the draw falls on first and keeps the others in their order', () => {
    // Weights 1, 2, 1 cover [0, 0.25), [0.25, 0.75), [0.75, 1).
    expect(drawnFirst(lines, [1, 2, 1], all, 0)).toEqual(['a', 'b', 'c']);
    expect(drawnFirst(lines, [1, 2, 1], all, 0.25)).toEqual(['b', 'a', 'c']);
    expect(drawnFirst(lines, [1, 2, 1], all, 0.74)).toEqual(['b', 'a', 'c']);
    expect(drawnFirst(lines, [1, 2, 1], all, 0.75)).toEqual(['c', 'a', 'b']);
    expect(drawnFirst(lines, [1, 2, 1], all, 0.999)).toEqual(['c', 'a', 'b']);
  });

  it('never draws a line of weight 0 or one that cannot take the call', () => {
    for (let step = 0; step < 100; step++) {
      expect(drawnFirst(lines, [0, 1, 5], (line) => line !== 'c', step / 100)[0]).toBe('b');
    }
  });

  it('leaves the order alone when no line that can take the call weighs anything', () => {
    expect(drawnFirst(lines, [0, 0, 3], (line) => line !== 'c', 0.5)).toBe(lines);
  });
});

describe(retryDelayMs.name, () => {
  const policy = { attempts: 3, backoffMs: 100, maxBackoffMs: 1_000 };

  it('draws below a ceiling that doubles with each retry and stops at max_backoff_ms', () => {
    expect(retryDelayMs(policy, 0, 0, 0.5)).toBe(50);
    expect(retryDelayMs(policy, 1, 0, 0.5)).toBe(100);
    expect(retryDelayMs(policy, 2, 0, 0.999)).toBe(399);
    expect(retryDelayMs(policy, 6, 0, 0.999)).toBe(999);
    expect(retryDelayMs(policy, 0, 0, 0)).toBe(0);
  });

  it("waits at least the upstream's Retry-After, and not at all past max_backoff_ms", () => {
    expect(retryDelayMs(policy, 0, 700, 0.1)).toBe(700);
    expect(retryDelayMs(policy, 0, 1_000, 0.1)).toBe(1_000);
    expect(retryDelayMs(policy, 0, 1_001, 0.1)).toBeUndefined();
  });
});

describe(linesTriedOf.name, () => {
  it('lists the line of each attempt only when there were several', () => {
    expect(linesTriedOf([{ line: 'a' }, { line: 'b' }, { line: 'a' }])).toEqual(['a', 'b', 'a']);
    expect(linesTriedOf([{ line: 'a' }])).toBeNull();
    expect(linesTriedOf([])).toBeNull();
    expect(linesTriedOf(undefined)).toBeNull();
  });
});
