import type { EntityManager } from 'typeorm';
import { returnedRows } from '../database/returned-rows';
import type { SlotSpend } from './usage-lines';
import type { BudgetPeriod } from '../config/budgets';
import { AlertStanding, fireCrossedAlerts, mayFireAlerts } from '../governance/budget-alerts';

/** A budget's figures in its current period (or for good, without one), and when that period ends. */
export interface Balance {
  budgetNano: bigint | null;
  spentNano: bigint;
  reservedNano: bigint;
  period: BudgetPeriod | null;
  /** The current period's start (ms); null: no period, the figures are for good. */
  periodStart: number | null;
  /** When the current period ends and the figures start from zero (ms); null: never. */
  resetsAt: number | null;
}

export type { BudgetPeriod } from '../config/budgets';

/** An owner as a money statement leaves it: its current period's figures and its alerts. */
export interface OwnerStanding {
  ownerId: string;
  /** The current period's (the lifetime's without a period); undefined: the statement did not touch it. */
  balance: Balance | undefined;
  /** Alert thresholds in per cent of the budget. */
  alerts: readonly number[];
}

/** The owner's columns and its current period, computed by the database at `$now`. */
const OWNER_STANDING_COLUMNS = `o.id, o.budget_nano, o.spent_nano, o.reserved_nano, o.budget_period, o.alerts,
  CASE WHEN o.budget_period IS NULL THEN NULL ELSE budget_period_start(o.budget_period, o.budget_timezone, $NOW) END AS period_start,
  CASE WHEN o.budget_period IS NULL THEN NULL ELSE budget_period_end(o.budget_period, o.budget_timezone, $NOW) END AS period_end`;

export interface OwnerStandingRow {
  id: string;
  budget_nano: string | null;
  spent_nano: string;
  reserved_nano: string;
  budget_period: BudgetPeriod | null;
  alerts: number[] | null;
  period_start: Date | string | null;
  period_end: Date | string | null;
}

export interface PeriodRow {
  owner_id: string;
  key_id: string;
  /** null: no period (`-infinity` in the table). */
  period_start: Date | string | null;
  spent_nano: string;
  reserved_nano: string;
}

/** `budget_spend.key_id` of an owner's own total. */
export const OWNER_TOTAL = '';

export function millis(value: Date | string): number {
  return value instanceof Date ? value.getTime() : Date.parse(value);
}

/** `$NOW` in the columns above, as the statement's parameter number. */
function standingColumns(nowParameter: number): string {
  return OWNER_STANDING_COLUMNS.replaceAll('$NOW', `$${nowParameter}::timestamptz`);
}

/** The owner's standing from its row and the period rows a statement returned (of any owners and keys). */
export function standingOf(row: OwnerStandingRow, periods: readonly PeriodRow[]): OwnerStanding {
  const budgetNano = row.budget_nano === null ? null : BigInt(row.budget_nano);
  let balance: Balance | undefined;
  if (row.period_start === null) {
    const lifetime = { spentNano: BigInt(row.spent_nano), reservedNano: BigInt(row.reserved_nano) };
    balance = { budgetNano, ...lifetime, period: null, periodStart: null, resetsAt: null };
  } else {
    const periodStart = millis(row.period_start);
    const current = periods.find(
      (period) => period.owner_id === row.id && period.key_id === OWNER_TOTAL && period.period_start !== null && millis(period.period_start) === periodStart,
    );
    if (current) {
      balance = {
        budgetNano,
        spentNano: BigInt(current.spent_nano),
        reservedNano: BigInt(current.reserved_nano),
        period: row.budget_period,
        periodStart,
        resetsAt: millis(row.period_end!),
      };
    }
  }
  return { ownerId: row.id, balance, alerts: row.alerts ?? [] };
}

/** A key's figures in its owner's current period, from the rows a statement returned; undefined when it did not touch them. */
export function keyBalanceOf(keyId: string, owner: OwnerStandingRow, keyBudgetNano: bigint | null, periods: readonly PeriodRow[]): Balance | undefined {
  const periodStart = owner.period_start === null ? null : millis(owner.period_start);
  const row = periods.find(
    (period) => period.key_id === keyId && (period.period_start === null ? periodStart === null : millis(period.period_start) === periodStart),
  );
  if (!row) return undefined;
  return {
    budgetNano: keyBudgetNano,
    spentNano: BigInt(row.spent_nano),
    reservedNano: BigInt(row.reserved_nano),
    period: owner.budget_period,
    periodStart,
    resetsAt: owner.period_end === null ? null : millis(owner.period_end),
  };
}

/** A period row's columns; `-infinity` comes back as null, as the drivers do not agree on its form. */
const PERIOD_COLUMNS = `owner_id, key_id, CASE WHEN period_start = '-infinity' THEN NULL ELSE period_start END AS period_start, spent_nano, reserved_nano`;
const PERIOD_RETURNING = `RETURNING ${PERIOD_COLUMNS}`;

/**
 * Adds what calls cost to their owners' lifetime spend and to the period rows of their owners
 * and keys: each cost in the period of its call's start, as the owner's period is set now. The
 * owners' rows are locked first, in id order, so two writers never wait on each other in a
 * circle, and a change of an owner's period (which locks the row too) is never half seen.
 */
export async function addSpend(manager: EntityManager, slots: readonly SlotSpend[], now: Date): Promise<{ owners: OwnerStandingRow[]; periods: PeriodRow[] }> {
  const perOwner = new Map<string, bigint>();
  for (const slot of slots) if (slot.costNano !== 0n) perOwner.set(slot.ownerId, (perOwner.get(slot.ownerId) ?? 0n) + slot.costNano);
  if (perOwner.size === 0) return { owners: [], periods: [] };
  const owners: OwnerStandingRow[] = [];
  for (const ownerId of [...perOwner.keys()].sort()) {
    const [row] = returnedRows<OwnerStandingRow>(
      await manager.query(`UPDATE quota_owner o SET spent_nano = o.spent_nano + $2, updated_at = now() WHERE o.id = $1 RETURNING ${standingColumns(3)}`, [
        ownerId,
        perOwner.get(ownerId)!.toString(),
        now,
      ]),
    );
    if (row) owners.push(row);
  }
  const charged = slots.filter((slot) => slot.costNano !== 0n);
  const periods = returnedRows<PeriodRow>(
    await manager.query(
      `INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano)
       SELECT v.owner_id, g.key_id, budget_period_start(o.budget_period, o.budget_timezone, v.at), sum(v.cost)
         FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[]) AS v(owner_id, key_id, at, cost)
         JOIN quota_owner o ON o.id = v.owner_id
         CROSS JOIN LATERAL (VALUES (v.key_id), (CASE WHEN o.budget_period IS NULL THEN NULL ELSE '' END)) AS g(key_id)
        WHERE g.key_id IS NOT NULL
        GROUP BY 1, 2, 3
       ON CONFLICT (owner_id, key_id, period_start) DO UPDATE SET spent_nano = budget_spend.spent_nano + EXCLUDED.spent_nano
       ${PERIOD_RETURNING}`,
      [
        charged.map((slot) => slot.ownerId),
        charged.map((slot) => slot.keyId),
        charged.map((slot) => new Date(slot.slot)),
        charged.map((slot) => slot.costNano.toString()),
      ],
    ),
  );
  return { owners, periods };
}

/**
 * Moves a video task's money in the period of its submit (`window`: its start, null without a
 * period): `reservedDelta` onto (or, negative, off) the reservation and `spentNano` onto the
 * spend, on the owner's lifetime row, the owner's period row and the key's. A release never
 * takes a period's reservation below zero (a period recounted since the submit may not hold it).
 */
export async function moveTaskMoney(
  manager: EntityManager,
  task: { ownerId: string; keyId: string; window: Date | null },
  reservedDelta: bigint,
  spentNano: bigint,
  now: Date,
): Promise<{ owner: OwnerStandingRow | undefined; periods: PeriodRow[] }> {
  const [owner] = returnedRows<OwnerStandingRow>(
    await manager.query(
      `UPDATE quota_owner o SET reserved_nano = o.reserved_nano + $2, spent_nano = o.spent_nano + $3, updated_at = now()
        WHERE o.id = $1 RETURNING ${standingColumns(4)}`,
      [task.ownerId, reservedDelta.toString(), spentNano.toString(), now],
    ),
  );
  const keys = task.window === null ? [task.keyId] : [task.keyId, OWNER_TOTAL];
  const periods = returnedRows<PeriodRow>(
    await manager.query(
      `INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano, reserved_nano)
       SELECT $1, k, coalesce($3::timestamptz, '-infinity'), $5::bigint, greatest($4::bigint, 0) FROM unnest($2::text[]) AS k
       ON CONFLICT (owner_id, key_id, period_start) DO UPDATE
         SET reserved_nano = greatest(budget_spend.reserved_nano + $4, 0), spent_nano = budget_spend.spent_nano + $5
       ${PERIOD_RETURNING}`,
      [task.ownerId, keys, task.window, reservedDelta.toString(), spentNano.toString()],
    ),
  );
  return { owner, periods };
}

/** The owner, locked for a change of its money, with the current period's rows of the owner and one key. */
export async function lockStanding(
  manager: EntityManager,
  ownerId: string,
  keyId: string,
  now: Date,
): Promise<{ owner: OwnerStandingRow | undefined; keyBudgetNano: bigint | null; periods: PeriodRow[] }> {
  const [owner] = returnedRows<OwnerStandingRow>(
    await manager.query(`SELECT ${standingColumns(2)} FROM quota_owner o WHERE o.id = $1 FOR UPDATE`, [ownerId, now]),
  );
  if (!owner) return { owner, keyBudgetNano: null, periods: [] };
  const [key] = returnedRows<{ budget_nano: string | null }>(await manager.query(`SELECT budget_nano FROM api_key WHERE id = $1`, [keyId]));
  const periods = returnedRows<PeriodRow>(
    await manager.query(
      `SELECT ${PERIOD_COLUMNS} FROM budget_spend
        WHERE owner_id = $1 AND key_id IN ('', $2) AND period_start = coalesce($3::timestamptz, '-infinity')`,
      [ownerId, keyId, owner.period_start],
    ),
  );
  return { owner, keyBudgetNano: key?.budget_nano == null ? null : BigInt(key.budget_nano), periods };
}

/**
 * Counts the owner's current period again from its records and open video tasks, for the owner
 * and each of its keys: after its period or time zone changed, the new period's figures are
 * what its calls and tasks since the period's start add up to. Open tasks submitted in the
 * period move into it, so their release comes off the figures that hold them. The caller holds
 * the owner's row lock (lockStanding), so no batch of spend lands in between.
 */
export async function recountPeriod(manager: EntityManager, ownerId: string, now: Date): Promise<void> {
  const [owner] = returnedRows<{ period_start: string; has_period: boolean }>(
    await manager.query(
      `SELECT budget_period_start(budget_period, budget_timezone, $2)::text AS period_start, budget_period IS NOT NULL AS has_period
         FROM quota_owner WHERE id = $1`,
      [ownerId, now],
    ),
  );
  if (!owner) return;
  await manager.query(`DELETE FROM budget_spend WHERE owner_id = $1 AND period_start = $2`, [ownerId, owner.period_start]);
  await manager.query(
    `INSERT INTO budget_spend (owner_id, key_id, period_start, spent_nano, reserved_nano)
     SELECT $1, coalesce(key_id, ''), $2, coalesce(sum(spent), 0), coalesce(sum(reserved), 0) FROM (
         SELECT key_id::text AS key_id, cost_nano AS spent, 0 AS reserved FROM usage_record WHERE owner_id = $1 AND started_at >= $2
         UNION ALL
         SELECT key_id::text, 0, reserved_nano FROM video_task WHERE owner_id = $1 AND settled_at IS NULL AND submitted_at >= $2
       ) AS money
      GROUP BY GROUPING SETS ((key_id), ())
     HAVING key_id IS NOT NULL OR $3::boolean`,
    [ownerId, owner.period_start, owner.has_period],
  );
  await manager.query(`UPDATE video_task SET budget_window = $3 WHERE owner_id = $1 AND settled_at IS NULL AND submitted_at >= $2::timestamptz`, [
    ownerId,
    owner.period_start,
    owner.has_period ? owner.period_start : null,
  ]);
}

/** The owner's and one key's balances after a money statement; undefined where it did not reach them. */
export interface Moved {
  owner: Balance | undefined;
  key: Balance | undefined;
}

export function movedOf(owner: OwnerStandingRow | undefined, keyId: string, periods: readonly PeriodRow[]): Moved {
  if (!owner) return { owner: undefined, key: undefined };
  return { owner: standingOf(owner, periods).balance, key: keyBalanceOf(keyId, owner, null, periods) };
}

/** The owner's balance as read under its lock (lockStanding): a period without a row of its own has spent nothing yet. */
export function lockedOwnerBalance(owner: OwnerStandingRow, periods: readonly PeriodRow[]): Balance {
  return standingOf(owner, periods).balance ?? emptyPeriod(owner, owner.budget_nano === null ? null : BigInt(owner.budget_nano));
}

/** The key's, the same way. */
export function lockedKeyBalance(owner: OwnerStandingRow, keyId: string, budgetNano: bigint | null, periods: readonly PeriodRow[]): Balance {
  return keyBalanceOf(keyId, owner, budgetNano, periods) ?? emptyPeriod(owner, budgetNano);
}

function emptyPeriod(owner: OwnerStandingRow, budgetNano: bigint | null): Balance {
  return {
    budgetNano,
    spentNano: 0n,
    reservedNano: 0n,
    period: owner.budget_period,
    periodStart: owner.period_start === null ? null : millis(owner.period_start),
    resetsAt: owner.period_end === null ? null : millis(owner.period_end),
  };
}

/**
 * Fires the alert thresholds the owners' current periods reached, in the money statement's
 * transaction (docs/operations.md "Budget alerts"); true when any fired, for the caller to
 * have them sent once the transaction is in. No statement for owners without alerts.
 */
export async function fireAlerts(manager: EntityManager, owners: readonly OwnerStandingRow[], periods: readonly PeriodRow[], now: Date): Promise<boolean> {
  const standings: AlertStanding[] = [];
  for (const row of owners) {
    if (row.alerts === null || row.budget_nano === null) continue;
    const { balance, alerts } = standingOf(row, periods);
    if (!balance || !mayFireAlerts({ thresholds: alerts, budgetNano: balance.budgetNano })) continue;
    standings.push({
      ownerId: row.id,
      periodStart: balance.periodStart === null ? -Infinity : new Date(balance.periodStart),
      periodEnd: balance.resetsAt === null ? null : new Date(balance.resetsAt),
      budgetNano: balance.budgetNano!,
      usedNano: balance.spentNano + balance.reservedNano,
      thresholds: alerts,
    });
  }
  if (standings.length === 0) return false;
  return (await fireCrossedAlerts(manager, standings, now)).length > 0;
}
