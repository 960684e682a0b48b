import type { SchedulerRegistry } from '@nestjs/schedule';

/**
 * The rounds of a background job (usage retention, the video reconciler, rate-limit sync, alert
 * delivery, the embedded database's statistics): one at a time, since a round asked for while
 * another runs is that one; set going on an interval registered with Nest's scheduler; and
 * ended by `stop`, which waits for the round under way, so none is cut off at shutdown.
 */
export class Rounds<T> {
  private current: Promise<T> | undefined;
  private again = false;
  private stopped = false;

  /** `idle` is what a round asked for after `stop` gives. */
  constructor(
    private readonly scheduler: SchedulerRegistry,
    private readonly name: string,
    private readonly work: () => Promise<T>,
    private readonly idle: T,
  ) {}

  /** A round every `intervalMs` (the timer does not keep the process alive). */
  every(intervalMs: number): void {
    const timer = setInterval(() => void this.run(), intervalMs);
    timer.unref();
    this.scheduler.addInterval(this.name, timer);
  }

  /** A new round, or the one under way. */
  run(): Promise<T> {
    if (this.stopped) return Promise.resolve(this.idle);
    this.current ??= this.work().finally(() => {
      this.current = undefined;
      if (!this.again) return;
      this.again = false;
      void this.run();
    });
    return this.current;
  }

  /** A round now; with one under way, another once it ends (it may have read before what the caller just wrote). */
  nudge(): void {
    if (this.current) this.again = true;
    else void this.run();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** No more rounds; resolves when the round under way has ended, however it ends. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scheduler.doesExist('interval', this.name)) this.scheduler.deleteInterval(this.name);
    await this.current?.catch(() => undefined);
  }
}
