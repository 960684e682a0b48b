import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { modelSpecOf, upstreamSpecOf } from '../config/catalog-spec';
import { ConfigError, loadGatewayConfigFile, parseModelItem, parseUpstreamItem } from '../config/config.loader';
import { GatewayError } from '../common/gateway-error';
import { ApiKeyRepository } from '../auth/api-key.repository';
import { GATEWAY_CONFIG, GatewayConfig, ModelConfig, UpstreamConfig } from '../config/gateway-config';
import { CATALOG_SETTINGS, CatalogSettings } from '../config/settings/catalog.settings';
import { isEmbedded } from '../database/data-source';
import { LineRegistry } from '../upstream/line-registry';
import { CATALOG_CHANNEL, CatalogContents, CatalogRow, CatalogStore } from './catalog-store';
import { CatalogService } from './catalog.service';
import { lastFour, LineSecrets, referencedVariable } from './line-secrets';

/** Stands in for the vendor key while a stored line is checked: the key is kept apart from its JSON form. */
const KEY_KEPT_APART = 'kept apart';

/**
 * Keeps this replica's catalog (models and lines) equal to the database's. At start-up the
 * configuration file's lines and models are applied (`source: config`) and the whole catalog
 * loaded; then a change made anywhere arrives by `LISTEN/NOTIFY` on real PostgreSQL, and a
 * comparison of the change counter every CATALOG_CHECK_MS catches what a notification missed.
 * A change made through this replica's admin API is loaded before the API answers.
 */
@Injectable()
export class CatalogSync implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Catalog');
  readonly store: CatalogStore;
  readonly secrets: LineSecrets;
  /** The change counter of the catalog this replica serves; -1 before the first load. */
  private version = -1;
  private loading: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private listener?: Client;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(GATEWAY_CONFIG) private config: GatewayConfig,
    @Inject(CATALOG_SETTINGS) private readonly settings: CatalogSettings,
    private readonly catalog: CatalogService,
    private readonly lines: LineRegistry,
    private readonly keys: ApiKeyRepository,
  ) {
    this.store = new CatalogStore(dataSource);
    this.secrets = new LineSecrets(settings.secretKey);
  }

  async onModuleInit(): Promise<void> {
    await this.applyFile(this.config);
    await this.refresh();
    this.timer = setInterval(() => void this.check(), this.settings.checkIntervalMs);
    this.timer.unref();
    if (!isEmbedded(this.dataSource)) await this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.listener?.end().catch(() => undefined);
  }

  /** Where this replica resolves `${VAR}` references of lines. */
  readonly environment = process.env;

  /** The configuration file a reload reads, when there is one. */
  get configFile(): string | undefined {
    return this.settings.configFile;
  }

  /**
   * Reads the configuration file again (SIGHUP, `POST /admin/reload`) and applies it as at
   * start-up: owners, keys, lines and models. A file with a problem changes nothing: the problems
   * are logged and thrown as a 400 naming each by its YAML path.
   */
  async reload(): Promise<{ upstreams: number; models: number; owners: number; keys: number }> {
    const path = this.settings.configFile;
    if (!path) throw new GatewayError('invalid_request', 'There is no configuration file to read again: the gateway was started without GATEWAY_CONFIG.');
    let config: GatewayConfig;
    try {
      config = loadGatewayConfigFile(path, this.environment);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.logger.error(`configuration not reloaded, nothing changed: ${error.message}`);
      throw new GatewayError('invalid_request', `Nothing changed: ${error.message}`);
    }
    await this.keys.applyConfig(config.owners, config.keys);
    await this.applyFile(config);
    this.config = config;
    // The file's lines may carry new keys, which the stored catalog does not show: load it whatever its version.
    this.version = -1;
    await this.refresh();
    this.logger.log(`configuration reloaded from ${path}`);
    return { upstreams: config.upstreams.length, models: config.models.length, owners: config.owners.length, keys: config.keys.length };
  }

  private async applyFile(config: GatewayConfig): Promise<void> {
    await this.store.applyConfig(
      config.upstreams.map((upstream) => ({ spec: upstreamSpecOf(upstream), last4: lastFour(upstream.apiKey) })),
      config.models.map(modelSpecOf),
    );
  }

  /** Loads the database's catalog when it differs from the one served; one load at a time. */
  refresh(): Promise<void> {
    this.loading = this.loading.then(
      () => this.load(),
      () => this.load(),
    );
    return this.loading;
  }

  private async check(): Promise<void> {
    try {
      if ((await this.store.version()) !== this.version) await this.refresh();
    } catch (error) {
      this.logger.warn(`catalog check failed (${String(error)}); this replica keeps its catalog and tries again`);
    }
  }

  private async load(): Promise<void> {
    const contents = await this.store.contents();
    if (contents.version === this.version) return;
    const { upstreams, models } = this.built(contents);
    this.lines.apply(upstreams);
    this.catalog.replace(models);
    this.version = contents.version;
  }

  /** The rows as the gateway's config; a row that fails the file's rules is left out, with a log line. */
  private built(contents: CatalogContents): { upstreams: UpstreamConfig[]; models: ModelConfig[] } {
    const upstreams: UpstreamConfig[] = [];
    for (const row of contents.upstreams) {
      const parsed = parseUpstreamItem({ ...row.spec, api_key: KEY_KEPT_APART });
      if (parsed.problems) this.logger.error(`upstream line ${row.id} left out: ${parsed.problems.join('; ')}`);
      else upstreams.push({ ...parsed.ok, apiKey: this.vendorKey(row) });
    }
    const lineIds = new Set(upstreams.map((upstream) => upstream.id));
    const models: ModelConfig[] = [];
    for (const row of contents.models) {
      const parsed = parseModelItem(row.spec, lineIds);
      if (parsed.problems) this.logger.error(`model ${row.id} left out: ${parsed.problems.join('; ')}`);
      else models.push(parsed.ok);
    }
    return { upstreams, models };
  }

  /** A line's vendor key on this replica; empty (the vendor refuses the calls) when it cannot be had, with a log line. */
  private vendorKey(row: CatalogRow): string {
    if (row.apiKeyRef) {
      const name = referencedVariable(row.apiKeyRef)!;
      const value = this.environment[name];
      if (value === undefined) this.logger.error(`upstream line ${row.id}: environment variable ${name} is not set on this replica`);
      return value ?? '';
    }
    if (row.apiKeySealed) {
      try {
        return this.secrets.open(row.apiKeySealed);
      } catch (error) {
        this.logger.error(`upstream line ${row.id}: its stored vendor key cannot be read: ${(error as Error).message}`);
        return '';
      }
    }
    const fromFile = this.config.upstreams.find((upstream) => upstream.id === row.id);
    if (!fromFile) this.logger.error(`upstream line ${row.id}: its vendor key is in the configuration file of another replica, not this one's`);
    return fromFile?.apiKey ?? '';
  }

  /** A connection of its own that hears every change at once; lost, it is opened again while the checks go on. */
  private async listen(): Promise<void> {
    const url = (this.dataSource.options as { url?: string }).url;
    if (!url || this.stopped) return;
    const client = new Client({ connectionString: url, application_name: 'model-gateway catalog' });
    client.on('notification', () => void this.refresh().catch((error: unknown) => this.logger.warn(`catalog load failed: ${String(error)}`)));
    client.on('error', () => undefined);
    client.on('end', () => {
      if (this.listener !== client || this.stopped) return;
      this.listener = undefined;
      setTimeout(() => void this.listen(), this.settings.checkIntervalMs).unref();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CATALOG_CHANNEL}`);
      this.listener = client;
    } catch (error) {
      this.logger.warn(`catalog notifications unavailable (${String(error)}); changes arrive by the periodic check`);
      await client.end().catch(() => undefined);
      if (!this.stopped) setTimeout(() => void this.listen(), this.settings.checkIntervalMs).unref();
    }
  }
}
