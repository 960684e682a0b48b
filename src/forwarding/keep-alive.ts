/**
 * Calls `ping` each time `intervalMs` pass without `heard()` (SPEC.md: translated messages
 * streams send `ping` after 15 s without upstream output). One timer per stream, re-armed on
 * each upstream chunk (`refresh` moves it, allocating nothing): a timer and a promise race per
 * event cost more than translating the event.
 */
export class KeepAlive {
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(intervalMs: number, ping: () => void) {
    const timer = setTimeout(() => {
      timer.refresh();
      ping();
    }, intervalMs);
    this.timer = timer;
  }

  /** The upstream said something: the silence starts again. */
  heard(): void {
    if (!this.stopped) this.timer.refresh();
  }

  /** No ping after this; `heard` no longer re-arms the timer. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
