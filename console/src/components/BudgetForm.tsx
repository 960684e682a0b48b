import type { Ref } from 'preact';
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { type BudgetTerms, setBudget } from '../api';
import { amountFromNano } from '../format';
import { useAction } from '../hooks';
import { Checks, type Problems, problemsOf } from '../problems';
import type { BudgetPeriod, OwnerView } from '../types';
import { FormActions } from './FormActions';
import { describedBy, FieldProblem, FormProblemsAlert, useFocusFirstProblem } from './FormProblems';

/** The fields of an owner's budget, by the names the gateway's problems start with. */
export const BUDGET_FIELDS = ['budget', 'budget_period', 'budget_timezone', 'alerts'] as const;

/** A stored budget as its input shows it: exact, without thousands separators; none: empty. */
export function budgetInputOf(nano: string | null): string {
  return nano === null ? '' : amountFromNano(nano, false);
}

interface TextControlProps {
  id: string;
  label: string;
  hint: string;
  value: string;
  onInput: (value: string) => void;
  problems: string[] | undefined;
  inputRef?: Ref<HTMLInputElement>;
  inputMode?: 'text' | 'decimal';
  placeholder?: string;
}

/** A labelled text input with its hint and, when refused, its problems beside it. */
function TextControl({ id, label, hint, value, onInput, problems, inputRef, inputMode = 'text', placeholder }: TextControlProps) {
  return (
    <div class="control">
      <label for={id}>{label}</label>
      <input
        id={id}
        ref={inputRef}
        type="text"
        inputMode={inputMode}
        autoComplete="off"
        placeholder={placeholder}
        value={value}
        onInput={(event) => onInput(event.currentTarget.value)}
        {...describedBy(problems, `${id}-problem`, `${id}-hint`)}
      />
      <p id={`${id}-hint`} class="hint">
        {hint}
      </p>
      <FieldProblem id={`${id}-problem`} problems={problems} />
    </div>
  );
}

/** A budget's input: a decimal in currency units; its problems (`budget: …`) beside it. */
export function BudgetInput(props: Omit<TextControlProps, 'inputMode' | 'placeholder'>) {
  return <TextControl {...props} inputMode="decimal" />;
}

/** The text of the period, time zone and alerts inputs. */
export interface TermsDraft {
  period: BudgetPeriod | '';
  timezone: string;
  alerts: string;
}

export function termsDraftOf(owner: OwnerView | null): TermsDraft {
  return { period: owner?.budget_period ?? '', timezone: owner?.budget_timezone ?? '', alerts: owner?.alerts.join(', ') ?? '' };
}

/**
 * The terms of a draft as the admin API takes them, an empty input as null. Alerts are whole
 * per cents (a % sign allowed) between commas or spaces; the gateway judges their range.
 */
export function termsOfDraft(draft: TermsDraft, checks: Checks): Required<BudgetTerms> {
  const parts = draft.alerts.split(/[\s,;]+/).filter((part) => part !== '');
  if (parts.some((part) => !/^\d+%?$/.test(part))) checks.add('alerts: must be whole per cents between commas, such as 50, 80, 100');
  const timezone = draft.timezone.trim();
  return {
    budget_period: draft.period === '' ? null : draft.period,
    budget_timezone: timezone === '' ? null : timezone,
    alerts: parts.length === 0 ? null : parts.map((part) => Number.parseInt(part, 10)),
  };
}

/** The period, time zone and alerts of a budget, as three controls of the caller's form row. */
export function BudgetTermsFields({
  draft,
  setDraft,
  problems,
}: {
  draft: TermsDraft;
  setDraft: (change: (current: TermsDraft) => TermsDraft) => void;
  problems: Problems;
}) {
  const id = useId();
  return (
    <>
      <div class="control">
        <label for={`${id}-period`}>Budget period</label>
        <select
          id={`${id}-period`}
          value={draft.period}
          onChange={(event) => {
            const period = event.currentTarget.value as TermsDraft['period'];
            // A time zone only goes with a period.
            setDraft((current) => ({ ...current, period, timezone: period === '' ? '' : current.timezone }));
          }}
          {...describedBy(problems.fields.budget_period, `${id}-period-problem`, `${id}-period-hint`)}
        >
          <option value="">None: the budget is for good</option>
          <option value="day">Day</option>
          <option value="week">Week (from Monday)</option>
          <option value="month">Month</option>
        </select>
        <p id={`${id}-period-hint`} class="hint">
          The budget starts again each period.
        </p>
        <FieldProblem id={`${id}-period-problem`} problems={problems.fields.budget_period} />
      </div>
      <TextControl
        id={`${id}-timezone`}
        label="Time zone"
        hint="IANA name, e.g. Europe/Berlin; empty: UTC."
        value={draft.timezone}
        onInput={(timezone) => setDraft((current) => ({ ...current, timezone }))}
        problems={problems.fields.budget_timezone}
      />
      <TextControl
        id={`${id}-alerts`}
        label="Alerts (% of the budget)"
        hint="Such as 50, 80, 100: each fires once a period. Empty: none."
        placeholder="50, 80, 100"
        value={draft.alerts}
        onInput={(alerts) => setDraft((current) => ({ ...current, alerts }))}
        problems={problems.fields.alerts}
      />
    </>
  );
}

/** The terms that differ from the owner's: a change sends only those, so the others stay as stored. */
function changedTerms(owner: OwnerView, terms: Required<BudgetTerms>): BudgetTerms {
  const change: BudgetTerms = {};
  if (terms.budget_period !== owner.budget_period) change.budget_period = terms.budget_period;
  if (terms.budget_timezone !== owner.budget_timezone) change.budget_timezone = terms.budget_timezone;
  if ((terms.alerts ?? []).join() !== owner.alerts.join()) change.alerts = terms.alerts;
  return change;
}

/**
 * A new budget for an owner, with its period, time zone and alerts: the budget is a decimal sent
 * as a string so the gateway converts it exactly; empty means unlimited.
 */
export function BudgetForm({ owner, onSaved, onCancel }: { owner: OwnerView; onSaved: (owner: OwnerView) => void; onCancel?: () => void }) {
  const id = useId();
  const [value, setValue] = useState(budgetInputOf(owner.budget_nano));
  const [draft, setDraft] = useState(() => termsDraftOf(owner));
  const action = useAction();
  const problems = useMemo(() => problemsOf(action.error, BUDGET_FIELDS), [action.error]);
  const form = useRef<HTMLFormElement>(null);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (onCancel) input.current?.focus();
  }, []);
  useFocusFirstProblem(form, action.error);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const checks = new Checks();
      const terms = termsOfDraft(draft, checks);
      checks.done();
      const text = value.trim();
      const budget = text === '' ? null : text;
      const change = changedTerms(owner, terms);
      // The budget goes too when it changed, or when nothing else did (Save sets it again).
      const budgetChanged = budget === null ? owner.budget !== null : Number(budget) !== owner.budget;
      const saved = await setBudget(owner.id, budgetChanged || Object.keys(change).length === 0 ? { budget, ...change } : change);
      setValue(budgetInputOf(saved.budget_nano));
      setDraft(termsDraftOf(saved));
      onSaved(saved);
    });
  };

  return (
    <form ref={form} class="inline-form" onSubmit={submit} aria-label={`Budget of ${owner.id}`} noValidate>
      <FormProblemsAlert problems={problems} title="Budget not changed." />
      <div class="form-row">
        <BudgetInput
          id={`${id}-budget`}
          inputRef={input}
          label={`New budget of ${owner.id}`}
          hint="Currency units, such as 50 or 12.5. Leave empty for unlimited. Spent and reserved amounts stay."
          value={value}
          onInput={setValue}
          problems={problems.fields.budget}
        />
        <BudgetTermsFields draft={draft} setDraft={setDraft} problems={problems} />
      </div>
      <FormActions busy={action.busy} busyText="Saving…" submitText="Save budget" onCancel={onCancel} />
    </form>
  );
}
