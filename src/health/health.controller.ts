import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { DatabaseHealthIndicator } from './database.health';

/** Probes for load balancers and orchestrators; no key needed. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  live() {
    return this.health.check([]);
  }

  /** Ready for traffic: database reachable, migrations applied, configuration loaded. */
  @Get('ready')
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    try {
      return await this.health.check([
        () => this.database.isReady('database'),
        () => this.indicators.check('config').up({ models: this.config.models.length }),
      ]);
    } catch (error) {
      reply.code(HttpStatus.SERVICE_UNAVAILABLE);
      return (error as { getResponse?: () => unknown }).getResponse?.() ?? { status: 'error' };
    }
  }
}
