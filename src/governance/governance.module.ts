import { Module } from '@nestjs/common';
import { RateLimiter } from './rate-limiter';
import { RateLimitSync } from './rate-limit-sync';
import { AlertDelivery } from './alert-delivery';
import { ReplicaLimits } from './replica-limits';

/**
 * Governance of keys and owners: rate limits (the limiter admission asks, and its sharing between
 * replicas), the delivery of budget alerts, and the self-service view of a key; and the replica's
 * own limits of client connections and streams, whatever the key.
 */
@Module({
  providers: [RateLimiter, RateLimitSync, AlertDelivery, ReplicaLimits],
  exports: [RateLimiter, AlertDelivery, ReplicaLimits],
})
export class GovernanceModule {}
