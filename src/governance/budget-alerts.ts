import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { nanoToNumber } from '../config/money';
import { returnedRows } from '../database/returned-rows';

/**
 * Budget alerts: each threshold (a per cent of the budget) an owner's period reaches fires once,
 * as a row of `budget_alert` (the outbox AlertDelivery sends from) and an audit entry, in the
 * transaction of the money statement that moved the owner's spend.
 */

/** Where an owner stands in one budget period, as the money statement that changed it sees it. */
export interface AlertStanding {
  ownerId: string;
  /**
   * The start of the period; -Infinity (as node-postgres reads `-infinity`) or an invalid Date for
   * an owner without a period, whose lifetime budget counts as one period.
   */
  periodStart: Date | number;
  /** The end of the period; null (or Infinity) without one. */
  periodEnd: Date | number | null;
  budgetNano: bigint;
  /** Spent plus reserved in the period. */
  usedNano: bigint;
  /** The owner's `alerts`: per cent of the budget. */
  thresholds: readonly number[];
}

/** A threshold that fired: a new row of `budget_alert`. */
export interface FiredAlert {
  id: string;
  ownerId: string;
  threshold: number;
  /** Null for an owner without a period. */
  periodStart: Date | null;
  periodEnd: Date | null;
  budgetNano: bigint;
  usedNano: bigint;
  firedAt: Date;
}

/** The webhook's body, and the audit entry's `after`. */
export interface AlertEvent {
  id: string;
  type: 'budget.alert';
  owner_id: string;
  threshold: number;
  period: { start: string | null; end: string | null };
  budget: number;
  used: number;
  fired_at: string;
}

/** The audit log's actor for what the gateway does by itself. */
const GATEWAY_ACTOR = 'gateway';

/**
 * Whether an owner could fire any alert at all: it has thresholds and a budget above 0. Callers
 * check this first, so owners without alerts cost the money statement nothing more.
 */
export function mayFireAlerts(owner: { thresholds: readonly number[] | null | undefined; budgetNano: bigint | null | undefined }): boolean {
  return (owner.thresholds?.length ?? 0) > 0 && owner.budgetNano !== null && owner.budgetNano !== undefined && owner.budgetNano > 0n;
}

/** The thresholds `used` has reached (used * 100 >= budget * threshold, in whole nano-units), each once. */
export function crossedThresholds(standing: AlertStanding): number[] {
  if (!mayFireAlerts(standing)) return [];
  const reached = standing.thresholds.filter((threshold) => standing.usedNano * 100n >= standing.budgetNano * BigInt(threshold));
  return [...new Set(reached)];
}

/**
 * Inserts every threshold the standings reached and that has not fired in its period yet, in one
 * statement, and audits each one that fired. Runs in the caller's transaction: when two replicas
 * cross a threshold together, the unique key makes the second wait for the first's commit and
 * then insert nothing, so each threshold fires once per period.
 */
export async function fireCrossedAlerts(manager: EntityManager, standings: AlertStanding[], now: Date): Promise<FiredAlert[]> {
  const candidates = standings.flatMap((standing) => crossedThresholds(standing).map((threshold) => candidateOf(standing, threshold, now)));
  if (candidates.length === 0) return [];
  const rows = returnedRows<{ id: string }>(
    await manager.query(
      `INSERT INTO budget_alert (id, owner_id, period_start, period_end, threshold, budget_nano, used_nano, fired_at, next_attempt_at)
       SELECT id, owner_id, period_start, period_end, threshold, budget_nano, used_nano, $8, $8
         FROM unnest($1::uuid[], $2::varchar[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::bigint[], $7::bigint[])
           AS t(id, owner_id, period_start, period_end, threshold, budget_nano, used_nano)
       ON CONFLICT (owner_id, period_start, threshold) DO NOTHING
       RETURNING id`,
      [
        candidates.map((alert) => alert.id),
        candidates.map((alert) => alert.ownerId),
        candidates.map((alert) => (alert.periodStart === null ? '-infinity' : alert.periodStart.toISOString())),
        candidates.map((alert) => alert.periodEnd?.toISOString() ?? null),
        candidates.map((alert) => alert.threshold),
        candidates.map((alert) => alert.budgetNano.toString()),
        candidates.map((alert) => alert.usedNano.toString()),
        now,
      ],
    ),
  );
  const inserted = new Set(rows.map((row) => row.id));
  const fired = candidates.filter((alert) => inserted.has(alert.id));
  await auditFired(manager, fired);
  return fired;
}

/** One audit entry per fired alert, its event as `after`, in one statement. */
async function auditFired(manager: EntityManager, fired: FiredAlert[]): Promise<void> {
  if (fired.length === 0) return;
  await manager.query(
    `INSERT INTO admin_audit (actor, action, item_kind, item_id, before, after)
     SELECT $1, 'owner.alert', 'owner', owner_id, NULL, after FROM unnest($2::varchar[], $3::jsonb[]) AS t(owner_id, after)`,
    [GATEWAY_ACTOR, fired.map((alert) => alert.ownerId), fired.map((alert) => JSON.stringify(alertEventOf(alert)))],
  );
}

function candidateOf(standing: AlertStanding, threshold: number, now: Date): FiredAlert {
  return {
    id: randomUUID(),
    ownerId: standing.ownerId,
    threshold,
    periodStart: finiteDate(standing.periodStart),
    periodEnd: standing.periodEnd === null ? null : finiteDate(standing.periodEnd),
    budgetNano: standing.budgetNano,
    usedNano: standing.usedNano,
    firedAt: now,
  };
}

/** A time as a Date, or null for ±infinity (a number, as node-postgres reads it, or an invalid Date). */
function finiteDate(value: Date | number): Date | null {
  const time = typeof value === 'number' ? value : value.getTime();
  return Number.isFinite(time) ? new Date(time) : null;
}

/** The event an alert is delivered and audited as. */
export function alertEventOf(alert: FiredAlert): AlertEvent {
  return {
    id: alert.id,
    type: 'budget.alert',
    owner_id: alert.ownerId,
    threshold: alert.threshold,
    period: { start: alert.periodStart?.toISOString() ?? null, end: alert.periodEnd?.toISOString() ?? null },
    budget: nanoToNumber(alert.budgetNano),
    used: nanoToNumber(alert.usedNano),
    fired_at: alert.firedAt.toISOString(),
  };
}

/** A stored alert and its delivery. */
export interface StoredAlert extends FiredAlert {
  deliveredAt: Date | null;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
}

/** The columns of a `budget_alert` row (alias `a`) that make a StoredAlert; no period (`-infinity`) as null. */
export const STORED_ALERT_COLUMNS = `a.id, a.owner_id, a.threshold, a.budget_nano, a.used_nano, a.fired_at, a.delivered_at, a.attempts,
  a.next_attempt_at, a.last_error, CASE WHEN isfinite(a.period_start) THEN a.period_start END AS period_start, a.period_end`;

export interface StoredAlertRecord {
  id: string;
  owner_id: string;
  threshold: number;
  budget_nano: string;
  used_nano: string;
  fired_at: Date | string;
  delivered_at: Date | string | null;
  attempts: number;
  next_attempt_at: Date | string;
  last_error: string | null;
  period_start: Date | string | null;
  period_end: Date | string | null;
}

export function storedAlertOf(row: StoredAlertRecord): StoredAlert {
  return {
    id: row.id,
    ownerId: row.owner_id,
    threshold: Number(row.threshold),
    periodStart: dateOrNull(row.period_start),
    periodEnd: dateOrNull(row.period_end),
    budgetNano: BigInt(row.budget_nano),
    usedNano: BigInt(row.used_nano),
    firedAt: new Date(row.fired_at),
    deliveredAt: dateOrNull(row.delivered_at),
    attempts: Number(row.attempts),
    nextAttemptAt: new Date(row.next_attempt_at),
    lastError: row.last_error,
  };
}

function dateOrNull(value: Date | string | null): Date | null {
  return value === null ? null : new Date(value);
}
