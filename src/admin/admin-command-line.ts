import { userInfo } from 'node:os';
import type { DataSource } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { loadGatewayConfigFile } from '../config/config.loader';
import { databaseSettingsFromEnv } from '../config/settings/database.settings';
import { openDataSource } from '../database/data-source';
import { ADMIN_CLI_USAGE, AdminDatabase, AnswerWithStatus, runAdminCommand, UsageError } from './admin-cli';
import { AdminStore } from './admin-store';
import { UsageReads } from './usage-reads';
import { SpendAudit } from './spend-audit';
import { numberFrom } from '../config/env-numbers';
import { AdminChanges } from './admin-changes';
import { AuditLog } from './audit-log';
import { CatalogAdminService, CatalogHolder } from './catalog-admin.service';
import { CatalogStore } from '../catalog/catalog-store';
import { LineSecrets } from '../catalog/line-secrets';
import { secretKeyFrom } from '../config/settings/catalog.settings';

/**
 * The catalog as the command line changes it: straight in the database, with literal vendor keys
 * sealed under the environment's GATEWAY_SECRET_KEY. It serves no calls, so it loads nothing;
 * the replicas load each change themselves (notified, or at their next check).
 */
function commandLineCatalog(dataSource: DataSource, env: NodeJS.ProcessEnv): CatalogHolder {
  return {
    store: new CatalogStore(dataSource),
    secrets: new LineSecrets(secretKeyFrom(env)),
    refresh: async () => undefined,
    reload: () => Promise.reject(new GatewayError('invalid_request', 'The command line reloads no file: send SIGHUP to the gateway or POST /admin/reload.')),
  };
}

/** The command line's name in the audit log: the operating-system user who ran it. */
function commandLineActor(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no user name for this uid (a container started with a bare --user number)
  }
  return `command line (${user})`;
}

/** Where the command writes: stdout gets the JSON answer, stderr the refusals. */
export interface CommandLineOutput {
  out(text: string): void;
  err(text: string): void;
}

/** An open database for one command, and how to let go of it afterwards. */
export interface CommandLineDatabase {
  dataSource: DataSource;
  release(): Promise<void>;
}

/** The gateway's database as the environment names it (DATABASE_URL or DATA_DIR), closed after the command. */
async function databaseFromEnv(env: NodeJS.ProcessEnv): Promise<CommandLineDatabase> {
  const dataSource = await openDataSource(databaseSettingsFromEnv(env));
  return { dataSource, release: () => dataSource.destroy() };
}

/**
 * The whole `gateway-admin` program but the process around it: runs the command in `argv`,
 * writes its output and returns the exit status (0 done, 1 refused or, for the spend audit,
 * differences found, 2 wrong use). The database
 * is opened only for a command whose arguments passed, so a typo never waits for it or for a
 * folder a running gateway holds.
 */
export async function runCommandLine(
  argv: string[],
  env: NodeJS.ProcessEnv,
  output: CommandLineOutput,
  openDatabase: (env: NodeJS.ProcessEnv) => Promise<CommandLineDatabase> = databaseFromEnv,
): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv.includes('--help')) {
    output.out(`${ADMIN_CLI_USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  let opened: Promise<CommandLineDatabase> | undefined;
  const database = async (): Promise<AdminDatabase> => {
    const { dataSource } = await (opened ??= openDatabase(env));
    const store = new AdminStore(dataSource);
    const audit = new AuditLog(dataSource);
    const catalog = new CatalogAdminService(commandLineCatalog(dataSource, env), audit);
    // The gateway's retention setting: the audit leaves alone the days whose records it has deleted.
    const spend = new SpendAudit(dataSource, { retentionDays: numberFrom(env, 'USAGE_RETENTION_DAYS', 0) });
    return { store, changes: new AdminChanges(store, audit), catalog, audit, usage: new UsageReads(dataSource), spend };
  };
  try {
    const knownModels = env.GATEWAY_CONFIG ? new Set(loadGatewayConfigFile(env.GATEWAY_CONFIG, env).models.map((model) => model.id)) : undefined;
    const outcome = await runAdminCommand({ database, knownModels, actor: commandLineActor() }, argv);
    const { answer, status } = outcome instanceof AnswerWithStatus ? outcome : { answer: outcome, status: 0 };
    output.out(`${JSON.stringify(answer, null, 2)}\n`);
    return status;
  } catch (error) {
    if (error instanceof UsageError) {
      output.err(`admin: ${error.message}\n\n${ADMIN_CLI_USAGE}\n`);
      return 2;
    }
    output.err(`admin: ${error instanceof GatewayError || error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    if (opened) await (await opened.catch(() => undefined))?.release();
  }
}
