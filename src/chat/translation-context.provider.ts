import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Clock } from '../auth/clock';
import type { TranslationContext } from '../translation/canonical/ids';

/** Ids and time for the pure translation code. */
@Injectable()
export class TranslationContextProvider implements TranslationContext {
  constructor(private readonly clock: Clock) {}

  newId(prefix: string): string {
    return `${prefix}_${randomBytes(18).toString('base64url')}`;
  }

  now(): number {
    return Math.floor(this.clock.now() / 1000);
  }
}
