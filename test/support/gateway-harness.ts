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
    await stopStep('app.close()', () => this.app.close());
    if (!this.owned) return;
    await stopStep('simulator.stop()', () => this.simulator.stop());
    await stopStep('database.drop()', () => this.database.drop());
  }
}

/** How long a step of `stop` runs before it says so: a suite's hook gives up at 30 s. */
const SLOW_STOP_MS = 10_000;

/**
 * One step of stopping a gateway. A step still running after SLOW_STOP_MS writes its name and
 * what keeps the process busy to stderr (jest shows it beside the hook's timeout), so a stop
 * that hangs names the part that hangs.
 */
async function stopStep(name: string, work: () => Promise<unknown>): Promise<void> {
  const started = Date.now();
  const watchdog = setTimeout(() => {
    process.stderr.write(
      `GatewayHarness.stop: ${name} still running after ${Date.now() - started} ms; active: ${process.getActiveResourcesInfo().join(', ')}\n`,
    );
  }, SLOW_STOP_MS);
  watchdog.unref();
  try {
    await work();
  } finally {
    clearTimeout(watchdog);
  }
}
