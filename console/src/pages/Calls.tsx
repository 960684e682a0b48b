import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { listModels, listOwners, listUsage, type UsageFilters, usageRecord } from '../api';
import { PagedListView } from '../components/ListView';
import { OwnerOptions } from '../components/OwnerOptions';
import { StatusBadge } from '../components/StatusBadge';
import { ErrorAlert, Loading } from '../components/Status';
import { ScrollTable } from '../components/Table';
import { Time } from '../components/Time';
import { UsageDetail } from '../components/UsageDetail';
import { amountFromNano, isoFromLocal, localFromIso, milliseconds } from '../format';
import { useAction, useLoad, usePagedList } from '../hooks';
import { href } from '../router';
import { INTERFACE_NAMES, type UsageRecordView } from '../types';

const PAGE_SIZE = 50;
const FILTERS = ['owner', 'key', 'model', 'interface', 'status', 'from', 'to', 'tag', 'end_user'] as const;

/** The list's filters: the admin API's usage filters, with one tag (`X-Gateway-Tags`) and an end user. */
type CallFilters = UsageFilters & { tag?: string; end_user?: string };

/** The applied filters live in the hash (`#/calls?owner=team-a&status=5xx`), so a filtered list can be linked. */
function filtersOf(params: URLSearchParams): CallFilters {
  const filters: CallFilters = {};
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

export function CallsPage({ params }: { params: URLSearchParams }) {
  const filters = filtersOf(params);
  // The filters alone, so a `request` in the hash neither reloads the list nor turns its page.
  const filterKey = new URLSearchParams(filters as Record<string, string>).toString();
  const list = usePagedList(filterKey, (page) => listUsage({ ...filters, ...page }), PAGE_SIZE);
  const [shown, setShown] = useState<UsageRecordView | null>(null);
  // `#/calls?request=<id>` shows that call, as the lookup does (links from other pages).
  const requested = params.get('request')?.trim() ?? '';
  const linked = useLoad(() => (requested === '' ? Promise.resolve(null) : usageRecord(requested)), [requested]);

  useEffect(() => {
    if (linked.data) setShown(linked.data);
  }, [linked.data]);

  return (
    <>
      <h1 tabIndex={-1}>Calls</h1>
      <Lookup key={requested} initial={requested} onFound={setShown} />
      {requested !== '' && (
        <div aria-busy={linked.loading}>
          {linked.loading && <Loading what={`call ${requested}`} />}
          <ErrorAlert error={linked.error} title={`Call ${requested} not found.`} />
        </div>
      )}
      {shown && <CallDetail record={shown} onClose={() => setShown(null)} />}
      <section aria-labelledby="calls-heading">
        <h2 id="calls-heading">Recent calls</h2>
        <FilterForm key={filterKey} filters={filters} />
        <PagedListView list={list} label="Calls" what="calls" errorTitle="Calls could not be loaded." empty="No calls match these filters.">
          {(records) => <CallTable records={records} shown={shown} onShow={setShown} />}
        </PagedListView>
      </section>
    </>
  );
}

function Lookup({ initial = '', onFound }: { initial?: string; onFound: (record: UsageRecordView) => void }) {
  const id = useId();
  const [requestId, setRequestId] = useState(initial);
  const action = useAction();

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      onFound(await usageRecord(requestId.trim()));
    });
  };

  return (
    <section aria-labelledby={`${id}-heading`} class="panel">
      <h2 id={`${id}-heading`}>Look up a call</h2>
      <form onSubmit={submit} class="form-row">
        <div class="control control-wide">
          <label for={`${id}-request`}>Request id</label>
          <input
            id={`${id}-request`}
            type="text"
            class="mono"
            required
            autoComplete="off"
            spellcheck={false}
            value={requestId}
            onInput={(event) => setRequestId(event.currentTarget.value)}
            aria-describedby={`${id}-hint`}
          />
          <p id={`${id}-hint`} class="hint">
            The <code>X-Request-Id</code> header of the gateway's answer.
          </p>
        </div>
        <div class="control control-button">
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Looking up…' : 'Look up'}
          </button>
        </div>
      </form>
      <ErrorAlert error={action.error} title="Call not found." />
    </section>
  );
}

function CallDetail({ record, onClose }: { record: UsageRecordView; onClose: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [record.request_id]);
  return (
    <section class="panel detail" aria-labelledby="call-detail-heading">
      <div class="detail-head">
        <h2 id="call-detail-heading" ref={heading} tabIndex={-1}>
          Call {record.request_id}
        </h2>
        <button type="button" class="button-secondary button-small" onClick={onClose}>
          Close<span class="visually-hidden"> call detail</span>
        </button>
      </div>
      <ChargebackFields record={record} />
      <UsageDetail record={record} />
    </section>
  );
}

/** What the call carries for chargeback, each value a link to the calls that share it. */
function ChargebackFields({ record }: { record: UsageRecordView }) {
  return (
    <dl class="fields">
      <div class="field">
        <dt>Tags</dt>
        <dd>
          {record.tags.length === 0 ? (
            <span class="muted">none</span>
          ) : (
            record.tags.map((tag, index) => (
              <span key={tag}>
                {index > 0 && ', '}
                <a href={href('calls', { tag })}>
                  <code>{tag}</code>
                </a>
              </span>
            ))
          )}
        </dd>
      </div>
      <div class="field">
        <dt>End user</dt>
        <dd>
          {record.end_user === null ? (
            <span class="muted">none</span>
          ) : (
            <a href={href('calls', { end_user: record.end_user })}>
              <code>{record.end_user}</code>
            </a>
          )}
        </dd>
      </div>
    </dl>
  );
}

function CallTable({ records, shown, onShow }: { records: UsageRecordView[]; shown: UsageRecordView | null; onShow: (record: UsageRecordView) => void }) {
  return (
    <ScrollTable labelledBy="calls-heading">
      <thead>
        <tr>
          <th scope="col">Started</th>
          <th scope="col">Request id</th>
          <th scope="col">Owner</th>
          <th scope="col">Model</th>
          <th scope="col">Interface</th>
          <th scope="col">Status</th>
          <th scope="col" class="number">
            Cost
          </th>
          <th scope="col" class="number">
            Duration
          </th>
        </tr>
      </thead>
      <tbody>
        {records.map((record) => (
          <tr key={record.request_id} class={shown?.request_id === record.request_id ? 'selected' : undefined}>
            <td class="nowrap">
              <Time iso={record.started_at} />
            </td>
            <th scope="row">
              <button type="button" class="link-button mono" onClick={() => onShow(record)} aria-label={`Show call ${record.request_id}`}>
                {record.request_id}
              </button>
            </th>
            <td>{record.owner_id}</td>
            <td>{record.model}</td>
            <td>{record.interface}</td>
            <td>
              <StatusBadge status={record.status} />
              {record.error_code && <span class="muted"> {record.error_code}</span>}
            </td>
            <td class="number">{amountFromNano(record.cost_nano)}</td>
            <td class="number nowrap">{milliseconds(record.duration_ms)}</td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

interface IdFilterProps {
  id: string;
  label: string;
  value: string;
  onInput: (event: { currentTarget: { value: string } }) => void;
  wide?: boolean;
  pattern?: string;
  maxLength?: number;
  /** The hint under the field. */
  children: ComponentChildren;
}

/** A filter field for an id or a tag: typed as it is (no spelling help), with a hint under it. */
function IdFilter({ id, label, value, onInput, wide, pattern, maxLength, children }: IdFilterProps) {
  return (
    <div class={wide ? 'control control-wide' : 'control'}>
      <label for={id}>{label}</label>
      <input
        id={id}
        type="text"
        class="mono"
        autoComplete="off"
        spellcheck={false}
        pattern={pattern}
        maxLength={maxLength}
        value={value}
        onInput={onInput}
        aria-describedby={`${id}-hint`}
      />
      <p id={`${id}-hint`} class="hint">
        {children}
      </p>
    </div>
  );
}

/** The filter fields; applying them writes the hash, which loads the list. */
function FilterForm({ filters }: { filters: CallFilters }) {
  const id = useId();
  const owners = useLoad(listOwners, []);
  const models = useLoad(listModels, []);
  const [draft, setDraft] = useState({
    owner: filters.owner ?? '',
    key: filters.key ?? '',
    model: filters.model ?? '',
    interface: filters.interface ?? '',
    status: filters.status ?? '',
    from: filters.from ? localFromIso(filters.from) : '',
    to: filters.to ? localFromIso(filters.to) : '',
    tag: filters.tag ?? '',
    end_user: filters.end_user ?? '',
  });
  const set = (name: keyof typeof draft) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });

  const apply = (event: Event) => {
    event.preventDefault();
    const values: Record<string, string> = {};
    for (const name of ['owner', 'key', 'model', 'interface', 'status', 'tag', 'end_user'] as const) {
      if (draft[name].trim() !== '') values[name] = draft[name].trim();
    }
    const from = isoFromLocal(draft.from);
    const to = isoFromLocal(draft.to);
    if (from) values.from = from;
    if (to) values.to = to;
    location.hash = href('calls', values);
  };

  return (
    <form class="filters panel" onSubmit={apply} aria-label="Filter calls">
      <div class="form-row">
        <div class="control">
          <label for={`${id}-owner`}>Owner</label>
          <select id={`${id}-owner`} value={draft.owner} onChange={set('owner')}>
            <OwnerOptions any="Any owner" owners={owners.data} chosen={draft.owner} />
          </select>
        </div>
        <div class="control">
          <label for={`${id}-model`}>Model</label>
          <input id={`${id}-model`} type="text" list={`${id}-models`} autoComplete="off" value={draft.model} onInput={set('model')} />
          <datalist id={`${id}-models`}>
            {models.data?.map((model) => (
              <option key={model.id} value={model.id} />
            ))}
          </datalist>
        </div>
        <div class="control">
          <label for={`${id}-interface`}>Interface</label>
          <input id={`${id}-interface`} type="text" list={`${id}-interfaces`} autoComplete="off" value={draft.interface} onInput={set('interface')} />
          <datalist id={`${id}-interfaces`}>
            {INTERFACE_NAMES.map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </div>
        <div class="control control-narrow">
          <label for={`${id}-status`}>Status</label>
          <input
            id={`${id}-status`}
            type="text"
            list={`${id}-statuses`}
            autoComplete="off"
            pattern="[1-5]([0-9][0-9]|xx)"
            value={draft.status}
            onInput={set('status')}
            aria-describedby={`${id}-status-hint`}
          />
          <datalist id={`${id}-statuses`}>
            {['2xx', '4xx', '5xx', '429'].map((value) => (
              <option key={value} value={value} />
            ))}
          </datalist>
          <p id={`${id}-status-hint`} class="hint">
            A status (429) or a class (5xx).
          </p>
        </div>
        <IdFilter id={`${id}-key`} label="Key id" wide value={draft.key} onInput={set('key')}>
          The key's id (a UUID), not its prefix.
        </IdFilter>
        <IdFilter id={`${id}-tag`} label="Tag" pattern="[A-Za-z0-9._:\-]{1,64}" value={draft.tag} onInput={set('tag')}>
          One tag of <code>X-Gateway-Tags</code>, such as app:search.
        </IdFilter>
        <IdFilter id={`${id}-end-user`} label="End user" maxLength={256} value={draft.end_user} onInput={set('end_user')}>
          The body's <code>user</code> (messages: <code>metadata.user_id</code>).
        </IdFilter>
        <div class="control">
          <label for={`${id}-from`}>Started from (your local time)</label>
          <input id={`${id}-from`} type="datetime-local" value={draft.from} onInput={set('from')} />
        </div>
        <div class="control">
          <label for={`${id}-to`}>Started before (your local time)</label>
          <input id={`${id}-to`} type="datetime-local" value={draft.to} onInput={set('to')} />
        </div>
      </div>
      <div class="actions">
        <button type="submit">Apply filters</button>
        <a class="button button-secondary" href={href('calls')}>
          Clear filters
        </a>
      </div>
    </form>
  );
}
