import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { setBudget } from '../api';
import { amountFromNano } from '../format';
import { useAction } from '../hooks';
import type { OwnerView } from '../types';
import { FormActions } from './FormActions';
import { ErrorAlert } from './Status';

/** A new budget for an owner: a decimal sent as a string so the gateway converts it exactly; empty means unlimited. */
export function BudgetForm({ owner, onSaved, onCancel }: { owner: OwnerView; onSaved: (owner: OwnerView) => void; onCancel?: () => void }) {
  const id = useId();
  const [value, setValue] = useState(owner.budget_nano === null ? '' : amountFromNano(owner.budget_nano, false));
  const action = useAction();
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (onCancel) input.current?.focus();
  }, []);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const text = value.trim();
      onSaved(await setBudget(owner.id, text === '' ? null : text));
    });
  };

  return (
    <form class="inline-form" onSubmit={submit} aria-label={`Budget of ${owner.id}`}>
      <div class="form-row">
        <div class="control">
          <label for={`${id}-budget`}>New budget of {owner.id}</label>
          <input
            id={`${id}-budget`}
            ref={input}
            type="text"
            inputMode="decimal"
            autoComplete="off"
            value={value}
            onInput={(event) => setValue(event.currentTarget.value)}
            aria-describedby={`${id}-hint`}
          />
          <p id={`${id}-hint`} class="hint">
            Currency units, such as 50 or 12.5. Leave empty for unlimited. Spent and reserved amounts stay.
          </p>
        </div>
      </div>
      <ErrorAlert error={action.error} title="Budget not changed." />
      <FormActions busy={action.busy} busyText="Saving…" submitText="Save budget" onCancel={onCancel} />
    </form>
  );
}
