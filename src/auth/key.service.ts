import { Inject, Injectable } from '@nestjs/common';
import { ApiKeyRepository } from './api-key.repository';
import { Clock } from '../common/clock';
import { sha256Hex } from './key-hash';
import type { Principal } from './principal';
import { GatewayError } from '../common/gateway-error';
import { KEY_CACHE_SETTINGS, KeyCacheSettings } from '../config/settings/auth.settings';

interface CacheEntry {
  principal: Principal | null;
  loadedAt: number;
}

const MAX_ENTRIES = 100_000;

/**
 * Turns a presented key into a principal. Keys are looked up by SHA-256 and cached in-process
 * for a short TTL, so a disabled or deleted key stops working within that TTL on every
 * replica; concurrent misses for one key share one database read.
 */
@Injectable()
export class KeyService {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly loading = new Map<string, Promise<Principal | null>>();

  constructor(
    private readonly repository: ApiKeyRepository,
    private readonly clock: Clock,
    @Inject(KEY_CACHE_SETTINGS) private readonly settings: KeyCacheSettings,
  ) {}

  /**
   * The principal of a plaintext key, or 401 `invalid_api_key`. Answered synchronously (a value,
   * or a throw) when the key's state is cached, as it is for all but the first call of a TTL: the
   * hot path does not wait for promises it does not need.
   */
  authenticate(plaintext: string): Principal | Promise<Principal> {
    const keySha256 = sha256Hex(plaintext);
    const entry = this.cache.get(keySha256);
    if (entry && this.isFresh(entry)) return this.admitted(entry.principal);
    return this.lookup(keySha256).then((principal) => this.admitted(principal));
  }

  private admitted(principal: Principal | null): Principal {
    if (!principal) throw new GatewayError('invalid_api_key', 'The API key is not valid.');
    if (!principal.enabled) throw new GatewayError('invalid_api_key', 'The API key is disabled.');
    if (principal.expiresAt && principal.expiresAt.getTime() <= this.clock.now()) {
      throw new GatewayError('invalid_api_key', 'The API key has expired.');
    }
    return principal;
  }

  /** Forgets cached entries (after this replica changed keys itself). */
  invalidate(keySha256?: string): void {
    if (keySha256) this.cache.delete(keySha256);
    else this.cache.clear();
  }

  private lookup(keySha256: string): Promise<Principal | null> {
    let pending = this.loading.get(keySha256);
    if (!pending) {
      pending = this.load(keySha256);
      this.loading.set(keySha256, pending);
    }
    return pending;
  }

  private async load(keySha256: string): Promise<Principal | null> {
    try {
      const principal = await this.repository.findPrincipal(keySha256);
      if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
      this.cache.set(keySha256, { principal, loadedAt: this.clock.now() });
      return principal;
    } catch {
      // The database is away: a key seen before keeps working on its last known state.
      const stale = this.cache.get(keySha256);
      if (stale) return stale.principal;
      throw new GatewayError('service_unavailable', 'The gateway cannot verify API keys right now; retry shortly.', 1);
    } finally {
      this.loading.delete(keySha256);
    }
  }

  private isFresh(entry: CacheEntry): boolean {
    const ttl = entry.principal ? this.settings.ttlMs : this.settings.negativeTtlMs;
    return this.clock.now() - entry.loadedAt < ttl;
  }
}
