import 'reflect-metadata';
import { gatewayOptionsFromEnv, processSettingsFrom } from './config/gateway-options';
import { ConfigError } from './config/config.loader';
import { tracingSettingsFrom } from './config/settings/tracing.settings';

async function bootstrap(): Promise<void> {
  let options;
  let settings;
  let tracing;
  try {
    options = gatewayOptionsFromEnv(process.env);
    settings = processSettingsFrom(process.env);
    tracing = tracingSettingsFrom(process.env) ?? null;
  } catch (error) {
    // A bad configuration stops the process with every problem named by its YAML path, before
    // the application's modules (Nest, TypeORM, the engine: most of a start's time) are loaded.
    process.stderr.write(`${error instanceof ConfigError || error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
  const [{ Logger }, { createGatewayApp }, { installGracefulShutdown }, { CatalogAdminService }, { GatewayError }] = await Promise.all([
    import('@nestjs/common'),
    import('./app.factory'),
    import('./common/graceful-shutdown'),
    import('./admin/catalog-admin.service'),
    import('./common/gateway-error'),
  ]);
  const app = await createGatewayApp(options, { tracing });
  installGracefulShutdown(app, settings.shutdownDrainMs, settings.shutdownDelayMs);
  // SIGHUP reads the configuration file again; a bad file is logged and changes nothing.
  process.on('SIGHUP', () => {
    app
      .get(CatalogAdminService)
      .reload('SIGHUP')
      .catch((error: unknown) => {
        if (!(error instanceof GatewayError)) new Logger('Catalog').error(`configuration not reloaded: ${String(error)}`);
      });
  });
  const { port, host } = settings;
  await app.listen(port, host);
  new Logger('Gateway').log(`listening on http://${host}:${port}`);
}

void bootstrap().catch((error) => {
  process.stderr.write(`gateway failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
