import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { QuotaOwner } from './quota-owner.entity';
import type { Principal } from './principal';
import type { KeyConfig, OwnerConfig } from '../config/gateway-config';
import { randomUUID } from 'node:crypto';

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
    }> = await this.dataSource.query(
      `SELECT k.id, k.display_prefix, k.owner_id, o.kind, k.models, k.enabled, k.expires_at
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
        await manager.query(
          `INSERT INTO quota_owner (id, kind, budget_nano, source) VALUES ($1, $2, $3, 'config')
           ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, budget_nano = EXCLUDED.budget_nano,
             source = 'config', updated_at = now()`,
          [owner.id, owner.kind, owner.budgetNano === undefined ? null : owner.budgetNano.toString()],
        );
      }
      for (const key of keys) {
        await manager.query(
          `INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled, expires_at, source)
           VALUES ($1, $2, $3, $4, $5, $6, $7, 'config')
           ON CONFLICT (key_sha256) DO UPDATE SET display_prefix = EXCLUDED.display_prefix,
             owner_id = EXCLUDED.owner_id, models = EXCLUDED.models, enabled = EXCLUDED.enabled,
             expires_at = EXCLUDED.expires_at, source = 'config', updated_at = now()`,
          [randomUUID(), key.keySha256, key.displayPrefix, key.owner, JSON.stringify(key.models), key.enabled, key.expiresAt ?? null],
        );
      }
    });
  }

  findOwner(id: string): Promise<QuotaOwner | null> {
    return this.owners.findOneBy({ id });
  }
}
