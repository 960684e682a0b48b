import { testPrincipal } from '../../test/support/principal';
import { ApiKeyRepository } from './api-key.repository';
import { Clock } from '../common/clock';
import { sha256Hex } from './key-hash';
import { KeyService } from './key.service';
import { KeyCacheSettings } from '../config/settings/auth.settings';
import type { Principal } from './principal';
import { GatewayError, statusOf } from '../common/gateway-error';

const SETTINGS: KeyCacheSettings = { ttlMs: 5_000, negativeTtlMs: 1_000 };
const START = Date.parse('2026-03-01T12:00:00Z');
const KEY = 'gk-unit-test-key-0001';

/** A clock that moves only when a test moves it. */
class FakeClock extends Clock {
  private current = START;

  override now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

/** The database boundary of KeyService: principals by SHA-256, with reads counted. */
class FakeKeyRepository {
  readonly principals = new Map<string, Principal>();
  reads = 0;
  failure: Error | undefined;
  /** When set, reads wait for this gate to open. */
  gate: Promise<void> | undefined;

  async findPrincipal(keySha256: string): Promise<Principal | null> {
    this.reads += 1;
    if (this.gate) await this.gate;
    if (this.failure) throw this.failure;
    return this.principals.get(keySha256) ?? null;
  }

  put(plaintext: string, changes: Partial<Principal> = {}): void {
    this.principals.set(sha256Hex(plaintext), principalOf(plaintext, changes));
  }
}

function principalOf(plaintext: string, changes: Partial<Principal>): Principal {
  return testPrincipal({ keyId: `id-${plaintext}`, displayPrefix: plaintext.slice(0, 8), ...changes });
}

function setUp(settings: KeyCacheSettings = SETTINGS) {
  const repository = new FakeKeyRepository();
  const clock = new FakeClock();
  const service = new KeyService(repository as unknown as ApiKeyRepository, clock, settings);
  return { repository, clock, service };
}

/** `authenticate` as a promise: it answers a cached key synchronously (a value or a throw). */
async function authenticate(service: KeyService, plaintext: string): Promise<Principal> {
  return service.authenticate(plaintext);
}

/** The GatewayError an authentication attempt ends with (fails the test when it succeeds). */
async function refusal(attempt: Promise<unknown>): Promise<GatewayError> {
  const outcome = await attempt.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(outcome)}`);
  return outcome;
}

describe(KeyService.name, () => {
  describe('authentication', () => {
    it('resolves an enabled, unexpired key to its principal', async () => {
      const { repository, service } = setUp();
      repository.put(KEY, { ownerId: 'alice', ownerKind: 'member' });

      const principal = await authenticate(service, KEY);

      expect(principal).toMatchObject({ keyId: `id-${KEY}`, ownerId: 'alice', ownerKind: 'member' });
    });

    it('looks a key up by its SHA-256, never by the plaintext', async () => {
      const { repository, service } = setUp();
      const asked: string[] = [];
      const find = repository.findPrincipal.bind(repository);
      repository.findPrincipal = (keySha256: string) => {
        asked.push(keySha256);
        return find(keySha256);
      };
      repository.put(KEY);

      await authenticate(service, KEY);

      expect(asked).toEqual([sha256Hex(KEY)]);
    });

    it.each([
      ['an unknown key', (_repository: FakeKeyRepository) => undefined],
      ['a disabled key', (repository: FakeKeyRepository) => repository.put(KEY, { enabled: false })],
      ['an expired key', (repository: FakeKeyRepository) => repository.put(KEY, { expiresAt: new Date(START - 1) })],
      ['a key expiring at this very moment', (repository: FakeKeyRepository) => repository.put(KEY, { expiresAt: new Date(START) })],
    ])('refuses %s with 401 invalid_api_key', async (_label, arrange) => {
      const { repository, service } = setUp();
      arrange(repository);

      const error = await refusal(authenticate(service, KEY));

      expect(error.code).toBe('invalid_api_key');
      expect(statusOf(error.code)).toBe(401);
    });

    it('accepts a key whose expiry is still ahead', async () => {
      const { repository, service } = setUp();
      repository.put(KEY, { expiresAt: new Date(START + 1) });

      await expect(authenticate(service, KEY)).resolves.toMatchObject({ keyId: `id-${KEY}` });
    });

    it('refuses a cached key as soon as its expiry passes, without waiting for the cache', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY, { expiresAt: new Date(START + 1_000) });
      await authenticate(service, KEY);

      clock.advance(1_000);

      expect((await refusal(authenticate(service, KEY))).code).toBe('invalid_api_key');
      expect(repository.reads).toBe(1);
    });
  });

  describe('cache', () => {
    it('answers a cached key synchronously, without a promise to wait for', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      expect(service.authenticate(KEY)).toBeInstanceOf(Promise);
      await authenticate(service, KEY);

      const answer = service.authenticate(KEY);

      expect(answer).not.toBeInstanceOf(Promise);
      expect(answer).toMatchObject({ keyId: `id-${KEY}` });
      repository.put(KEY, { enabled: false });
      service.invalidate();
      await authenticate(service, KEY).catch(() => undefined);
      expect(() => service.authenticate(KEY)).toThrow('The API key is disabled.');
    });

    it('answers a key seen within the TTL without reading the repository again', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY);
      await authenticate(service, KEY);

      clock.advance(SETTINGS.ttlMs - 1);
      await authenticate(service, KEY);

      expect(repository.reads).toBe(1);
    });

    it('keeps a key that was disabled in the database working until the TTL passes', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY);
      await authenticate(service, KEY);
      repository.put(KEY, { enabled: false });

      clock.advance(SETTINGS.ttlMs - 1);
      await expect(authenticate(service, KEY)).resolves.toMatchObject({ enabled: true });
    });

    it('reads the key again once the TTL has passed and sees it disabled', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY);
      await authenticate(service, KEY);
      repository.put(KEY, { enabled: false });

      clock.advance(SETTINGS.ttlMs);
      const error = await refusal(authenticate(service, KEY));

      expect(error.code).toBe('invalid_api_key');
      expect(repository.reads).toBe(2);
    });

    it('remembers an unknown key for the negative TTL only, so a new key starts working soon', async () => {
      const { repository, clock, service } = setUp();
      await refusal(authenticate(service, KEY));
      repository.put(KEY);

      clock.advance(SETTINGS.negativeTtlMs - 1);
      expect((await refusal(authenticate(service, KEY))).code).toBe('invalid_api_key');
      expect(repository.reads).toBe(1);

      clock.advance(1);
      await expect(authenticate(service, KEY)).resolves.toMatchObject({ keyId: `id-${KEY}` });
      expect(repository.reads).toBe(2);
    });

    it('shares one repository read between concurrent misses for the same key', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      let open!: () => void;
      repository.gate = new Promise<void>((resolve) => (open = resolve));

      const attempts = Array.from({ length: 5 }, () => authenticate(service, KEY));
      open();
      const principals = await Promise.all(attempts);

      expect(repository.reads).toBe(1);
      expect(new Set(principals.map((principal) => principal.keyId))).toEqual(new Set([`id-${KEY}`]));
    });

    it('reads separately for different keys', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      repository.put('gk-unit-test-key-0002');

      await Promise.all([authenticate(service, KEY), authenticate(service, 'gk-unit-test-key-0002')]);

      expect(repository.reads).toBe(2);
    });

    it('reads again after invalidate()', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      await authenticate(service, KEY);

      service.invalidate(sha256Hex(KEY));
      await authenticate(service, KEY);

      expect(repository.reads).toBe(2);
    });
  });

  describe('when the database is away', () => {
    it('keeps a previously seen key working on its last known state after the TTL', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY, { ownerId: 'team-a' });
      await authenticate(service, KEY);
      repository.failure = new Error('connect ECONNREFUSED 127.0.0.1:5432');

      clock.advance(SETTINGS.ttlMs * 10);
      const principal = await authenticate(service, KEY);

      expect(principal).toMatchObject({ keyId: `id-${KEY}`, ownerId: 'team-a' });
      expect(repository.reads).toBe(2);
    });

    it('keeps a previously seen disabled key refused', async () => {
      const { repository, clock, service } = setUp();
      repository.put(KEY, { enabled: false });
      await refusal(authenticate(service, KEY));
      repository.failure = new Error('connect ECONNREFUSED 127.0.0.1:5432');

      clock.advance(SETTINGS.ttlMs * 10);

      expect((await refusal(authenticate(service, KEY))).code).toBe('invalid_api_key');
    });

    it('answers 503 service_unavailable for a key never seen before', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      repository.failure = new Error('connect ECONNREFUSED 127.0.0.1:5432');

      const error = await refusal(authenticate(service, KEY));

      expect(error.code).toBe('service_unavailable');
      expect(statusOf(error.code)).toBe(503);
      expect(error.retryAfterSeconds).toBeGreaterThan(0);
    });

    it('asks the repository again on the next attempt once the database is back', async () => {
      const { repository, service } = setUp();
      repository.put(KEY);
      repository.failure = new Error('connect ECONNREFUSED 127.0.0.1:5432');
      await refusal(authenticate(service, KEY));

      repository.failure = undefined;

      await expect(authenticate(service, KEY)).resolves.toMatchObject({ keyId: `id-${KEY}` });
      expect(repository.reads).toBe(2);
    });
  });
});
