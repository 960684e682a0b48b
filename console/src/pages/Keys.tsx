import { Fragment } from 'preact';
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { deleteKey, listKeys, listOwners, renewKey, renewProjectKeys, setKeyBudget, setKeyEnabled, setKeyLimits } from '../api';
import { KeyBudgetSummary, periodText } from '../components/BudgetBar';
import { BudgetInput, budgetInputOf } from '../components/BudgetForm';
import { ConfirmDelete } from '../components/ConfirmDelete';
import { FormActions } from '../components/FormActions';
import { FormProblemsAlert, useFocusFirstProblem } from '../components/FormProblems';
import { KeyState } from '../components/KeyState';
import { LimitsForm, LimitsSummary } from '../components/LimitsFields';
import { ListView } from '../components/ListView';
import { NewKey } from '../components/NewKey';
import { OwnerOptions } from '../components/OwnerOptions';
import { Pager } from '../components/Pager';
import { RenewForm } from '../components/RenewForm';
import { ErrorAlert, Notice } from '../components/Status';
import { FormRow, ScrollTable } from '../components/Table';
import { Time } from '../components/Time';
import { amountFromNano, count, modelsScope, rateLimitsText } from '../format';
import { useAction, useLoad, usePagedList } from '../hooks';
import { problemsOf } from '../problems';
import { href } from '../router';
import type { CreatedKeyView, KeyView, OwnerView } from '../types';
import { CreateKeyForm } from './KeyCreate';

const PAGE_SIZE = 100;

type Mode = 'renew' | 'limits' | 'budget' | 'delete';
type RowMode = { id: string; mode: Mode } | null;
/** A form opened under a key's row: `onDone` with the notice of a change made. */
type RowFormProps = { keyView: KeyView; owner: OwnerView | undefined; onDone: (text: string) => void; onCancel: () => void };

export function KeysPage({ params }: { params: URLSearchParams }) {
  const ownerFilter = params.get('owner') ?? '';
  const owners = useLoad(listOwners, []);
  const keys = usePagedList(ownerFilter, (page) => listKeys({ owner: ownerFilter || undefined, ...page }), PAGE_SIZE);
  const [created, setCreated] = useState<CreatedKeyView | null>(null);
  const [open, setOpen] = useState<RowMode>(null);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const toggle = useAction();
  const filterId = useId();

  const ownerOf = (owner: string) => owners.data?.find((item) => item.id === owner);
  // "Last used" appears when the gateway reports it (`last_used_at` in the list's items).
  const showLastUsed = keys.data?.data.some((key) => key.last_used_at !== undefined) ?? false;
  const columns = showLastUsed ? 11 : 10;
  const changed = (text: string) => {
    setOpen(null);
    setNotice(text);
    keys.reload();
  };

  return (
    <>
      <h1 tabIndex={-1}>Keys</h1>
      {created ? (
        <NewKey created={created} onClose={() => setCreated(null)} />
      ) : (
        <CreateKeyForm
          owners={owners.data}
          ownersError={owners.error}
          defaultOwner={ownerFilter}
          onCreated={(key) => {
            setCreated(key);
            setNotice(undefined);
            keys.reload();
          }}
        />
      )}

      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Keys{ownerFilter && ` of ${ownerFilter}`}</h2>
        <div class="filters form-row">
          <div class="control">
            <label for={filterId}>Owner</label>
            <select
              id={filterId}
              value={ownerFilter}
              onChange={(event) => {
                const owner = event.currentTarget.value;
                location.hash = href('keys', owner === '' ? {} : { owner });
              }}
            >
              <OwnerOptions any="All owners" owners={owners.data} chosen={ownerFilter} />
            </select>
          </div>
        </div>
        {notice && <Notice>{notice}</Notice>}
        <ErrorAlert error={toggle.error} title="The key was not changed." />
        <ListView
          list={keys}
          rows={keys.data?.data}
          what="keys"
          errorTitle="Keys could not be loaded."
          empty={<>No keys{ownerFilter && ` for ${ownerFilter}`}.</>}
          footer={<Pager label="Keys" list={keys} />}
        >
          {(rows) => (
            <ScrollTable labelledBy="keys-heading">
              <thead>
                <tr>
                  <th scope="col">Prefix</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Models</th>
                  <th scope="col">Status</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Own rate limits</th>
                  <th scope="col">Own budget</th>
                  <th scope="col">Source</th>
                  <th scope="col">Created</th>
                  {showLastUsed && <th scope="col">Last used</th>}
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((key) => (
                  <Fragment key={key.id}>
                    <KeyRow
                      keyView={key}
                      showLastUsed={showLastUsed}
                      open={open?.id === key.id ? open.mode : null}
                      busy={toggle.busy}
                      onOpen={(mode) => setOpen(mode === null ? null : { id: key.id, mode })}
                      onToggle={() =>
                        void toggle.run(async () => {
                          const updated = await setKeyEnabled(key.id, !key.enabled);
                          changed(`Key ${updated.prefix} ${updated.enabled ? 'enabled' : 'disabled'}.`);
                        })
                      }
                    />
                    {open?.id === key.id && (
                      <FormRow columns={columns}>
                        {open.mode === 'renew' && <RenewKey keyView={key} kind={ownerOf(key.owner)?.kind} onDone={changed} onCancel={() => setOpen(null)} />}
                        {open.mode === 'limits' && <KeyLimits keyView={key} owner={ownerOf(key.owner)} onDone={changed} onCancel={() => setOpen(null)} />}
                        {open.mode === 'budget' && <KeyBudget keyView={key} owner={ownerOf(key.owner)} onDone={changed} onCancel={() => setOpen(null)} />}
                        {open.mode === 'delete' && <DeleteKey keyView={key} onDone={changed} onCancel={() => setOpen(null)} />}
                      </FormRow>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </ScrollTable>
          )}
        </ListView>
      </section>
    </>
  );
}

function KeyRow({
  keyView: key,
  showLastUsed,
  open,
  busy,
  onOpen,
  onToggle,
}: {
  keyView: KeyView;
  showLastUsed: boolean;
  open: Mode | null;
  busy: boolean;
  onOpen: (mode: Mode | null) => void;
  onToggle: () => void;
}) {
  const name = <span class="visually-hidden"> key {key.prefix}</span>;
  return (
    <tr>
      <th scope="row">
        <code>{key.prefix}</code>
      </th>
      <td>
        <a href={href('owners', { owner: key.owner })}>{key.owner}</a>
      </td>
      <td class="wrap">{modelsScope(key.models)}</td>
      <td>
        <KeyState keyView={key} />
      </td>
      <td>
        <Time iso={key.expires_at} empty="Never" />
      </td>
      <td class="limits-cell">
        <LimitsSummary limits={key.limits} none="None" />
      </td>
      <td>
        <KeyBudgetSummary keyView={key} />
      </td>
      <td>{key.source}</td>
      <td>
        <Time iso={key.created_at} />
      </td>
      {showLastUsed && (
        <td>
          <Time iso={key.last_used_at ?? null} empty="No calls recorded" />
        </td>
      )}
      <td>
        <div class="row-actions">
          <button type="button" class="button-secondary button-small" onClick={onToggle} disabled={busy}>
            {key.enabled ? 'Disable' : 'Enable'}
            {name}
          </button>
          <button
            type="button"
            class="button-secondary button-small"
            aria-expanded={open === 'renew'}
            onClick={() => onOpen(open === 'renew' ? null : 'renew')}
          >
            Renew{name}
          </button>
          <button
            type="button"
            class="button-secondary button-small"
            aria-expanded={open === 'limits'}
            onClick={() => onOpen(open === 'limits' ? null : 'limits')}
          >
            Limits<span class="visually-hidden"> of key {key.prefix}</span>
          </button>
          <button
            type="button"
            class="button-secondary button-small"
            aria-expanded={open === 'budget'}
            onClick={() => onOpen(open === 'budget' ? null : 'budget')}
          >
            Budget<span class="visually-hidden"> of key {key.prefix}</span>
          </button>
          <a class="button button-secondary button-small" href={href('calls', { key: key.id })}>
            Calls{name}
          </a>
          <button
            type="button"
            class="button-danger button-small"
            aria-expanded={open === 'delete'}
            onClick={() => onOpen(open === 'delete' ? null : 'delete')}
          >
            Delete{name}
          </button>
        </div>
      </td>
    </tr>
  );
}

/** A member's key is renewed alone; a project's keys only together, through the project. */
function RenewKey({
  keyView: key,
  kind,
  onDone,
  onCancel,
}: {
  keyView: KeyView;
  kind: OwnerView['kind'] | undefined;
  onDone: (text: string) => void;
  onCancel: () => void;
}) {
  if (kind === 'project') {
    return (
      <RenewForm
        label={`Renew every key of ${key.owner}`}
        submitText={`Renew every key of ${key.owner}`}
        onCancel={onCancel}
        onRenew={async (expiresAt) => {
          const renewed = await renewProjectKeys(key.owner, expiresAt);
          onDone(`${count(renewed.data.length)} ${renewed.data.length === 1 ? 'key' : 'keys'} of ${key.owner} renewed.`);
        }}
      >
        <p>
          Key <code>{key.prefix}</code> belongs to the project {key.owner}: a project's keys are renewed together, so every key of {key.owner} gets this expiry.
        </p>
      </RenewForm>
    );
  }
  return (
    <RenewForm
      label={`Renew key ${key.prefix}`}
      submitText="Renew key"
      onCancel={onCancel}
      onRenew={async (expiresAt) => {
        const renewed = await renewKey(key.id, expiresAt);
        onDone(`Key ${renewed.prefix} renewed.`);
      }}
    >
      <p>
        Key <code>{key.prefix}</code> of {key.owner}.
      </p>
    </RenewForm>
  );
}

/** The key's own limits; its owner's, shared by all its keys, are changed on the owner's page. */
function KeyLimits({ keyView: key, owner, onDone, onCancel }: RowFormProps) {
  return (
    <LimitsForm
      label={`Rate limits of key ${key.prefix}`}
      legend={`Rate limits of key ${key.prefix}`}
      hint={
        <>
          For this key alone; the limits of its owner {key.owner}, shared by all its keys, apply too
          {owner && ` (at present: ${rateLimitsText(owner.limits, 'none')})`}. <a href={href('owners', { owner: key.owner })}>Change the owner's limits</a>.
        </>
      }
      limits={key.limits}
      source={key.source}
      onCancel={onCancel}
      save={async (limits) => {
        const saved = await setKeyLimits(key.id, limits);
        onDone(`Rate limits of key ${saved.prefix} saved: ${rateLimitsText(saved.limits)}.`);
        return saved;
      }}
    />
  );
}

/** The key's own budget, counted in its owner's period and inside its owner's budget; empty clears it. */
function KeyBudget({ keyView: key, owner, onDone, onCancel }: RowFormProps) {
  const id = useId();
  const [value, setValue] = useState(budgetInputOf(key.budget_nano));
  const action = useAction();
  const problems = useMemo(() => problemsOf(action.error, ['budget']), [action.error]);
  const form = useRef<HTMLFormElement>(null);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => input.current?.focus(), []);
  useFocusFirstProblem(form, action.error);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const text = value.trim();
      const saved = await setKeyBudget(key.id, text === '' ? null : text);
      onDone(
        saved.budget_nano === null
          ? `Key ${saved.prefix} has no budget of its own now.`
          : `The budget of key ${saved.prefix} is now ${amountFromNano(saved.budget_nano)}.`,
      );
    });
  };

  return (
    <form ref={form} class="inline-form" onSubmit={submit} aria-label={`Budget of key ${key.prefix}`} noValidate>
      <FormProblemsAlert problems={problems} title="Budget not changed." />
      <div class="form-row">
        <BudgetInput
          id={`${id}-budget`}
          inputRef={input}
          label={`New budget of key ${key.prefix}`}
          hint={`Currency units; empty for none. Counted in the period of ${key.owner}${owner ? ` (${periodText(owner, 'none: for good')})` : ''}, inside its budget.`}
          value={value}
          onInput={setValue}
          problems={problems.fields.budget}
        />
      </div>
      <FormActions busy={action.busy} busyText="Saving…" submitText="Save budget" onCancel={onCancel} />
    </form>
  );
}

function DeleteKey({ keyView: key, onDone, onCancel }: { keyView: KeyView; onDone: (text: string) => void; onCancel: () => void }) {
  return (
    <ConfirmDelete
      kind="key"
      name={key.prefix}
      source={key.source}
      question={
        <>
          Delete key <code>{key.prefix}</code> of {key.owner}?
        </>
      }
      note="Calls with it stop working; its usage records stay."
      onConfirm={async () => {
        const deleted = await deleteKey(key.id);
        onDone(`Key ${deleted.prefix} deleted.`);
      }}
      onCancel={onCancel}
    />
  );
}
