import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { QuotaOwner } from './quota-owner.entity';
import type { Principal } from './principal';
import type { KeyConfig, OwnerConfig } from '../config/gateway-config';
import { randomUUID } from 'node:crypto';
import { limitsColumn, storedRateLimits } from '../config/rate-limits';
import { alertsColumn } from '../config/budgets';
import { recountPeriod } from '../metering/budget-ledger';
import { returnedRows } from '../database/returned-rows';

/** Database access for keys and their owners. */
@Injectable()
export class ApiKeyRepository {
  private readonly owners: Repository<QuotaOwner>;

  constructor(private readonly dataSource: DataSource) {
    this.owners = dataSource.getRepository(QuotaOwner);
  }

  async findPrincipal(keySha256: string): Promise<Principal | null> {
    const rows: Array<{
      id: string;
      display_prefix: string;
      owner_id: string;
      kind: Principal['ownerKind'];
      models: string[];
      enabled: boolean;
      expires_at: Date | null;
      key_limits: unknown;
      owner_limits: unknown;
      key_budget_nano: string | null;
    }> = await this.dataSource.query(
      `SELECT k.id, k.display_prefix, k.owner_id, o.kind, k.models, k.enabled, k.expires_at, k.limits AS key_limits, o.limits AS owner_limits,
              k.budget_nano AS key_budget_nano
         FROM api_key k JOIN quota_owner o ON o.id = k.owner_id
        WHERE k.key_sha256 = $1`,
      [keySha256],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      keyId: row.id,
      displayPrefix: row.display_prefix,
      ownerId: row.owner_id,
      ownerKind: row.kind,
      models: row.models.includes('*') ? null : new Set(row.models),
      enabled: row.enabled,
      expiresAt: row.expires_at ? new Date(row.expires_at) : null,
      keyLimits: storedRateLimits(row.key_limits),
      ownerLimits: storedRateLimits(row.owner_limits),
      keyBudgetNano: row.key_budget_nano === null ? null : BigInt(row.key_budget_nano),
    };
  }

  /**
   * Creates or updates the owners and keys of the configuration file. Idempotent and safe
   * when replicas start together: every write is an upsert on the natural key. Spent and
   * reserved amounts are never touched.
   */
  async applyConfig(owners: OwnerConfig[], keys: KeyConfig[]): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      for (const owner of owners) {
        const [before] = returnedRows<{ budget_period: string | null; budget_timezone: string | null }>(
          await manager.query(`SELECT budget_period, budget_timezone FROM quota_owner WHERE id = $1 FOR UPDATE`, [owner.id]),
        );
        await manager.query(
          `INSERT INTO quota_owner (id, kind, budget_nano, limits, budget_period, budget_timezone, alerts, source)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'config')
           ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, budget_nano = EXCLUDED.budget_nano, limits = EXCLUDED.limits,
             budget_period = EXCLUDED.budget_period, budget_timezone = EXCLUDED.budget_timezone, alerts = EXCLUDED.alerts,
             source = 'config', updated_at = now()`,
          [
            owner.id,
            owner.kind,
            owner.budgetNano === undefined ? null : owner.budgetNano.toString(),
            limitsColumn(owner.limits),
            owner.terms.period,
            owner.terms.timezone,
            alertsColumn(owner.terms.alerts),
          ],
        );
        // A period that starts to count, or counts differently, starts from what the records say.
        if (before && (before.budget_period !== owner.terms.period || before.budget_timezone !== owner.terms.timezone)) {
          await recountPeriod(manager, owner.id, new Date());
        }
      }
      for (const key of keys) {
        await manager.query(
          `INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled, expires_at, limits, budget_nano, source)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'config')
           ON CONFLICT (key_sha256) DO UPDATE SET display_prefix = EXCLUDED.display_prefix,
             owner_id = EXCLUDED.owner_id, models = EXCLUDED.models, enabled = EXCLUDED.enabled,
             expires_at = EXCLUDED.expires_at, limits = EXCLUDED.limits, budget_nano = EXCLUDED.budget_nano, source = 'config', updated_at = now()`,
          [
            randomUUID(),
            key.keySha256,
            key.displayPrefix,
            key.owner,
            JSON.stringify(key.models),
            key.enabled,
            key.expiresAt ?? null,
            limitsColumn(key.limits),
            key.budgetNano === undefined ? null : key.budgetNano.toString(),
          ],
        );
      }
    });
  }

  findOwner(id: string): Promise<QuotaOwner | null> {
    return this.owners.findOneBy({ id });
  }
}
