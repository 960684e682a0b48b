import { Fragment } from 'preact';
import { useId, useMemo, useRef, useState } from 'preact/hooks';
import { createOwner, listOwners } from '../api';
import { BudgetBar, periodText } from '../components/BudgetBar';
import { BUDGET_FIELDS, BudgetForm, BudgetInput, BudgetTermsFields, termsDraftOf, termsOfDraft } from '../components/BudgetForm';
import { FormProblemsAlert, useFocusFirstProblem } from '../components/FormProblems';
import { LimitsFieldset, LimitsSummary, useLimitsDraft } from '../components/LimitsFields';
import { ListView } from '../components/ListView';
import { Notice } from '../components/Status';
import { FormRow, ScrollTable } from '../components/Table';
import { amountFromNano, rateLimitsText } from '../format';
import { useAction, useLoad } from '../hooks';
import { Checks, problemsOf } from '../problems';
import { href } from '../router';
import { OWNER_KINDS, type OwnerKind, type OwnerView } from '../types';
import { OwnerDetail } from './OwnerDetail';

export function OwnersPage({ params }: { params: URLSearchParams }) {
  const selected = params.get('owner') ?? '';
  const owners = useLoad(listOwners, []);
  const [editing, setEditing] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const changed = (text: string) => {
    setEditing(null);
    setNotice(text);
    owners.reload();
  };
  const saved = (owner: OwnerView) =>
    changed(
      `The budget of ${owner.id} is now ${owner.budget_nano === null ? 'unlimited' : amountFromNano(owner.budget_nano)}${
        owner.budget_period === null ? '' : `, starting again each ${owner.budget_period} (${owner.budget_timezone ?? 'UTC'})`
      }.`,
    );
  const limitsSaved = (owner: OwnerView) => changed(`Rate limits of ${owner.id} saved: ${rateLimitsText(owner.limits)}.`);

  const selectedOwner = owners.data?.find((owner) => owner.id === selected);

  return (
    <>
      <h1 tabIndex={-1}>Owners</h1>
      <CreateOwner
        onCreated={(owner) => {
          setNotice(`Owner ${owner.id} created.`);
          owners.reload();
        }}
      />
      <section aria-labelledby="owners-heading">
        <h2 id="owners-heading">Quota owners</h2>
        {notice && <Notice>{notice}</Notice>}
        <ListView list={owners} rows={owners.data} what="owners" errorTitle="Owners could not be loaded." empty="No owners yet. Create one above.">
          {(rows) => (
            <ScrollTable labelledBy="owners-heading">
              <thead>
                <tr>
                  <th scope="col">Owner</th>
                  <th scope="col">Kind</th>
                  <th scope="col" class="number">
                    Budget
                  </th>
                  <th scope="col">Period</th>
                  <th scope="col" class="number">
                    Spent, all time
                  </th>
                  <th scope="col" class="number">
                    Reserved
                  </th>
                  <th scope="col">Use of budget</th>
                  <th scope="col">Rate limits</th>
                  <th scope="col">Source</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((owner) => (
                  <Fragment key={owner.id}>
                    <tr class={owner.id === selected ? 'selected' : undefined}>
                      <th scope="row">
                        <a href={href('owners', { owner: owner.id })} aria-current={owner.id === selected ? 'true' : undefined}>
                          {owner.id}
                        </a>
                      </th>
                      <td>{owner.kind}</td>
                      <td class="number">{owner.budget_nano === null ? 'Unlimited' : amountFromNano(owner.budget_nano)}</td>
                      <td>{periodText(owner)}</td>
                      <td class="number">{amountFromNano(owner.spent_nano)}</td>
                      <td class="number">{amountFromNano(owner.reserved_nano)}</td>
                      <td>
                        <BudgetBar owner={owner} />
                      </td>
                      <td class="limits-cell">
                        <LimitsSummary limits={owner.limits} none="None" />
                      </td>
                      <td>{owner.source}</td>
                      <td>
                        <button
                          type="button"
                          class="button-secondary button-small"
                          aria-expanded={editing === owner.id}
                          onClick={() => setEditing(editing === owner.id ? null : owner.id)}
                        >
                          Change budget<span class="visually-hidden"> of {owner.id}</span>
                        </button>
                      </td>
                    </tr>
                    {editing === owner.id && (
                      <FormRow columns={10}>
                        <BudgetForm owner={owner} onSaved={saved} onCancel={() => setEditing(null)} />
                      </FormRow>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </ScrollTable>
          )}
        </ListView>
      </section>
      {selected !== '' && owners.data && !selectedOwner && (
        <p class="alert alert-error" role="alert">
          There is no owner {selected}.
        </p>
      )}
      {selectedOwner && <OwnerDetail owner={selectedOwner} onChanged={saved} onLimitsChanged={limitsSaved} />}
    </>
  );
}

function CreateOwner({ onCreated }: { onCreated: (owner: OwnerView) => void }) {
  const id = useId();
  const [ownerId, setOwnerId] = useState('');
  const [kind, setKind] = useState<OwnerKind>('project');
  const [budget, setBudget] = useState('');
  const [terms, setTerms] = useState(() => termsDraftOf(null));
  const action = useAction();
  const limits = useLimitsDraft(null, action.error);
  const problems = useMemo(() => problemsOf(action.error, ['limits', ...BUDGET_FIELDS]), [action.error]);
  const form = useRef<HTMLFormElement>(null);
  useFocusFirstProblem(form, action.error);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const checks = new Checks();
      const given = termsOfDraft(terms, checks);
      const ownLimits = limits.optional(checks);
      const owner = await createOwner({ id: ownerId.trim(), kind, ...(budget.trim() === '' ? {} : { budget: budget.trim() }), ...given, ...ownLimits });
      // A reset also clears the browser's "edited and now invalid" mark on the emptied id field.
      form.current?.reset();
      setOwnerId('');
      setKind('project');
      setBudget('');
      setTerms(termsDraftOf(null));
      limits.reset();
      onCreated(owner);
    });
  };

  return (
    <details class="panel disclosure">
      <summary>Create an owner</summary>
      <form ref={form} onSubmit={submit} aria-label="Create an owner">
        <div class="form-row">
          <div class="control">
            <label for={`${id}-id`}>Owner id</label>
            <input
              id={`${id}-id`}
              type="text"
              required
              maxLength={128}
              pattern="[A-Za-z0-9][A-Za-z0-9._:@\-]*"
              autoComplete="off"
              value={ownerId}
              onInput={(event) => setOwnerId(event.currentTarget.value)}
              aria-describedby={`${id}-id-hint`}
            />
            <p id={`${id}-id-hint`} class="hint">
              Letters, digits and . _ : @ -, starting with a letter or digit.
            </p>
          </div>
          <div class="control">
            <label for={`${id}-kind`}>Kind</label>
            <select id={`${id}-kind`} value={kind} onChange={(event) => setKind(event.currentTarget.value as OwnerKind)}>
              {OWNER_KINDS.map((value) => (
                <option key={value} value={value}>
                  {value}
                </option>
              ))}
            </select>
            <p class="hint">A project's keys are renewed together.</p>
          </div>
          <BudgetInput
            id={`${id}-budget`}
            label="Budget (optional)"
            hint="Currency units; empty for unlimited."
            value={budget}
            onInput={setBudget}
            problems={problems.fields.budget}
          />
          <BudgetTermsFields draft={terms} setDraft={setTerms} problems={problems} />
        </div>
        <LimitsFieldset state={limits} legend="Rate limits (optional)" hint="Shared by all the owner's keys together." />
        <FormProblemsAlert problems={problems} title="Owner not created." />
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create owner'}
        </button>
      </form>
    </details>
  );
}
