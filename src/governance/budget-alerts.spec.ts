import type { EntityManager } from 'typeorm';
import { AlertStanding, alertEventOf, crossedThresholds, fireCrossedAlerts, mayFireAlerts, storedAlertOf } from './budget-alerts';

const UNIT = 1_000_000_000n;
const NOW = new Date('2026-03-14T09:26:53.589Z');
const MARCH = { start: new Date('2026-03-01T00:00:00.000Z'), end: new Date('2026-04-01T00:00:00.000Z') };

function standing(used: bigint, fields: Partial<AlertStanding> = {}): AlertStanding {
  return { ownerId: 'team-a', periodStart: MARCH.start, periodEnd: MARCH.end, budgetNano: 100n * UNIT, usedNano: used, thresholds: [50, 80, 100], ...fields };
}

/** A transaction that records its statements; the alert insert answers with the ids `inserted` keeps of those sent. */
function fakeManager(inserted: (ids: string[]) => string[] = (ids) => ids) {
  const statements: Array<{ text: string; parameters: unknown[] }> = [];
  const query = async (text: string, parameters: unknown[]) => {
    statements.push({ text, parameters });
    if (!text.includes('INSERT INTO budget_alert')) return [];
    return inserted(parameters[0] as string[]).map((id) => ({ id }));
  };
  return { statements, manager: { query } as unknown as EntityManager };
}

describe('crossedThresholds', () => {
  it('gives the thresholds the used amount reached, the per cent itself included', () => {
    expect(crossedThresholds(standing(85n * UNIT))).toEqual([50, 80]);
    expect(crossedThresholds(standing(80n * UNIT))).toEqual([50, 80]);
    expect(crossedThresholds(standing(80n * UNIT - 1n))).toEqual([50]);
    expect(crossedThresholds(standing(130n * UNIT))).toEqual([50, 80, 100]);
  });

  it('gives each threshold once, however often the owner lists it', () => {
    expect(crossedThresholds(standing(60n * UNIT, { thresholds: [50, 50, 90] }))).toEqual([50]);
  });

  it('gives nothing without a budget or without thresholds', () => {
    expect(crossedThresholds(standing(85n * UNIT, { budgetNano: 0n }))).toEqual([]);
    expect(crossedThresholds(standing(85n * UNIT, { thresholds: [] }))).toEqual([]);
  });
});

describe('mayFireAlerts', () => {
  it('is true only for an owner with thresholds and a budget above 0', () => {
    expect(mayFireAlerts({ thresholds: [80], budgetNano: 1n })).toBe(true);
    expect(mayFireAlerts({ thresholds: [80], budgetNano: null })).toBe(false);
    expect(mayFireAlerts({ thresholds: [80], budgetNano: 0n })).toBe(false);
    expect(mayFireAlerts({ thresholds: [], budgetNano: UNIT })).toBe(false);
    expect(mayFireAlerts({ thresholds: null, budgetNano: UNIT })).toBe(false);
  });
});

describe('fireCrossedAlerts', () => {
  it('inserts every crossed threshold of every standing in one statement, and audits what fired in one more', async () => {
    const { statements, manager } = fakeManager();
    const lifetime = standing(90n * UNIT, { ownerId: 'team-b', periodStart: -Infinity, periodEnd: null, thresholds: [90] });

    const fired = await fireCrossedAlerts(manager, [standing(85n * UNIT), lifetime], NOW);

    expect(fired.map((alert) => [alert.ownerId, alert.threshold])).toEqual([
      ['team-a', 50],
      ['team-a', 80],
      ['team-b', 90],
    ]);
    expect(statements).toHaveLength(2);
    const [insert, audit] = statements;
    expect(insert.text).toContain('ON CONFLICT (owner_id, period_start, threshold) DO NOTHING');
    expect(insert.parameters.slice(1)).toEqual([
      ['team-a', 'team-a', 'team-b'],
      [MARCH.start.toISOString(), MARCH.start.toISOString(), '-infinity'],
      [MARCH.end.toISOString(), MARCH.end.toISOString(), null],
      [50, 80, 90],
      ['100000000000', '100000000000', '100000000000'],
      ['85000000000', '85000000000', '90000000000'],
      NOW,
    ]);
    expect(audit.parameters).toEqual(['gateway', ['team-a', 'team-a', 'team-b'], fired.map((alert) => JSON.stringify(alertEventOf(alert)))]);
  });

  it('returns and audits only the thresholds the statement inserted: those that fired before in the period are left out', async () => {
    const { statements, manager } = fakeManager((ids) => ids.slice(1));

    const fired = await fireCrossedAlerts(manager, [standing(85n * UNIT)], NOW);

    expect(fired.map((alert) => alert.threshold)).toEqual([80]);
    expect(statements[1].parameters[2]).toEqual([JSON.stringify(alertEventOf(fired[0]))]);
  });

  it('writes nothing when no threshold was crossed, or none fired anew', async () => {
    const below = fakeManager();
    expect(await fireCrossedAlerts(below.manager, [standing(10n * UNIT)], NOW)).toEqual([]);
    expect(below.statements).toHaveLength(0);

    const firedBefore = fakeManager(() => []);
    expect(await fireCrossedAlerts(firedBefore.manager, [standing(85n * UNIT)], NOW)).toEqual([]);
    expect(firedBefore.statements).toHaveLength(1);
  });
});

describe('alertEventOf', () => {
  it('shapes the event with amounts in currency units and times in ISO 8601', () => {
    const [alert] = storedAlertsOf({ period_start: MARCH.start.toISOString(), period_end: MARCH.end.toISOString() });

    expect(alertEventOf(alert)).toEqual({
      id: '3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21',
      type: 'budget.alert',
      owner_id: 'team-a',
      threshold: 80,
      period: { start: '2026-03-01T00:00:00.000Z', end: '2026-04-01T00:00:00.000Z' },
      budget: 100,
      used: 85.000000001,
      fired_at: NOW.toISOString(),
    });
  });

  it('gives a lifetime budget no period start or end', () => {
    const [alert] = storedAlertsOf({ period_start: null, period_end: null });

    expect(alertEventOf(alert).period).toEqual({ start: null, end: null });
  });
});

function storedAlertsOf(period: { period_start: string | null; period_end: string | null }) {
  return [
    storedAlertOf({
      id: '3f1c2a9e-4b7d-4e2a-9c61-0d5e8f7a6b21',
      owner_id: 'team-a',
      threshold: 80,
      budget_nano: '100000000000',
      used_nano: '85000000001',
      fired_at: NOW.toISOString(),
      delivered_at: null,
      attempts: 0,
      next_attempt_at: NOW.toISOString(),
      last_error: null,
      ...period,
    }),
  ];
}
