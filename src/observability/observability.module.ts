import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { GovernanceModule } from '../governance/governance.module';
import { MeteringModule } from '../metering/metering.module';
import { UpstreamModule } from '../upstream/upstream.module';
import { CallTelemetry } from './call-telemetry';
import { GATEWAY_LOG } from './call-log';
import { GatewayMetrics } from './gateway-metrics';
import { MetricsController } from './metrics.controller';

/** Metrics (GET /metrics), the JSON log and traces (when configured): one report per request, for every module. */
@Global()
@Module({})
export class ObservabilityModule implements OnApplicationShutdown {
  constructor(
    @Inject(GATEWAY_LOG) private readonly log: Logger,
    private readonly telemetry: CallTelemetry,
  ) {}

  static forRoot(log: Logger): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [UpstreamModule, MeteringModule, GovernanceModule],
      controllers: [MetricsController],
      providers: [{ provide: GATEWAY_LOG, useValue: log }, GatewayMetrics, CallTelemetry],
      exports: [GATEWAY_LOG, GatewayMetrics, CallTelemetry],
    };
  }

  /** Spans still waiting are sent, then lines still buffered for standard output are written, before the process goes. */
  async onApplicationShutdown(): Promise<void> {
    await this.telemetry.stopTracing();
    this.log.flush();
  }
}
