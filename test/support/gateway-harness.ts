import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DestinationStream } from 'pino';
import { DataSource } from 'typeorm';
import { createGatewayApp } from '../../src/app.factory';
import { loadGatewayConfig } from '../../src/config/config.loader';
import { defaultSettings, GatewayOptions } from '../../src/config/gateway-options';
import { UsageWriter } from '../../src/metering/usage-writer.service';
import { UsageRecord } from '../../src/metering/usage-record.entity';
import { UpstreamSimulator } from '../simulator/upstream-simulator';
import { createTestDatabase, TestDatabase } from './test-database';
import { standardConfigYaml, VENDOR_KEY } from './test-config';

export const ADMIN_TOKEN_FOR_TESTS = 'admin-token-for-tests';

export interface HarnessOptions {
  /** Builds the YAML from the simulator URL; default: the standard test configuration. */
  configYaml?: (simulatorUrl: string) => string;
  settings?: Partial<Omit<GatewayOptions, 'config' | 'database'>>;
  /**
   * Another gateway on the same database and simulator as this one (a replica, or the same
   * gateway started again). Stopping it leaves the shared database and simulator running.
   */
  sharing?: GatewayHarness;
  /**
   * Receives the gateway's JSON log, Nest's own messages included (set `settings.logLevel` too:
   * the default is silent). Without it Nest's messages are off.
   */
  logDestination?: DestinationStream;
}

/**
 * One real gateway on a real port in front of the upstream simulator, on its own database.
 */
export class GatewayHarness {
  private constructor(
    readonly app: NestFastifyApplication,
    readonly url: string,
    readonly simulator: UpstreamSimulator,
    private readonly database: TestDatabase,
    readonly simulatorUrl: string,
    private readonly owned: boolean,
  ) {}

  static async start(options: HarnessOptions = {}): Promise<GatewayHarness> {
    const shared = options.sharing;
    const simulator = shared?.simulator ?? new UpstreamSimulator({ apiKey: VENDOR_KEY });
    const simulatorUrl = shared?.simulatorUrl ?? (await simulator.start());
    const database = shared?.database ?? (await createTestDatabase());
    const yaml = (options.configYaml ?? standardConfigYaml)(simulatorUrl);
    const config = loadGatewayConfig(yaml, { TEST_VENDOR_KEY: VENDOR_KEY });
    const defaults = defaultSettings();
    const app = await createGatewayApp(
      {
        config,
        database: database.settings,
        adminToken: ADMIN_TOKEN_FOR_TESTS,
        ...defaults,
        usageWriter: { ...defaults.usageWriter, flushIntervalMs: 20 },
        lines: { ...defaults.lines, cooldownMs: 500 },
        logLevel: 'silent',
        ...options.settings,
      },
      options.logDestination ? { logDestination: options.logDestination } : { logger: false },
    );
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address() as { port: number };
    return new GatewayHarness(app, `http://127.0.0.1:${address.port}`, simulator, database, simulatorUrl, !shared);
  }

  get dataSource(): DataSource {
    return this.app.get(DataSource);
  }

  /** Writes every queued usage record now. */
  async flushUsage(): Promise<void> {
    await this.app.get(UsageWriter).flush();
  }

  async usageRecords(): Promise<UsageRecord[]> {
    await this.flushUsage();
    return this.dataSource.getRepository(UsageRecord).find({ order: { startedAt: 'ASC' } });
  }

  async usageRecord(requestId: string): Promise<UsageRecord | null> {
    await this.flushUsage();
    return this.dataSource.getRepository(UsageRecord).findOneBy({ requestId });
  }

  async stop(): Promise<void> {
    await this.app.close();
    if (!this.owned) return;
    await this.simulator.stop();
    await this.database.drop();
  }
}
