import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import { ShutdownState } from '../common/shutdown-state';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { DatabaseHealthIndicator } from './database.health';

/** Probes for load balancers and orchestrators; no key needed. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownState,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  live() {
    return this.health.check([]);
  }

  /** Ready for traffic: not shutting down, database reachable, migrations applied, configuration loaded. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    try {
      return await this.health.check([
        () => this.serving('serving'),
        () => this.database.isReady('database'),
        () => this.indicators.check('config').up({ models: this.config.models.length }),
      ]);
    } catch (error) {
      reply.code(HttpStatus.SERVICE_UNAVAILABLE);
      return (error as { getResponse?: () => unknown }).getResponse?.() ?? { status: 'error' };
    }
  }

  /** Down from the shutdown signal on, so that load balancers stop sending calls before the drain. */
  private serving(key: string) {
    const indicator = this.indicators.check(key);
    return this.shutdown.stopping ? indicator.down({ message: `shutting down (${this.shutdown.cause})` }) : indicator.up();
  }
}
