import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { DatabaseSettings, databaseSettingsFromEnv } from './settings/database.settings';
import type { GatewayConfig } from './gateway-config';
import { loadGatewayConfigFile } from './config.loader';
import type { KeyCacheSettings } from './settings/auth.settings';
import type { KeyFailureSettings } from './settings/auth.settings';
import type { QuotaSettings } from './settings/metering.settings';
import type { UsageWriterSettings } from './settings/metering.settings';
import type { UsageRetentionSettings } from './settings/metering.settings';
import type { LineSettings } from './settings/upstream.settings';
import { CatalogSettings, secretKeyFrom } from './settings/catalog.settings';
import type { TranslationSettings } from './settings/translation.settings';
import type { VideoSettings } from './settings/video.settings';
import type { ConsoleSettings } from './settings/console.settings';
import type { RateLimitSettings, ReplicaLimitSettings } from './settings/limits.settings';
import { AlertSettings, alertSettingsFrom } from './settings/alerts.settings';
import { limitFrom, numberFrom, positiveWholeFrom } from './env-numbers';
import { MAX_RETRY_ATTEMPTS } from './model-lines';

/** Everything a gateway process is started with: the config file plus environment settings. */
export interface GatewayOptions {
  config: GatewayConfig;
  database: DatabaseSettings;
  /** Bearer token of the admin API (`ADMIN_TOKEN`, named `admin` in the audit log). */
  adminToken?: string;
  /** More admin tokens, each with the name the audit log gives its changes (`ADMIN_TOKENS`). No token at all turns the admin API off. */
  adminTokens?: AdminToken[];
  keyCache: KeyCacheSettings;
  keyFailures: KeyFailureSettings;
  server: ServerSettings;
  quota: QuotaSettings;
  usageWriter: UsageWriterSettings;
  usageRetention: UsageRetentionSettings;
  lines: LineSettings;
  catalog: CatalogSettings;
  translation: TranslationSettings;
  video: VideoSettings;
  console: ConsoleSettings;
  rateLimits: RateLimitSettings;
  /** `MAX_CLIENT_CONNECTIONS`, `MAX_STREAMS`: this replica's own limits (0: none). */
  replicaLimits: ReplicaLimitSettings;
  alerts: AlertSettings;
  /** Level of the JSON log (`LOG_LEVEL`): call lines are `info` (`warn` for 5xx). */
  logLevel: LogLevelName;
}

/** Settings of the HTTP server itself. */
export interface ServerSettings {
  /**
   * Longest time a client may take to send a whole request, headers and body (Node's
   * `requestTimeout`, which Fastify turns off): a client that stops sending mid-body is cut off
   * instead of holding its socket and body buffer forever. Answers are not limited by it. 0: off.
   */
  requestTimeoutMs: number;
  /**
   * Proxies whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`: addresses, CIDR ranges
   * or `loopback` / `linklocal` / `uniquelocal`). The client address counts refused keys
   * (`KEY_FAILURE_LIMIT`); behind a load balancer it is otherwise the balancer's. Empty: the
   * socket's peer, whatever the headers say.
   */
  trustedProxies: string[];
  /**
   * Request bodies larger than `aboveBytes` are written to an unlinked file in `directory` as they
   * arrive, instead of being held in memory (`BODY_SPOOL_ABOVE_BYTES`, default 1 MiB, 0: never;
   * `BODY_SPOOL_DIR`, default the system's temporary folder). docs/configuration.md "Large bodies".
   */
  bodySpool: { aboveBytes: number; directory: string };
}

/** pino's level names; `silent` writes nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** An admin token and the name its changes carry in the audit log. */
export interface AdminToken {
  name: string;
  token: string;
}

/** Every admin token the gateway accepts (AdminToken[]): ADMIN_TOKEN as `admin`, then ADMIN_TOKENS. */
export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');

const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** `ADMIN_TOKENS=alice:token-a,ci:token-b`: names and tokens, each checked; a token's value is never in a message. */
export function adminTokensFrom(env: NodeJS.ProcessEnv): AdminToken[] {
  const entries = (env.ADMIN_TOKENS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const tokens = entries.map((entry, index) => {
    const colon = entry.indexOf(':');
    const name = colon < 0 ? '' : entry.slice(0, colon);
    const token = colon < 0 ? '' : entry.slice(colon + 1);
    if (!TOKEN_NAME.test(name) || token === '') {
      throw new Error(`ADMIN_TOKENS entry ${index + 1} must be name:token (a name of letters, digits and . _ @ -, then a non-empty token)`);
    }
    return { name, token };
  });
  const all = [...(env.ADMIN_TOKEN ? [{ name: 'admin', token: env.ADMIN_TOKEN }] : []), ...tokens];
  for (const [index, { name, token }] of all.entries()) {
    if (all.findIndex((other) => other.name === name) !== index) throw new Error(`ADMIN_TOKENS names ${name} twice (ADMIN_TOKEN is named admin)`);
    if (all.findIndex((other) => other.token === token) !== index) throw new Error(`ADMIN_TOKENS gives the token of ${name} to another name too`);
  }
  return tokens;
}

const PROXY_PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** `TRUSTED_PROXIES`: comma-separated addresses, CIDR ranges and presets, each checked. */
export function trustedProxiesFrom(env: NodeJS.ProcessEnv): string[] {
  const entries = (env.TRUSTED_PROXIES ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    if (PROXY_PRESETS.has(entry)) continue;
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new Error(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal`);
    }
  }
  return entries;
}

function logLevelFrom(env: NodeJS.ProcessEnv): LogLevelName {
  const text = env.LOG_LEVEL?.trim().toLowerCase();
  if (!text) return 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(text)) {
    throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(env.LOG_LEVEL)}`);
  }
  return text as LogLevelName;
}

/** RETRY_ATTEMPTS: a whole number up to the most a model may set. */
function retryAttemptsFrom(env: NodeJS.ProcessEnv): number {
  const value = numberFrom(env, 'RETRY_ATTEMPTS', 0);
  if (!Number.isInteger(value) || value > MAX_RETRY_ATTEMPTS) {
    throw new Error(`RETRY_ATTEMPTS must be a whole number from 0 to ${MAX_RETRY_ATTEMPTS}, got ${JSON.stringify(env.RETRY_ATTEMPTS)}`);
  }
  return value;
}

/** Defaults for every setting that is not part of the config file. */
export function defaultSettings(env: NodeJS.ProcessEnv = {}): Omit<GatewayOptions, 'config' | 'database' | 'adminToken'> {
  return {
    keyCache: {
      ttlMs: numberFrom(env, 'KEY_CACHE_TTL_MS', 5_000),
      negativeTtlMs: numberFrom(env, 'KEY_CACHE_NEGATIVE_TTL_MS', 1_000),
    },
    keyFailures: {
      limit: numberFrom(env, 'KEY_FAILURE_LIMIT', 20),
      windowMs: numberFrom(env, 'KEY_FAILURE_WINDOW_MS', 10_000),
    },
    server: {
      requestTimeoutMs: numberFrom(env, 'REQUEST_TIMEOUT_MS', 300_000),
      trustedProxies: trustedProxiesFrom(env),
      bodySpool: { aboveBytes: numberFrom(env, 'BODY_SPOOL_ABOVE_BYTES', 1024 * 1024), directory: env.BODY_SPOOL_DIR || tmpdir() },
    },
    quota: { balanceTtlMs: numberFrom(env, 'BALANCE_CACHE_TTL_MS', 1_000) },
    usageWriter: {
      flushIntervalMs: numberFrom(env, 'USAGE_FLUSH_INTERVAL_MS', 200),
      batchSize: positiveWholeFrom(env, 'USAGE_BATCH_SIZE', 2_000),
      shutdownDeadlineMs: numberFrom(env, 'USAGE_SHUTDOWN_DEADLINE_MS', 15_000),
    },
    usageRetention: {
      days: numberFrom(env, 'USAGE_RETENTION_DAYS', 0),
      intervalMs: numberFrom(env, 'USAGE_RETENTION_INTERVAL_MS', 3_600_000),
      batchSize: positiveWholeFrom(env, 'USAGE_RETENTION_BATCH_SIZE', 5_000),
    },
    lines: {
      cooldownMs: numberFrom(env, 'LINE_COOLDOWN_MS', 10_000),
      rateLimitCooldownMaxMs: numberFrom(env, 'LINE_429_COOLDOWN_MAX_MS', 60_000),
      connections: limitFrom(env, 'LINE_CONNECTIONS'),
      retry: {
        attempts: retryAttemptsFrom(env),
        backoffMs: numberFrom(env, 'RETRY_BACKOFF_MS', 250),
        maxBackoffMs: numberFrom(env, 'RETRY_MAX_BACKOFF_MS', 5_000),
      },
    },
    catalog: { checkIntervalMs: positiveWholeFrom(env, 'CATALOG_CHECK_MS', 1_000), secretKey: secretKeyFrom(env), configFile: env.GATEWAY_CONFIG || undefined },
    translation: { pingIntervalMs: positiveWholeFrom(env, 'PING_INTERVAL_MS', 15_000) },
    video: {
      reconcileIntervalMs: numberFrom(env, 'VIDEO_RECONCILE_INTERVAL_MS', 1_000),
      firstPollDelayMs: numberFrom(env, 'VIDEO_FIRST_POLL_DELAY_MS', 5_000),
      maxPollDelayMs: numberFrom(env, 'VIDEO_MAX_POLL_DELAY_MS', 60_000),
      claimLeaseMs: numberFrom(env, 'VIDEO_CLAIM_LEASE_MS', 120_000),
      claimBatchSize: positiveWholeFrom(env, 'VIDEO_CLAIM_BATCH_SIZE', 20),
      submitLostAfterMs: numberFrom(env, 'VIDEO_SUBMIT_LOST_AFTER_MS', 900_000),
    },
    console: { sessionTtlMs: positiveWholeFrom(env, 'CONSOLE_SESSION_HOURS', 12) * 3_600_000 },
    rateLimits: { syncIntervalMs: positiveWholeFrom(env, 'RATE_LIMIT_SYNC_MS', 250) },
    replicaLimits: { maxClientConnections: limitFrom(env, 'MAX_CLIENT_CONNECTIONS'), maxStreams: limitFrom(env, 'MAX_STREAMS') },
    alerts: alertSettingsFrom(env),
    logLevel: logLevelFrom(env),
  };
}

/** Where the process listens and how it stops on SIGTERM: read by `main.ts` only. */
export interface ProcessSettings {
  /** `PORT`, default 8080; 0 takes any free port. */
  port: number;
  /** `HOST`, default `0.0.0.0`. */
  host: string;
  /** `SHUTDOWN_DRAIN_MS`, default 30 s; 0 closes the connections of calls in flight at once. */
  shutdownDrainMs: number;
  /**
   * `SHUTDOWN_DELAY_MS`, default 0: how long readiness answers 503 while calls are still served,
   * before the drain starts, so that a load balancer following readiness stops sending first.
   */
  shutdownDelayMs: number;
}

export function processSettingsFrom(env: NodeJS.ProcessEnv): ProcessSettings {
  const text = env.PORT?.trim();
  const port = text ? Number(text) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`PORT must be a whole number from 0 to 65535, got ${JSON.stringify(env.PORT)}`);
  return {
    port,
    host: env.HOST || '0.0.0.0',
    shutdownDrainMs: numberFrom(env, 'SHUTDOWN_DRAIN_MS', 30_000),
    shutdownDelayMs: numberFrom(env, 'SHUTDOWN_DELAY_MS', 0),
  };
}

export function gatewayOptionsFromEnv(env: NodeJS.ProcessEnv): GatewayOptions {
  if (!env.GATEWAY_CONFIG) throw new Error('GATEWAY_CONFIG must name the configuration file (YAML).');
  return {
    config: loadGatewayConfigFile(env.GATEWAY_CONFIG, env),
    database: databaseSettingsFromEnv(env),
    adminToken: env.ADMIN_TOKEN || undefined,
    adminTokens: adminTokensFrom(env),
    ...defaultSettings(env),
  };
}
