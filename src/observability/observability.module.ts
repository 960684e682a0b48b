import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { GovernanceModule } from '../governance/governance.module';
import { MeteringModule } from '../metering/metering.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { CallTelemetry } from './call-telemetry';
import { GATEWAY_LOG } from './call-log';
import { GatewayMetrics } from './gateway-metrics';
import { MetricsController } from './metrics.controller';

/** Metrics (GET /metrics) and the JSON log: one report per request, for every module. */
@Global()
@Module({})
export class ObservabilityModule implements OnApplicationShutdown {
  constructor(@Inject(GATEWAY_LOG) private readonly log: Logger) {}

  static forRoot(log: Logger): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [UpstreamModule, MeteringModule, GovernanceModule],
      controllers: [MetricsController],
      providers: [{ provide: GATEWAY_LOG, useValue: log }, GatewayMetrics, CallTelemetry],
      exports: [GATEWAY_LOG, GatewayMetrics, CallTelemetry],
    };
  }

  /** Lines still buffered for standard output are written before the process goes. */
  onApplicationShutdown(): void {
    this.log.flush();
  }
}
