import { Module } from '@nestjs/common';
import { RateLimiter } from './rate-limiter';
import { RateLimitSync } from './rate-limit-sync';
import { AlertDelivery } from './alert-delivery';

/**
 * Governance of keys and owners: rate limits (the limiter admission asks, and its sharing between
 * replicas), the delivery of budget alerts, and the self-service view of a key.
 */
@Module({
  providers: [RateLimiter, RateLimitSync, AlertDelivery],
  exports: [RateLimiter, AlertDelivery],
})
export class GovernanceModule {}
