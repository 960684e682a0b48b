import { amountFromNano, percent } from '../format';
import type { BudgetPeriod, KeyView, OwnerView } from '../types';
import { Time } from './Time';

const PERIOD_NAMES: Record<BudgetPeriod, string> = { day: 'Daily', week: 'Weekly (from Monday)', month: 'Monthly' };

/** An owner's budget period and its time zone, "Monthly, Europe/Berlin"; without one, `none`. */
export function periodText(owner: OwnerView, none = 'None'): string {
  return owner.budget_period === null ? none : `${PERIOD_NAMES[owner.budget_period]}, ${owner.budget_timezone ?? 'UTC'}`;
}

/** The span a period's figures cover: "this month", "today"; without a period, "so far". */
export function inPeriod(period: BudgetPeriod | null): string {
  if (period === null) return 'so far';
  return period === 'day' ? 'today' : `this ${period}`;
}

/** A key's own budget (or "—") and, below it, what it spent in its owner's current period. */
export function KeyBudgetSummary({ keyView: key }: { keyView: KeyView }) {
  return (
    <>
      {key.budget_nano === null ? '—' : amountFromNano(key.budget_nano)}
      <span class="cell-sub">
        {amountFromNano(key.spend.spent_nano)} spent {inPeriod(key.spend.period)}
        {key.spend.reserved_nano !== '0' && `, ${amountFromNano(key.spend.reserved_nano)} reserved`}
      </span>
    </>
  );
}

/**
 * Spent and reserved against the budget, of the current period when the owner has one: a drawn
 * bar for the eye (hidden from screen readers) and the same as text beside it; with a period,
 * its amounts and when it resets below.
 */
export function BudgetBar({ owner }: { owner: OwnerView }) {
  const current = owner.current_period;
  return (
    <>
      {owner.budget === null ? <span class="muted">Unlimited budget</span> : <Bar owner={owner} />}
      {current !== null && (
        <span class="budget-period">
          {amountFromNano(current.spent_nano)}
          {owner.budget_nano !== null && ` of ${amountFromNano(owner.budget_nano)}`} {inPeriod(current.period)}
          {current.reserved_nano !== '0' && `, ${amountFromNano(current.reserved_nano)} reserved`}
        </span>
      )}
      {current?.resets_at && (
        <span class="budget-period">
          resets <Time iso={current.resets_at} />
        </span>
      )}
    </>
  );
}

function Bar({ owner }: { owner: OwnerView }) {
  const budget = owner.budget ?? 0;
  const used = owner.current_period ?? owner;
  const share = (value: number) => (budget <= 0 ? (value > 0 ? 100 : 0) : Math.min(100, (value / budget) * 100));
  const spentShare = share(used.spent);
  const reservedShare = Math.min(100 - spentShare, share(used.reserved));
  const level = spentShare + reservedShare >= 100 ? 'full' : spentShare + reservedShare >= 80 ? 'high' : 'ok';
  return (
    <div class="budget">
      <div class={`budget-bar budget-${level}`} aria-hidden="true">
        <div class="budget-spent" style={{ width: `${spentShare}%` }} />
        <div class="budget-reserved" style={{ width: `${reservedShare}%` }} />
      </div>
      <span class="budget-text">
        {percent(used.spent, budget)} spent
        {used.reserved > 0 && `, ${percent(used.reserved, budget)} reserved`}
        {owner.current_period === null && (
          <span class="visually-hidden">
            {' '}
            ({amountFromNano(owner.spent_nano)} of {amountFromNano(owner.budget_nano ?? '0')})
          </span>
        )}
      </span>
    </div>
  );
}
