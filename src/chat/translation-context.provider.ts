import { Injectable } from '@nestjs/common';
import { randomFillSync } from 'node:crypto';
import { Clock } from '../common/clock';
import type { TranslationContext } from '../translation/canonical/ids';

/** Random bytes per id: 144 bits, 24 base64url characters. */
const ID_BYTES = 18;
/** Ids drawn from one fill of the pool. */
const IDS_PER_FILL = 256;

/**
 * Random bytes for ids, taken from a pool that the system's CSPRNG fills 256 ids at a time
 * (as `crypto.randomUUID` caches its entropy): `randomBytes(18)` per id costs far more than a
 * slice of the pool, and a translated stream makes two before its first byte. Each byte is
 * handed out once.
 */
class IdEntropy {
  private pool = Buffer.alloc(0);
  private offset = 0;

  next(): Buffer {
    if (this.offset + ID_BYTES > this.pool.length) {
      this.pool = randomFillSync(Buffer.allocUnsafe(ID_BYTES * IDS_PER_FILL));
      this.offset = 0;
    }
    const bytes = this.pool.subarray(this.offset, this.offset + ID_BYTES);
    this.offset += ID_BYTES;
    return bytes;
  }
}

/** Ids and time for the pure translation code. */
@Injectable()
export class TranslationContextProvider implements TranslationContext {
  private readonly entropy = new IdEntropy();

  constructor(private readonly clock: Clock) {}

  newId(prefix: string): string {
    return `${prefix}_${this.entropy.next().toString('base64url')}`;
  }

  now(): number {
    return Math.floor(this.clock.now() / 1000);
  }
}
