import { tmpdir } from 'node:os';
import { adminTokensFrom, defaultSettings, processSettingsFrom } from './gateway-options';
import { databaseSettingsFromEnv } from './settings/database.settings';

describe('defaultSettings LOG_LEVEL', () => {
  it('is info when unset or empty', () => {
    expect(defaultSettings({}).logLevel).toBe('info');
    expect(defaultSettings({ LOG_LEVEL: '' }).logLevel).toBe('info');
  });

  it("takes any of pino's level names, in any case", () => {
    expect(defaultSettings({ LOG_LEVEL: 'warn' }).logLevel).toBe('warn');
    expect(defaultSettings({ LOG_LEVEL: ' DEBUG ' }).logLevel).toBe('debug');
    expect(defaultSettings({ LOG_LEVEL: 'silent' }).logLevel).toBe('silent');
  });

  it('refuses an unknown level, naming the variable and the levels', () => {
    expect(() => defaultSettings({ LOG_LEVEL: 'verbose' })).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"');
  });
});

describe('defaultSettings TRUSTED_PROXIES', () => {
  it('is empty when unset or blank: the socket peer is the client', () => {
    expect(defaultSettings({}).server.trustedProxies).toEqual([]);
    expect(defaultSettings({ TRUSTED_PROXIES: ' , ' }).server.trustedProxies).toEqual([]);
  });

  it('takes addresses, CIDR ranges and the named presets, comma-separated', () => {
    expect(defaultSettings({ TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7,::1, fd00::/8,loopback' }).server.trustedProxies).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
  });

  it.each(['nginx.internal', '10.0.0.0/33', '::1/129', '10.0.0.1/8/2', '300.1.1.1', '10.0.0.0/'])('refuses %s, naming the variable', (entry) => {
    expect(() => defaultSettings({ TRUSTED_PROXIES: `127.0.0.1,${entry}` })).toThrow(/TRUSTED_PROXIES/);
  });
});

describe('defaultSettings BODY_SPOOL_ABOVE_BYTES and BODY_SPOOL_DIR', () => {
  it('spools bodies over 1 MiB to the temporary folder by default', () => {
    expect(defaultSettings({}).server.bodySpool).toEqual({ aboveBytes: 1024 * 1024, directory: tmpdir() });
  });

  it('takes both from the environment', () => {
    expect(defaultSettings({ BODY_SPOOL_ABOVE_BYTES: '0', BODY_SPOOL_DIR: '/var/spool/gateway' }).server.bodySpool).toEqual({
      aboveBytes: 0,
      directory: '/var/spool/gateway',
    });
  });

  it('refuses a threshold that is not a number', () => {
    expect(() => defaultSettings({ BODY_SPOOL_ABOVE_BYTES: 'lots' })).toThrow(/BODY_SPOOL_ABOVE_BYTES/);
  });
});

describe('defaultSettings counts (batch sizes), the ping interval and the rate-limit sync', () => {
  const COUNTS = ['USAGE_BATCH_SIZE', 'USAGE_RETENTION_BATCH_SIZE', 'VIDEO_CLAIM_BATCH_SIZE', 'PING_INTERVAL_MS', 'RATE_LIMIT_SYNC_MS'];

  it('writes usage in batches of up to 2,000 records by default, and takes each count from the environment', () => {
    expect(defaultSettings({}).usageWriter.batchSize).toBe(2_000);
    const settings = defaultSettings({
      USAGE_BATCH_SIZE: '1',
      USAGE_RETENTION_BATCH_SIZE: '7',
      VIDEO_CLAIM_BATCH_SIZE: '4',
      PING_INTERVAL_MS: '250',
      RATE_LIMIT_SYNC_MS: '100',
    });
    expect([
      settings.usageWriter.batchSize,
      settings.usageRetention.batchSize,
      settings.video.claimBatchSize,
      settings.translation.pingIntervalMs,
      settings.rateLimits.syncIntervalMs,
    ]).toEqual([1, 7, 4, 250, 100]);
    expect(defaultSettings({}).rateLimits.syncIntervalMs).toBe(250);
  });

  it.each(COUNTS.flatMap((name) => ['0', '2.5', '-1'].map((text) => [name, text])))('refuses %s=%s, naming the variable', (name, text) => {
    expect(() => defaultSettings({ [name]: text })).toThrow(name);
  });
});

describe('defaultSettings MAX_CLIENT_CONNECTIONS, MAX_STREAMS and LINE_CONNECTIONS', () => {
  it('sets no limit by default (0), unset or empty', () => {
    expect(defaultSettings({}).replicaLimits).toEqual({ maxClientConnections: 0, maxStreams: 0 });
    expect(defaultSettings({}).lines.connections).toBe(0);
    expect(defaultSettings({ LINE_CONNECTIONS: '' }).lines.connections).toBe(0);
    expect(defaultSettings({ MAX_CLIENT_CONNECTIONS: '', MAX_STREAMS: '' }).replicaLimits).toEqual({ maxClientConnections: 0, maxStreams: 0 });
  });

  it('takes whole numbers from the environment, 0 included', () => {
    expect(defaultSettings({ MAX_CLIENT_CONNECTIONS: '4000', MAX_STREAMS: '2500' }).replicaLimits).toEqual({ maxClientConnections: 4000, maxStreams: 2500 });
    expect(defaultSettings({ MAX_CLIENT_CONNECTIONS: '0', MAX_STREAMS: '1' }).replicaLimits).toEqual({ maxClientConnections: 0, maxStreams: 1 });
    expect(defaultSettings({ LINE_CONNECTIONS: '3' }).lines.connections).toBe(3);
  });

  it.each(['MAX_CLIENT_CONNECTIONS', 'MAX_STREAMS', 'LINE_CONNECTIONS'].flatMap((name) => ['2.5', '-1', 'many', 'Infinity'].map((text) => [name, text])))(
    'refuses %s=%s, naming the variable',
    (name, text) => {
      expect(() => defaultSettings({ [name]: text })).toThrow(new RegExp(`^${name} must be a (whole|non-negative) number`));
    },
  );
});

describe('defaultSettings RETRY_ATTEMPTS, RETRY_BACKOFF_MS, RETRY_MAX_BACKOFF_MS and LINE_429_COOLDOWN_MAX_MS', () => {
  it('does not retry, backs off from 250 ms up to 5 s and cools a 429 line for at most 60 s by default, unset or empty', () => {
    const defaults = { attempts: 0, backoffMs: 250, maxBackoffMs: 5_000 };
    expect(defaultSettings({}).lines.retry).toEqual(defaults);
    expect(defaultSettings({}).lines.rateLimitCooldownMaxMs).toBe(60_000);
    const empty = defaultSettings({ RETRY_ATTEMPTS: '', RETRY_BACKOFF_MS: '', RETRY_MAX_BACKOFF_MS: '', LINE_429_COOLDOWN_MAX_MS: '' });
    expect(empty.lines.retry).toEqual(defaults);
    expect(empty.lines.rateLimitCooldownMaxMs).toBe(60_000);
  });

  it('takes each from the environment; 10 attempts is the most, 0 a 429 cool-down of never', () => {
    const settings = defaultSettings({ RETRY_ATTEMPTS: '3', RETRY_BACKOFF_MS: '100', RETRY_MAX_BACKOFF_MS: '2000', LINE_429_COOLDOWN_MAX_MS: '0' });
    expect(settings.lines.retry).toEqual({ attempts: 3, backoffMs: 100, maxBackoffMs: 2_000 });
    expect(settings.lines.rateLimitCooldownMaxMs).toBe(0);
    expect(defaultSettings({ RETRY_ATTEMPTS: '10', LINE_429_COOLDOWN_MAX_MS: '120000' }).lines).toMatchObject({
      retry: { attempts: 10 },
      rateLimitCooldownMaxMs: 120_000,
    });
  });

  it.each([
    ['11', 'a whole number from 0 to 10'],
    ['2.5', 'a whole number from 0 to 10'],
    ['-1', 'a non-negative number'],
    ['twice', 'a non-negative number'],
  ])('refuses RETRY_ATTEMPTS=%s, naming the variable', (text, rule) => {
    expect(() => defaultSettings({ RETRY_ATTEMPTS: text })).toThrow(`RETRY_ATTEMPTS must be ${rule}, got ${JSON.stringify(text)}`);
  });

  it.each(['RETRY_BACKOFF_MS', 'RETRY_MAX_BACKOFF_MS', 'LINE_429_COOLDOWN_MAX_MS'].flatMap((name) => ['-1', 'soon', 'Infinity'].map((text) => [name, text])))(
    'refuses %s=%s, naming the variable',
    (name, text) => {
      expect(() => defaultSettings({ [name]: text })).toThrow(`${name} must be a non-negative number, got ${JSON.stringify(text)}`);
    },
  );
});

describe('processSettingsFrom PORT, HOST, SHUTDOWN_DRAIN_MS and SHUTDOWN_DELAY_MS', () => {
  it('listens on 0.0.0.0:8080, drains for 30 s and starts draining at once by default', () => {
    const defaults = { port: 8080, host: '0.0.0.0', shutdownDrainMs: 30_000, shutdownDelayMs: 0 };
    expect(processSettingsFrom({})).toEqual(defaults);
    expect(processSettingsFrom({ PORT: '', HOST: '', SHUTDOWN_DRAIN_MS: '', SHUTDOWN_DELAY_MS: '' })).toEqual(defaults);
  });

  it('takes each from the environment; port 0 is any free port, a drain of 0 closes at once', () => {
    expect(processSettingsFrom({ PORT: '9090', HOST: '127.0.0.1', SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_DELAY_MS: '10000' })).toEqual({
      port: 9090,
      host: '127.0.0.1',
      shutdownDrainMs: 5_000,
      shutdownDelayMs: 10_000,
    });
    expect(processSettingsFrom({ PORT: '0', SHUTDOWN_DRAIN_MS: '0' })).toMatchObject({ port: 0, shutdownDrainMs: 0 });
  });

  it.each(['http', '80.5', '-1', '65536'])('refuses PORT=%s, naming the variable', (text) => {
    expect(() => processSettingsFrom({ PORT: text })).toThrow('PORT must be a whole number from 0 to 65535');
  });

  it.each(['SHUTDOWN_DRAIN_MS', 'SHUTDOWN_DELAY_MS'])('refuses %s that is not a non-negative number, naming the variable', (name) => {
    for (const text of ['soon', '-1']) expect(() => processSettingsFrom({ [name]: text })).toThrow(name);
  });
});

describe('databaseSettingsFromEnv DATABASE_POOL_SIZE', () => {
  it('leaves the pool size to the default (10) when unset, and takes a whole number', () => {
    expect(databaseSettingsFromEnv({}).poolSize).toBeUndefined();
    expect(databaseSettingsFromEnv({ DATABASE_POOL_SIZE: '25' }).poolSize).toBe(25);
  });

  it.each(['abc', '0', '2.5', '-3'])('refuses DATABASE_POOL_SIZE=%s, naming the variable', (text) => {
    expect(() => databaseSettingsFromEnv({ DATABASE_POOL_SIZE: text })).toThrow('DATABASE_POOL_SIZE must be');
  });
});

describe('ADMIN_TOKENS', () => {
  it('reads named tokens, comma-separated, beside ADMIN_TOKEN', () => {
    expect(adminTokensFrom({ ADMIN_TOKEN: 'root-token', ADMIN_TOKENS: 'alice:token-a, ci-bot:token:with:colons' })).toEqual([
      { name: 'alice', token: 'token-a' },
      { name: 'ci-bot', token: 'token:with:colons' },
    ]);
    expect(adminTokensFrom({})).toEqual([]);
  });

  it.each([
    ['an entry without a name', 'secret-1', 'entry 1 must be name:token'],
    ['an empty token', 'alice:', 'entry 1 must be name:token'],
    ['a name with a space', 'ali ce:secret-1', 'entry 1 must be name:token'],
    ['a name twice', 'alice:secret-1,alice:secret-2', 'names alice twice'],
    ['the name of ADMIN_TOKEN', 'admin:secret-1', 'names admin twice'],
    ['one token under two names', 'alice:secret-1,bob:secret-1', 'gives the token of bob to another name too'],
  ])('refuses %s, without the token in the message', (_label, value, message) => {
    let thrown = '';
    try {
      adminTokensFrom({ ADMIN_TOKEN: 'root-token', ADMIN_TOKENS: value });
    } catch (error) {
      thrown = (error as Error).message;
    }

    expect(thrown).toContain(message);
    expect(thrown).not.toMatch(/secret|root-token/);
  });
});
