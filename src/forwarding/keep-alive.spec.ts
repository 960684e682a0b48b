/**
 * @jest-environment node
 */
// Fakes timers: in jest's own sandbox (test/jest/shared-packages-runtime.js says why).
import { KeepAlive } from './keep-alive';

describe(KeepAlive.name, () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('pings once per interval of silence, for as long as the silence lasts', () => {
    let pings = 0;
    const keepAlive = new KeepAlive(100, () => pings++);
    jest.advanceTimersByTime(99);
    expect(pings).toBe(0);
    jest.advanceTimersByTime(1);
    expect(pings).toBe(1);
    jest.advanceTimersByTime(250);
    expect(pings).toBe(3);
    keepAlive.stop();
  });

  it('counts the silence from the last thing heard', () => {
    let pings = 0;
    const keepAlive = new KeepAlive(100, () => pings++);
    for (let step = 0; step < 10; step++) {
      jest.advanceTimersByTime(60);
      keepAlive.heard();
    }
    expect(pings).toBe(0);
    jest.advanceTimersByTime(100);
    expect(pings).toBe(1);
    keepAlive.stop();
  });

  it('pings no more once stopped, whatever is heard after', () => {
    let pings = 0;
    const keepAlive = new KeepAlive(100, () => pings++);
    jest.advanceTimersByTime(150);
    keepAlive.stop();
    keepAlive.heard();
    jest.advanceTimersByTime(1_000);
    expect(pings).toBe(1);
  });
});
