import { Controller, Get, Module, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { AuthModule } from '../auth/auth.module';
import type { Principal } from '../auth/principal';
import { GatewayError } from '../common/gateway-error';
import { nanoToNumber } from '../config/money';
import { Balance, QuotaService } from '../metering/quota.service';
import { MeteringModule } from '../metering/metering.module';
import { GovernanceModule } from './governance.module';
import { LimitStanding, RateLimiter } from './rate-limiter';

function standingView(standing: LimitStanding | null) {
  return { limits: standing?.limits ?? null, limits_remaining: standing?.remaining ?? null };
}

/**
 * `GET /v1/key`: what the presented key may still spend and call, for the key's own holder
 * (docs/api.md "Your key"): the owner's budget and the key's own, each with its spend in the
 * current period and when that period ends, the key's and the owner's rate limits and what is
 * left of them now. Nothing about any other key or owner. Any entry's way of
 * presenting a key works (ApiKeyGuard).
 */
@Controller('v1/key')
@UseGuards(ApiKeyGuard)
export class KeyStandingController {
  constructor(
    private readonly quota: QuotaService,
    private readonly limiter: RateLimiter,
  ) {}

  @Get()
  async show(@Req() request: FastifyRequest) {
    const principal: Principal = request.principal!;
    const [owner, key] = await Promise.all([this.quota.standing(principal.ownerId), this.quota.standingOfKey(principal.keyId)]).catch(() => {
      throw new GatewayError('service_unavailable', 'The gateway cannot read balances right now; retry shortly.', 1);
    });
    if (!owner.balance || !key.balance) throw new GatewayError('invalid_api_key', 'The API key is not valid.');
    const standing = await this.limiter.standing(principal);
    return {
      object: 'gateway.key',
      key: {
        id: principal.keyId,
        prefix: principal.displayPrefix,
        models: principal.models === null ? ['*'] : [...principal.models],
        expires_at: principal.expiresAt?.toISOString() ?? null,
        // The key's budget as admission applies it: the principal's (its spend is the balance's).
        ...budgetView({ ...key.balance, budgetNano: principal.keyBudgetNano }, key.pendingNano),
        ...standingView(standing.key),
      },
      owner: {
        id: principal.ownerId,
        kind: principal.ownerKind,
        ...budgetView(owner.balance, owner.pendingNano),
        ...standingView(standing.owner),
      },
    };
  }
}

/**
 * A budget's figures in its current period (for good without one), and when they start again;
 * calls this replica metered and has not written yet count as spent, as they do at admission.
 */
function budgetView(balance: Balance, pendingNano: bigint) {
  const spent = balance.spentNano + pendingNano;
  return {
    budget: balance.budgetNano === null ? null : nanoToNumber(balance.budgetNano),
    budget_period: balance.period,
    period_start: balance.periodStart === null ? null : new Date(balance.periodStart).toISOString(),
    resets_at: balance.resetsAt === null ? null : new Date(balance.resetsAt).toISOString(),
    spent: nanoToNumber(spent),
    reserved: nanoToNumber(balance.reservedNano),
    remaining: balance.budgetNano === null ? null : nanoToNumber(maxZero(balance.budgetNano - spent - balance.reservedNano)),
  };
}

function maxZero(value: bigint): bigint {
  return value > 0n ? value : 0n;
}

/** The self-service route, apart from GovernanceModule, which the metering it reads from imports. */
@Module({
  imports: [AuthModule, MeteringModule, GovernanceModule],
  controllers: [KeyStandingController],
})
export class KeyStandingModule {}
