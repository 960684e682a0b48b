import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { UpstreamConfig } from '../config/gateway-config';
import { Clock } from '../common/clock';
import { LineRegistry } from './line-registry';

function line(id: string, changes: Partial<UpstreamConfig> = {}): UpstreamConfig {
  return { id, baseUrl: `http://127.0.0.1:9${id.length}00`, apiKey: `key-${id}`, timeoutMs: 60_000, ...changes };
}

describe(LineRegistry.name, () => {
  let registry: LineRegistry;

  beforeEach(() => {
    const config = { upstreams: [line('kept'), line('rekeyed'), line('moved'), line('gone')], models: [], owners: [], keys: [] };
    registry = new LineRegistry(
      config,
      { cooldownMs: 1_000, rateLimitCooldownMaxMs: 60_000, connections: 4, retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 0 } },
      new Clock(),
    );
  });

  afterEach(() => registry.onModuleDestroy());

  it('keeps the line, pool and state of a line whose pool settings stay, with its new key', () => {
    const kept = registry.get('kept');
    const rekeyed = registry.get('rekeyed');
    kept.inFlight = 2;
    registry.coolDown(rekeyed);

    registry.apply([line('kept'), line('rekeyed', { apiKey: 'new-key', auth: 'x-api-key' })]);

    expect(registry.get('kept')).toBe(kept);
    expect(registry.get('kept').inFlight).toBe(2);
    expect(registry.get('rekeyed')).toBe(rekeyed);
    expect(registry.get('rekeyed').config).toMatchObject({ apiKey: 'new-key', auth: 'x-api-key' });
    expect(registry.isCooling(registry.get('rekeyed'))).toBe(true);
  });

  it.each([
    ['base_url', { baseUrl: 'http://127.0.0.1:9999' }],
    ['max_concurrency', { maxConcurrency: 3 }],
    ['timeout_ms', { timeoutMs: 5_000 }],
  ])('gives a line a new pool when its %s changes, and closes the old pool gracefully', (_field, change) => {
    const moved = registry.get('moved');
    const close = jest.spyOn(moved.pool, 'close');
    const destroy = jest.spyOn(moved.pool, 'destroy');

    registry.apply([line('kept'), line('moved', change)]);

    expect(registry.get('moved')).not.toBe(moved);
    expect(registry.get('moved').config).toMatchObject(change);
    expect(close).toHaveBeenCalled();
    expect(destroy).not.toHaveBeenCalled();
  });

  it('closes the pool of a removed line gracefully, adds a new line, and leaves the kept pools open', () => {
    const gone = registry.get('gone');
    const kept = registry.get('kept');
    const closeGone = jest.spyOn(gone.pool, 'close');
    const closeKept = jest.spyOn(kept.pool, 'close');

    registry.apply([line('kept'), line('added')]);

    expect(registry.find('gone')).toBeUndefined();
    expect(registry.find('added')?.config.apiKey).toBe('key-added');
    expect(registry.all().map((entry) => entry.id)).toEqual(['kept', 'added']);
    expect(closeGone).toHaveBeenCalled();
    expect(closeKept).not.toHaveBeenCalled();
  });
});

describe('a line pool', () => {
  let server: Server;
  let registry: LineRegistry;
  /** The requests the server holds unanswered. */
  const held: ServerResponse[] = [];
  let heldChanged: () => void = () => undefined;

  beforeAll(async () => {
    server = createServer((_request, response) => {
      held.push(response);
      heldChanged();
    });
    server.maxConnections = 1_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterEach(async () => {
    // The calls still queued in the pool reach the server now: each is answered as it comes.
    heldChanged = () => held.splice(0).forEach((response) => response.end());
    heldChanged();
    await registry.onModuleDestroy();
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function registryWith(connections: number, maxConcurrency?: number): LineRegistry {
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return new LineRegistry(
      { upstreams: [line('line', { baseUrl, maxConcurrency })], models: [], owners: [], keys: [] },
      { cooldownMs: 1_000, rateLimitCooldownMaxMs: 60_000, connections, retry: { attempts: 0, backoffMs: 0, maxBackoffMs: 0 } },
      new Clock(),
    );
  }

  /** Sends `count` calls on the line and resolves once the server holds `expected` of them at once. */
  function heldReaches(count: number, expected: number): Promise<void> {
    const pool = registry.get('line').pool;
    for (let index = 0; index < count; index++) {
      pool.request({ method: 'GET', path: '/' }).then(
        ({ body }) => body.dump(),
        () => undefined,
      );
    }
    return new Promise((resolve) => {
      heldChanged = () => {
        if (held.length === expected) resolve();
      };
    });
  }

  it('without a cap (LINE_CONNECTIONS 0, the default) opens a socket for every call in flight: none waits behind long streams', async () => {
    registry = registryWith(0);
    await heldReaches(300, 300);
    expect(held).toHaveLength(300);
  });

  it('with LINE_CONNECTIONS set holds the calls past it until a socket is free', async () => {
    registry = registryWith(5);
    await heldReaches(8, 5);
    // A call past the cap is sent only when one of the five is answered.
    const sixth = new Promise<void>((resolve) => (heldChanged = () => held.length === 6 && resolve()));
    held[0].end();
    await sixth;
    expect(held).toHaveLength(6);
  });
});
