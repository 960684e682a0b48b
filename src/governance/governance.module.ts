import { Module } from '@nestjs/common';
import { RateLimiter } from './rate-limiter';
import { RateLimitSync } from './rate-limit-sync';

/** Governance of keys and owners: rate limits (the limiter admission asks, and its sharing between replicas) and the self-service view of a key. */
@Module({
  providers: [RateLimiter, RateLimitSync],
  exports: [RateLimiter],
})
export class GovernanceModule {}
