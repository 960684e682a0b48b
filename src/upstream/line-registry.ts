import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'undici';
import { GATEWAY_CONFIG, GatewayConfig, UpstreamConfig } from '../config/gateway-config';
import { Clock } from '../common/clock';
import { LINE_SETTINGS, LineSettings } from '../config/settings/upstream.settings';

/** How an attempt on a line ended: an answer used or passed on, or why the call looked further. */
export type AttemptOutcome = 'answered' | '429' | '5xx' | 'credentials' | 'refused' | 'timeout' | 'reset' | 'aborted';

export const ATTEMPT_OUTCOMES: readonly AttemptOutcome[] = ['answered', '429', '5xx', 'credentials', 'refused', 'timeout', 'reset', 'aborted'];

function noAttempts(): Record<AttemptOutcome, number> {
  return { answered: 0, '429': 0, '5xx': 0, credentials: 0, refused: 0, timeout: 0, reset: 0, aborted: 0 };
}

/** One upstream line: its keep-alive pool and its live state. */
export class Line {
  /** Attempts sent to the line since it was made, by outcome (the metrics read them). */
  readonly attempts = noAttempts();
  /** Attempts after which the call went on (to another line of its model, or to a retry), by outcome. */
  readonly failovers = noAttempts();
  inFlight = 0;
  coolingUntil = 0;
  /** Until when the line's vendor asked for no calls (a 429's `Retry-After`): tried after the model's other lines. */
  rateLimitedUntil = 0;

  constructor(
    /** Replaced in place when a catalog change leaves the pool's settings alone (a new key, auth style). */
    public config: UpstreamConfig,
    readonly pool: Pool,
  ) {}

  get id(): string {
    return this.config.id;
  }

  isFull(): boolean {
    return this.config.maxConcurrency !== undefined && this.inFlight >= this.config.maxConcurrency;
  }
}

/** Whether a line's pool can stay as it is under new settings. */
function samePool(current: UpstreamConfig, next: UpstreamConfig): boolean {
  return current.baseUrl === next.baseUrl && current.maxConcurrency === next.maxConcurrency && current.timeoutMs === next.timeoutMs;
}

/**
 * The catalog's lines, one undici pool each: those of the configuration file at start-up, then
 * whatever the live catalog says (`apply`).
 */
@Injectable()
export class LineRegistry implements OnModuleDestroy {
  private lines = new Map<string, Line>();

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LINE_SETTINGS) private readonly settings: LineSettings,
    private readonly clock: Clock,
  ) {
    for (const upstream of config.upstreams) this.lines.set(upstream.id, this.newLine(upstream));
  }

  /**
   * Takes a new set of lines. A line whose address and pool settings stay keeps its pool, its
   * calls in flight and its cooling; a changed or removed line's pool is closed gracefully: the
   * calls on it finish, new calls go to the new one.
   */
  apply(upstreams: UpstreamConfig[]): void {
    const next = new Map<string, Line>();
    for (const upstream of upstreams) {
      const line = this.lines.get(upstream.id);
      if (line && samePool(line.config, upstream)) {
        line.config = upstream;
        next.set(upstream.id, line);
      } else {
        next.set(upstream.id, this.newLine(upstream));
      }
    }
    const replaced = [...this.lines.values()].filter((line) => next.get(line.id) !== line);
    this.lines = next;
    for (const line of replaced) line.pool.close().catch(() => undefined);
  }

  private newLine(upstream: UpstreamConfig): Line {
    const pool = new Pool(upstream.baseUrl, {
      // No cap by default (`LINE_CONNECTIONS` 0): a capped pool queues the calls past it for a
      // socket, and behind long streams that wait is minutes (docs/performance.md "Long streams").
      connections: upstream.maxConcurrency ?? (this.settings.connections || null),
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connect: { timeout: Math.min(10_000, upstream.timeoutMs) },
    });
    return new Line(upstream, pool);
  }

  get(id: string): Line {
    const line = this.lines.get(id);
    if (!line) throw new Error(`unknown line ${id}`); // the catalog's models name only lines it has
    return line;
  }

  /** The line of that id, or undefined when the configuration has none (a task of an older configuration). */
  find(id: string): Line | undefined {
    return this.lines.get(id);
  }

  all(): Line[] {
    return [...this.lines.values()];
  }

  isCooling(line: Line): boolean {
    return line.coolingUntil > this.clock.now();
  }

  coolDown(line: Line): void {
    line.coolingUntil = this.clock.now() + this.settings.cooldownMs;
  }

  isRateLimited(line: Line): boolean {
    return line.rateLimitedUntil > this.clock.now();
  }

  /** The line answered 429 asking for `retryAfterMs` without calls: so long, at most LINE_429_COOLDOWN_MAX_MS. */
  rateLimited(line: Line, retryAfterMs: number): void {
    const until = this.clock.now() + Math.min(retryAfterMs, this.settings.rateLimitCooldownMaxMs);
    if (until > line.rateLimitedUntil) line.rateLimitedUntil = until;
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.all().map((line) => line.pool.close().catch(() => undefined)));
  }
}
