import { randomBytes, randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { GatewayError } from '../common/gateway-error';
import { DISPLAY_PREFIX_LENGTH } from '../config/config.loader';
import type { OwnerKind } from '../config/gateway-config';
import { sha256Hex } from '../auth/key-hash';
import type { RecordSource } from '../auth/quota-owner.entity';
import { returnedRows } from '../database/returned-rows';
import { limitsColumn, RateLimits, storedRateLimits } from '../config/rate-limits';
import { alertsColumn, BudgetPeriod, BudgetTerms, storedAlerts } from '../config/budgets';
import { recountPeriod } from '../metering/budget-ledger';

/** A quota owner as stored; amounts in nano-units. */
export interface OwnerRow {
  id: string;
  kind: OwnerKind;
  budgetNano: bigint | null;
  spentNano: bigint;
  reservedNano: bigint;
  limits: RateLimits | null;
  terms: BudgetTerms;
  /** The current period's figures; null without a period (the lifetime figures above are the budget's). */
  period: PeriodFigures | null;
  source: RecordSource;
  createdAt: Date;
  updatedAt: Date;
}

/** What a budget period has taken so far, and when it ends. */
export interface PeriodFigures {
  start: Date;
  resetsAt: Date;
  spentNano: bigint;
  reservedNano: bigint;
}

/** A key as stored: never the key itself, only its hash (not shown) and display prefix. */
export interface KeyRow {
  id: string;
  keySha256: string;
  prefix: string;
  ownerId: string;
  ownerKind: OwnerKind;
  models: string[];
  enabled: boolean;
  expiresAt: Date | null;
  limits: RateLimits | null;
  /** The key's own budget, in its owner's period; null: none. */
  budgetNano: bigint | null;
  /** The key's spend in its owner's current period (for good without one). */
  spend: { period: BudgetPeriod | null; start: Date | null; resetsAt: Date | null; spentNano: bigint; reservedNano: bigint };
  source: RecordSource;
  createdAt: Date;
  updatedAt: Date;
}

export interface Page<Row> {
  rows: Row[];
  /** The value to pass as `after` for the next page; null on the last page. */
  next: string | null;
}

export interface NewOwner {
  id: string;
  kind: OwnerKind;
  budgetNano: bigint | null;
  limits: RateLimits | null;
  terms: BudgetTerms;
}

export interface NewKey {
  ownerId: string;
  models: string[];
  expiresAt: Date | null;
  limits: RateLimits | null;
  budgetNano: bigint | null;
}

/** Generated keys: `gk-` and 32 base64url characters (192 random bits). */
export function generateKey(): string {
  return `gk-${randomBytes(24).toString('base64url')}`;
}

/** Keys with their owner's kind (a project's keys are renewed by the project). */
const KEYS_FROM = 'FROM api_key k JOIN quota_owner o ON o.id = k.owner_id';
/** Creation time to the millisecond, as a cursor carries it (PostgreSQL keeps microseconds). */
const CREATED_MS = `date_trunc('milliseconds', k.created_at)`;
/** The start of the owner's current budget period (`-infinity` without one), for the table `o` names. */
const periodStart = (o: string) => `budget_period_start(${o}.budget_period, ${o}.budget_timezone, now())`;
/** A column of the period row (`key_id` '' for the owner's own) of the current period. */
const periodColumn = (column: string, o: string, keyId: string) =>
  `(SELECT s.${column} FROM budget_spend s WHERE s.owner_id = ${o}.id AND s.key_id = ${keyId} AND s.period_start = ${periodStart(o)})`;
const PERIOD_COLUMNS = (o: string) => `${o}.budget_period, ${o}.budget_timezone,
  CASE WHEN ${o}.budget_period IS NULL THEN NULL ELSE ${periodStart(o)} END AS period_start,
  CASE WHEN ${o}.budget_period IS NULL THEN NULL ELSE budget_period_end(${o}.budget_period, ${o}.budget_timezone, now()) END AS period_end`;
const OWNER_COLUMNS = `id, kind, budget_nano, spent_nano, reserved_nano, limits, alerts, source, created_at, updated_at, ${PERIOD_COLUMNS('quota_owner')},
  ${periodColumn('spent_nano', 'quota_owner', "''")} AS period_spent_nano, ${periodColumn('reserved_nano', 'quota_owner', "''")} AS period_reserved_nano`;
const KEY_COLUMNS = `k.id, k.key_sha256, k.display_prefix, k.owner_id, o.kind, k.models, k.enabled, k.expires_at, k.limits, k.budget_nano, k.source,
  k.created_at, k.updated_at, ${PERIOD_COLUMNS('o')},
  ${periodColumn('spent_nano', 'o', 'k.id::text')} AS period_spent_nano, ${periodColumn('reserved_nano', 'o', 'k.id::text')} AS period_reserved_nano`;

/** The columns both rows share about a budget period. */
interface PeriodRecord {
  budget_period: BudgetPeriod | null;
  budget_timezone: string | null;
  period_start: Date | null;
  period_end: Date | null;
  period_spent_nano: string | null;
  period_reserved_nano: string | null;
}

interface OwnerRecord extends PeriodRecord {
  id: string;
  kind: OwnerKind;
  budget_nano: string | null;
  spent_nano: string;
  reserved_nano: string;
  limits: unknown;
  alerts: unknown;
  source: RecordSource;
  created_at: Date;
  updated_at: Date;
}

interface KeyRecord extends PeriodRecord {
  id: string;
  key_sha256: string;
  display_prefix: string;
  owner_id: string;
  kind: OwnerKind;
  models: string[];
  enabled: boolean;
  expires_at: Date | null;
  limits: unknown;
  budget_nano: string | null;
  source: RecordSource;
  created_at: Date;
  updated_at: Date;
}

function ownerOf(row: OwnerRecord): OwnerRow {
  return {
    id: row.id,
    kind: row.kind,
    budgetNano: row.budget_nano === null ? null : BigInt(row.budget_nano),
    spentNano: BigInt(row.spent_nano),
    reservedNano: BigInt(row.reserved_nano),
    limits: storedRateLimits(row.limits),
    terms: { period: row.budget_period, timezone: row.budget_timezone, alerts: storedAlerts(row.alerts) },
    period:
      row.period_start === null
        ? null
        : {
            start: new Date(row.period_start),
            resetsAt: new Date(row.period_end!),
            spentNano: BigInt(row.period_spent_nano ?? 0),
            reservedNano: BigInt(row.period_reserved_nano ?? 0),
          },
    source: row.source,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function keyOf(row: KeyRecord): KeyRow {
  return {
    id: row.id,
    keySha256: row.key_sha256.trim(),
    prefix: row.display_prefix,
    ownerId: row.owner_id,
    ownerKind: row.kind,
    models: row.models,
    enabled: row.enabled,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    limits: storedRateLimits(row.limits),
    budgetNano: row.budget_nano === null ? null : BigInt(row.budget_nano),
    spend: {
      period: row.budget_period,
      start: row.period_start === null ? null : new Date(row.period_start),
      resetsAt: row.period_end === null ? null : new Date(row.period_end),
      spentNano: BigInt(row.period_spent_nano ?? 0),
      reservedNano: BigInt(row.period_reserved_nano ?? 0),
    },
    source: row.source,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function ownerMissing(id: string): GatewayError {
  return new GatewayError('not_found', `No quota owner has the id ${JSON.stringify(id)}.`);
}

function keyMissing(id: string): GatewayError {
  return new GatewayError('not_found', `No key has the id ${JSON.stringify(id)}.`);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Owner and key operations of the operator (admin API and command line), straight on the
 * database. Rows made here are `source: admin`; rows of the configuration file
 * (`source: config`) may be changed too, and the file's values come back at the next start.
 */
export class AdminStore {
  constructor(private readonly dataSource: DataSource) {}

  async createOwner(owner: NewOwner): Promise<OwnerRow> {
    const rows = returnedRows<OwnerRecord>(
      await this.dataSource.query(
        `INSERT INTO quota_owner (id, kind, budget_nano, limits, budget_period, budget_timezone, alerts, source)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'admin')
         ON CONFLICT (id) DO NOTHING RETURNING ${OWNER_COLUMNS}`,
        [
          owner.id,
          owner.kind,
          owner.budgetNano?.toString() ?? null,
          limitsColumn(owner.limits),
          owner.terms.period,
          owner.terms.timezone,
          alertsColumn(owner.terms.alerts),
        ],
      ),
    );
    if (rows.length === 0) throw new GatewayError('conflict', `A quota owner with the id ${JSON.stringify(owner.id)} exists already.`);
    return ownerOf(rows[0]);
  }

  async owner(id: string): Promise<OwnerRow> {
    const [row] = await this.dataSource.query<OwnerRecord[]>(`SELECT ${OWNER_COLUMNS} FROM quota_owner WHERE id = $1`, [id]);
    if (!row) throw ownerMissing(id);
    return ownerOf(row);
  }

  /** Owners in id order, `limit` at a time, after the id `after`. */
  async owners(limit: number, after: string | undefined): Promise<Page<OwnerRow>> {
    const rows = await this.dataSource.query<OwnerRecord[]>(
      `SELECT ${OWNER_COLUMNS} FROM quota_owner WHERE ($1::varchar IS NULL OR id > $1) ORDER BY id LIMIT $2`,
      [after ?? null, limit + 1],
    );
    return pageOf(rows.map(ownerOf), limit, (owner) => owner.id);
  }

  /** Sets the budget (null: unlimited); spent and reserved amounts are untouched. */
  async setBudget(id: string, budgetNano: bigint | null): Promise<OwnerRow> {
    const rows = returnedRows<OwnerRecord>(
      await this.dataSource.query(`UPDATE quota_owner SET budget_nano = $2, updated_at = now() WHERE id = $1 RETURNING ${OWNER_COLUMNS}`, [
        id,
        budgetNano?.toString() ?? null,
      ]),
    );
    if (rows.length === 0) throw ownerMissing(id);
    return ownerOf(rows[0]);
  }

  /**
   * Sets the owner's budget period, time zone and alerts. A period that starts to count, or
   * counts differently, is counted again from the owner's records and open video tasks, under
   * the owner's lock, so no batch of spend lands half in the old count and half in the new.
   */
  async setTerms(id: string, terms: BudgetTerms): Promise<OwnerRow> {
    return this.dataSource.transaction(async (manager) => {
      const [before] = await manager.query<Array<{ budget_period: string | null; budget_timezone: string | null }>>(
        `SELECT budget_period, budget_timezone FROM quota_owner WHERE id = $1 FOR UPDATE`,
        [id],
      );
      if (!before) throw ownerMissing(id);
      await manager.query(`UPDATE quota_owner SET budget_period = $2, budget_timezone = $3, alerts = $4, updated_at = now() WHERE id = $1`, [
        id,
        terms.period,
        terms.timezone,
        alertsColumn(terms.alerts),
      ]);
      if (before.budget_period !== terms.period || before.budget_timezone !== terms.timezone) await recountPeriod(manager, id, new Date());
      const [row] = await manager.query<OwnerRecord[]>(`SELECT ${OWNER_COLUMNS} FROM quota_owner WHERE id = $1`, [id]);
      return ownerOf(row);
    });
  }

  /** Sets the owner's rate limits (null: none). */
  async setOwnerLimits(id: string, limits: RateLimits | null): Promise<OwnerRow> {
    const rows = returnedRows<OwnerRecord>(
      await this.dataSource.query(`UPDATE quota_owner SET limits = $2, updated_at = now() WHERE id = $1 RETURNING ${OWNER_COLUMNS}`, [
        id,
        limitsColumn(limits),
      ]),
    );
    if (rows.length === 0) throw ownerMissing(id);
    return ownerOf(rows[0]);
  }

  /** The ids of the models in the database's catalog. */
  async catalogModelIds(): Promise<Set<string>> {
    const rows = (await this.dataSource.query(`SELECT id FROM catalog_model`)) as Array<{ id: string }>;
    return new Set(rows.map((row) => row.id));
  }

  /** Makes a key; the plaintext is returned here and nowhere else (only its SHA-256 is stored). */
  async createKey(key: NewKey): Promise<{ key: KeyRow; plaintext: string }> {
    const plaintext = generateKey();
    return this.dataSource.transaction(async (manager) => {
      const owner = await this.lockedOwner(manager, key.ownerId);
      const id = randomUUID();
      await manager.query(
        `INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled, expires_at, limits, budget_nano, source)
         VALUES ($1, $2, $3, $4, $5, true, $6, $7, $8, 'admin')`,
        [
          id,
          sha256Hex(plaintext),
          plaintext.slice(0, DISPLAY_PREFIX_LENGTH),
          owner.id,
          JSON.stringify(key.models),
          key.expiresAt,
          limitsColumn(key.limits),
          key.budgetNano?.toString() ?? null,
        ],
      );
      return { key: await this.keyIn(manager, id), plaintext };
    });
  }

  async key(id: string): Promise<KeyRow> {
    return this.keyIn(this.dataSource.manager, id);
  }

  /** An owner's keys (every key when no owner is named), in creation order. */
  async keys(ownerId: string | undefined, limit: number, after: string | undefined): Promise<Page<KeyRow>> {
    if (ownerId !== undefined) await this.owner(ownerId);
    const cursor = after === undefined ? null : parseKeyCursor(after);
    const rows = await this.dataSource.query<KeyRecord[]>(
      `SELECT ${KEY_COLUMNS} ${KEYS_FROM}
        WHERE ($1::varchar IS NULL OR k.owner_id = $1)
          AND ($2::timestamptz IS NULL OR (${CREATED_MS}, k.id) > ($2::timestamptz, $3::uuid))
        ORDER BY ${CREATED_MS}, k.id LIMIT $4`,
      [ownerId ?? null, cursor?.createdAt ?? null, cursor?.id ?? null, limit + 1],
    );
    return pageOf(rows.map(keyOf), limit, (key) => `${key.createdAt.toISOString()}_${key.id}`);
  }

  async setEnabled(id: string, enabled: boolean): Promise<KeyRow> {
    return this.updateKey(id, `enabled = $2`, [enabled]);
  }

  /** Sets the key's own rate limits (null: none). */
  async setKeyLimits(id: string, limits: RateLimits | null): Promise<KeyRow> {
    return this.updateKey(id, `limits = $2`, [limitsColumn(limits)]);
  }

  /** Sets the key's own budget (null: none). */
  async setKeyBudget(id: string, budgetNano: bigint | null): Promise<KeyRow> {
    return this.updateKey(id, `budget_nano = $2`, [budgetNano?.toString() ?? null]);
  }

  /**
   * A new expiry (null: never) for a member's key. SPEC.md: project keys are renewed by the
   * project, so a project's keys are renewed together through renewProjectKeys.
   */
  async renewKey(id: string, expiresAt: Date | null): Promise<KeyRow> {
    const key = await this.key(id);
    if (key.ownerKind === 'project') {
      throw new GatewayError(
        'invalid_request',
        `The key ${id} belongs to the project ${JSON.stringify(key.ownerId)}; project keys are renewed by the project (POST /admin/owners/${key.ownerId}/renew-keys).`,
      );
    }
    return this.updateKey(id, `expires_at = $2`, [expiresAt]);
  }

  /** Gives every key of a project the new expiry (null: never); returns the renewed keys. */
  async renewProjectKeys(ownerId: string, expiresAt: Date | null): Promise<KeyRow[]> {
    const owner = await this.owner(ownerId);
    if (owner.kind !== 'project') {
      throw new GatewayError(
        'invalid_request',
        `${JSON.stringify(ownerId)} is a member; a member's keys are renewed one by one (POST /admin/keys/{id}/renew).`,
      );
    }
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`UPDATE api_key SET expires_at = $2, updated_at = now() WHERE owner_id = $1`, [ownerId, expiresAt]);
      const rows = await manager.query<KeyRecord[]>(`SELECT ${KEY_COLUMNS} ${KEYS_FROM} WHERE k.owner_id = $1 ORDER BY ${CREATED_MS}, k.id`, [ownerId]);
      return rows.map(keyOf);
    });
  }

  /** Deletes a key; its usage records stay (they name the key id). */
  async deleteKey(id: string): Promise<KeyRow> {
    const key = await this.key(id);
    await this.dataSource.query(`DELETE FROM api_key WHERE id = $1`, [id]);
    return key;
  }

  private async updateKey(id: string, assignment: string, values: unknown[]): Promise<KeyRow> {
    if (!UUID.test(id)) throw keyMissing(id);
    return this.dataSource.transaction(async (manager) => {
      const updated = returnedRows<{ id: string }>(
        await manager.query(`UPDATE api_key SET ${assignment}, updated_at = now() WHERE id = $1 RETURNING id`, [id, ...values]),
      );
      if (updated.length === 0) throw keyMissing(id);
      return this.keyIn(manager, id);
    });
  }

  private async keyIn(manager: EntityManager, id: string): Promise<KeyRow> {
    if (!UUID.test(id)) throw keyMissing(id);
    const [row] = await manager.query<KeyRecord[]>(`SELECT ${KEY_COLUMNS} ${KEYS_FROM} WHERE k.id = $1`, [id]);
    if (!row) throw keyMissing(id);
    return keyOf(row);
  }

  /** The owner, locked so it cannot be deleted under a key being made for it. */
  private async lockedOwner(manager: EntityManager, id: string): Promise<OwnerRow> {
    const [row] = await manager.query<OwnerRecord[]>(`SELECT ${OWNER_COLUMNS} FROM quota_owner WHERE id = $1 FOR SHARE`, [id]);
    if (!row) throw ownerMissing(id);
    return ownerOf(row);
  }
}

function pageOf<Row>(rows: Row[], limit: number, cursorOf: (row: Row) => string): Page<Row> {
  if (rows.length <= limit) return { rows, next: null };
  const page = rows.slice(0, limit);
  return { rows: page, next: cursorOf(page[page.length - 1]) };
}

function parseKeyCursor(after: string): { createdAt: string; id: string } {
  const separator = after.lastIndexOf('_');
  const createdAt = after.slice(0, separator);
  const id = after.slice(separator + 1);
  if (separator < 0 || Number.isNaN(Date.parse(createdAt)) || new Date(createdAt).toISOString() !== createdAt || !UUID.test(id)) {
    throw new GatewayError('invalid_request', 'after: not a cursor this API gave out (use the `next` value of the previous page).');
  }
  return { createdAt, id };
}
