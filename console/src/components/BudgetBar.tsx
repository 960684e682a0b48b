import { amountFromNano, percent } from '../format';
import type { OwnerView } from '../types';

/**
 * Spent and reserved against the budget: a drawn bar for the eye (hidden from screen readers)
 * and the same as text beside it.
 */
export function BudgetBar({ owner }: { owner: OwnerView }) {
  if (owner.budget === null) return <span class="muted">Unlimited budget</span>;
  const budget = owner.budget;
  const share = (value: number) => (budget <= 0 ? (value > 0 ? 100 : 0) : Math.min(100, (value / budget) * 100));
  const spentShare = share(owner.spent);
  const reservedShare = Math.min(100 - spentShare, share(owner.reserved));
  const level = spentShare + reservedShare >= 100 ? 'full' : spentShare + reservedShare >= 80 ? 'high' : 'ok';
  return (
    <div class="budget">
      <div class={`budget-bar budget-${level}`} aria-hidden="true">
        <div class="budget-spent" style={{ width: `${spentShare}%` }} />
        <div class="budget-reserved" style={{ width: `${reservedShare}%` }} />
      </div>
      <span class="budget-text">
        {percent(owner.spent, budget)} spent
        {owner.reserved > 0 && `, ${percent(owner.reserved, budget)} reserved`}
        <span class="visually-hidden">
          {' '}
          ({amountFromNano(owner.spent_nano)} of {amountFromNano(owner.budget_nano ?? '0')})
        </span>
      </span>
    </div>
  );
}
