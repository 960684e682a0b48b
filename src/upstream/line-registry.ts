import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'undici';
import { GATEWAY_CONFIG, GatewayConfig, UpstreamConfig } from '../config/gateway-config';
import { Clock } from '../common/clock';
import { LINE_SETTINGS, LineSettings } from '../config/settings/upstream.settings';

/** One upstream line: its keep-alive pool and its live state. */
export class Line {
  inFlight = 0;
  coolingUntil = 0;

  constructor(
    readonly config: UpstreamConfig,
    readonly pool: Pool,
  ) {}

  get id(): string {
    return this.config.id;
  }

  isFull(): boolean {
    return this.config.maxConcurrency !== undefined && this.inFlight >= this.config.maxConcurrency;
  }
}

/** The lines of the configuration file, one undici pool each, made once at start-up. */
@Injectable()
export class LineRegistry implements OnModuleDestroy {
  private readonly lines = new Map<string, Line>();

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(LINE_SETTINGS) private readonly settings: LineSettings,
    private readonly clock: Clock,
  ) {
    for (const upstream of config.upstreams) {
      const pool = new Pool(upstream.baseUrl, {
        connections: upstream.maxConcurrency ?? settings.connections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        connect: { timeout: Math.min(10_000, upstream.timeoutMs) },
      });
      this.lines.set(upstream.id, new Line(upstream, pool));
    }
  }

  get(id: string): Line {
    const line = this.lines.get(id);
    if (!line) throw new Error(`unknown line ${id}`); // the config loader rejects this case
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

  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.all().map((line) => line.pool.close().catch(() => undefined)));
  }
}
