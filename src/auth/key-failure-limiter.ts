import { Inject, Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { KEY_FAILURE_SETTINGS, KeyFailureSettings } from '../config/settings/auth.settings';

interface Window {
  startedAt: number;
  failures: number;
}

/** Addresses tracked at once; a flood of addresses evicts the oldest windows, never grows the map. */
const MAX_ADDRESSES = 10_000;

/**
 * Slows key guessing: counts refused keys per client address in a fixed window and, past the
 * limit, tells the guard to answer 429 instead of 401 until the window ends. It is consulted
 * only after a key was refused, so valid keys never wait on it, from any address.
 */
@Injectable()
export class KeyFailureLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly clock: Clock,
    @Inject(KEY_FAILURE_SETTINGS) private readonly settings: KeyFailureSettings,
  ) {}

  /** Counts one refused key from `address`; returns the seconds to wait when it is over the limit. */
  recordFailure(address: string): number | undefined {
    const { limit, windowMs } = this.settings;
    if (limit <= 0) return undefined;
    const now = this.clock.now();
    let window = this.windows.get(address);
    if (!window || now - window.startedAt >= windowMs) {
      if (window) this.windows.delete(address);
      else this.makeRoom(now);
      window = { startedAt: now, failures: 0 };
      this.windows.set(address, window);
    }
    window.failures += 1;
    if (window.failures <= limit) return undefined;
    return Math.max(1, Math.ceil((window.startedAt + windowMs - now) / 1000));
  }

  /** Addresses currently tracked (for tests). */
  get size(): number {
    return this.windows.size;
  }

  private makeRoom(now: number): void {
    if (this.windows.size < MAX_ADDRESSES) return;
    // Insertion order is start order (a renewed window is re-inserted): expired ones come first.
    for (const [address, window] of this.windows) {
      if (this.windows.size < MAX_ADDRESSES && now - window.startedAt < this.settings.windowMs) return;
      this.windows.delete(address);
    }
  }
}
