import { nextCheckPhase } from './next-check-phase';

describe(nextCheckPhase.name, () => {
  it('gives every caller of one turn the same promise, and a new one after it resolved', async () => {
    const first = nextCheckPhase();
    expect(nextCheckPhase()).toBe(first);
    await first;
    const next = nextCheckPhase();
    expect(next).not.toBe(first);
    await next;
  });

  it('resolves in the check phase: after the microtasks queued before it, among the Immediates in their order', async () => {
    const order: string[] = [];
    setImmediate(() => order.push('immediate before'));
    const phase = nextCheckPhase().then(() => order.push('check phase'));
    void Promise.resolve().then(() => order.push('microtask'));
    setImmediate(() => order.push('immediate after'));
    await phase;
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['microtask', 'immediate before', 'check phase', 'immediate after']);
  });
});
