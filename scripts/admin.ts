#!/usr/bin/env node
/**
 * `gateway-admin keys create --owner team-a --models text-model-1 --expires 2027-01-01` (the
 * package's bin; `npm run admin -- …` in a source checkout, after `npm run build`): the admin
 * API's owner, key and usage operations for operators without HTTP tooling, straight on the
 * gateway's database (see ADMIN_CLI_USAGE). Plain node on the built file, so it also runs in
 * the Docker image, which has no TypeScript compiler.
 */
import 'reflect-metadata';
import { openDataSource } from '../src/database/data-source';
import { databaseSettingsFromEnv } from '../src/config/settings/database.settings';
import { loadGatewayConfigFile } from '../src/config/config.loader';
import { GatewayError } from '../src/common/gateway-error';
import { AdminStore } from '../src/admin/admin-store';
import { UsageReads } from '../src/admin/usage-reads';
import { ADMIN_CLI_USAGE, runAdminCommand, UsageError } from '../src/admin/admin-cli';

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv.includes('--help')) {
    process.stdout.write(`${ADMIN_CLI_USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const knownModels = process.env.GATEWAY_CONFIG
    ? new Set(loadGatewayConfigFile(process.env.GATEWAY_CONFIG, process.env).models.map((model) => model.id))
    : undefined;
  const dataSource = await openDataSource(databaseSettingsFromEnv(process.env));
  try {
    const output = await runAdminCommand({ store: new AdminStore(dataSource), usage: new UsageReads(dataSource), knownModels }, argv);
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
    return 0;
  } finally {
    await dataSource.destroy();
  }
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`admin: ${error.message}\n\n${ADMIN_CLI_USAGE}\n`);
      process.exit(2);
    }
    const message = error instanceof GatewayError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`admin: ${message}\n`);
    process.exit(1);
  },
);
