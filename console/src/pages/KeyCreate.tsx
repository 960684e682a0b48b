import { useId, useMemo, useRef, useState } from 'preact/hooks';
import { createKey, listModels } from '../api';
import { BudgetInput } from '../components/BudgetForm';
import { FormProblemsAlert, useFocusFirstProblem } from '../components/FormProblems';
import { LimitsFieldset, useLimitsDraft } from '../components/LimitsFields';
import { ErrorAlert, Loading } from '../components/Status';
import { isoFromLocal } from '../format';
import { useAction, useLoad } from '../hooks';
import { Checks, problemsOf } from '../problems';
import type { CreatedKeyView, OwnerView } from '../types';

const ALL = '*';

/** A new key: its owner, the models it may call (or every model), an optional expiry, and optional rate limits and budget of its own. */
export function CreateKeyForm({
  owners,
  ownersError,
  defaultOwner,
  onCreated,
}: {
  owners: OwnerView[] | undefined;
  ownersError: unknown;
  defaultOwner: string;
  onCreated: (key: CreatedKeyView) => void;
}) {
  const id = useId();
  const models = useLoad(listModels, []);
  const [owner, setOwner] = useState(defaultOwner);
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [expiry, setExpiry] = useState('');
  const [budget, setBudget] = useState('');
  const action = useAction();
  const limits = useLimitsDraft(null, action.error);
  const problems = useMemo(() => problemsOf(action.error, ['limits', 'budget']), [action.error]);
  const form = useRef<HTMLFormElement>(null);
  const all = chosen.has(ALL);
  useFocusFirstProblem(form, action.error);

  const choose = (model: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(model);
    else next.delete(model);
    setChosen(next);
  };

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const checks = new Checks();
      const scope = all ? [ALL] : [...chosen];
      if (scope.length === 0) checks.add('models: choose at least one model, or all models.');
      const expiresAt = isoFromLocal(expiry);
      if (expiry !== '' && expiresAt === undefined) checks.add('expires_at: not a date and time.');
      const ownLimits = limits.optional(checks);
      const created = await createKey({
        owner,
        models: scope,
        ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
        ...(budget.trim() === '' ? {} : { budget: budget.trim() }),
        ...ownLimits,
      });
      setChosen(new Set());
      setExpiry('');
      setBudget('');
      limits.reset();
      onCreated(created);
    });
  };

  return (
    <details class="panel disclosure">
      <summary>Create a key</summary>
      <form ref={form} onSubmit={submit} aria-label="Create a key">
        <div class="form-row">
          <div class="control">
            <label for={`${id}-owner`}>Owner</label>
            <select id={`${id}-owner`} required value={owner} onChange={(event) => setOwner(event.currentTarget.value)}>
              <option value="">Choose an owner</option>
              {owners?.map((item) => (
                <option key={item.id} value={item.id}>
                  {item.id} ({item.kind})
                </option>
              ))}
            </select>
            {!owners && !ownersError && <p class="hint">Loading owners…</p>}
            <ErrorAlert error={ownersError} title="Owners could not be loaded." />
          </div>
          <div class="control">
            <label for={`${id}-expiry`}>Expires (optional, your local time)</label>
            <input
              id={`${id}-expiry`}
              type="datetime-local"
              value={expiry}
              onInput={(event) => setExpiry(event.currentTarget.value)}
              aria-describedby={`${id}-expiry-hint`}
            />
            <p id={`${id}-expiry-hint`} class="hint">
              Empty: the key never expires.
            </p>
          </div>
          <BudgetInput
            id={`${id}-budget`}
            label="Budget (optional)"
            hint="Currency units, counted in its owner's period and inside its owner's budget; empty: none."
            value={budget}
            onInput={setBudget}
            problems={problems.fields.budget}
          />
        </div>
        <fieldset class="models" aria-busy={models.loading}>
          <legend>Models the key may use</legend>
          <div class="checks">
            <div class="check">
              <input id={`${id}-all`} type="checkbox" checked={all} onChange={(event) => choose(ALL, event.currentTarget.checked)} />
              <label for={`${id}-all`}>
                All models (<code>*</code>), including those added later
              </label>
            </div>
            {models.data?.map((model, index) => (
              <div class="check" key={model.id}>
                <input
                  id={`${id}-model-${index}`}
                  type="checkbox"
                  checked={all || chosen.has(model.id)}
                  disabled={all}
                  onChange={(event) => choose(model.id, event.currentTarget.checked)}
                />
                <label for={`${id}-model-${index}`}>{model.id}</label>
              </div>
            ))}
          </div>
          {models.loading && !models.data && <Loading what="models" />}
          <ErrorAlert error={models.error} title="The models could not be loaded; All models is still possible." />
          {models.data && models.data.length === 0 && <p class="hint">The catalog has no models yet.</p>}
        </fieldset>
        <LimitsFieldset state={limits} legend="Rate limits of this key (optional)" hint="For this key alone; its owner's limits apply too." />
        <FormProblemsAlert problems={problems} title="Key not created." />
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
    </details>
  );
}
