import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayMetrics } from './gateway-metrics';

/**
 * Prometheus scrape endpoint. No key: keep the gateway's port internal, or let the load
 * balancer refuse `/metrics` from outside (docs/operations.md "Metrics").
 */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: GatewayMetrics) {}

  @Get()
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const text = await this.metrics.render();
    void reply.header('content-type', this.metrics.contentType).send(text);
  }
}
