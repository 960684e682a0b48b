import { useId, useState } from 'preact/hooks';
import { type AuditFilters, listAudit } from '../api';
import { PagedListView } from '../components/ListView';
import { ScrollTable } from '../components/Table';
import { Time } from '../components/Time';
import { usePagedList } from '../hooks';
import { AUDIT_ACTIONS, AUDIT_ITEM_KINDS, type AuditEntryView } from '../types';

const PAGE_SIZE = 50;

export function AuditPage() {
  const [filters, setFilters] = useState<AuditFilters>({});
  const filterKey = JSON.stringify(filters);
  const list = usePagedList(filterKey, (page) => listAudit({ ...filters, ...page }), PAGE_SIZE);

  return (
    <>
      <h1 tabIndex={-1}>Audit log</h1>
      <p class="lead">Every change of owners, budgets, keys, lines and models, every reload and every console sign-in, newest first.</p>
      <AuditFilterForm onApply={setFilters} />
      <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Changes</h2>
        <PagedListView list={list} label="Audit log" what="changes" errorTitle="The audit log could not be loaded." empty="No changes match these filters.">
          {(entries) => <AuditTable entries={entries} />}
        </PagedListView>
      </section>
    </>
  );
}

function AuditTable({ entries }: { entries: AuditEntryView[] }) {
  return (
    <ScrollTable labelledBy="audit-heading">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Actor</th>
          <th scope="col">Action</th>
          <th scope="col">Item</th>
          <th scope="col">Before and after</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((entry) => (
          <tr key={entry.id}>
            <td class="nowrap">
              <Time iso={entry.at} />
            </td>
            <td>{entry.actor}</td>
            <th scope="row">
              <code>{entry.action}</code>
            </th>
            <td>
              {entry.item_kind}
              {entry.item_id !== null && (
                <>
                  {' '}
                  <code>{entry.item_id}</code>
                </>
              )}
            </td>
            <td class="changes-cell">
              <Changes entry={entry} />
            </td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

function json(value: unknown): string {
  return value === null || value === undefined ? 'none' : JSON.stringify(value, null, 2);
}

function Changes({ entry }: { entry: AuditEntryView }) {
  if (entry.before == null && entry.after == null) return <span class="muted">No item data</span>;
  return (
    <details class="changes">
      <summary>
        Show
        <span class="visually-hidden">
          {' '}
          before and after of {entry.action} {entry.item_id ?? ''}
        </span>
      </summary>
      <div class="changes-grid">
        <div>
          <h3 class="small-heading">Before</h3>
          <pre>{json(entry.before)}</pre>
        </div>
        <div>
          <h3 class="small-heading">After</h3>
          <pre>{json(entry.after)}</pre>
        </div>
      </div>
    </details>
  );
}

function AuditFilterForm({ onApply }: { onApply: (filters: AuditFilters) => void }) {
  const id = useId();
  const [draft, setDraft] = useState({ actor: '', action: '', item_kind: '', item_id: '' });
  const set = (name: keyof typeof draft) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });

  const apply = (event: Event) => {
    event.preventDefault();
    const filters: AuditFilters = {};
    for (const name of ['actor', 'action', 'item_kind', 'item_id'] as const) if (draft[name].trim() !== '') filters[name] = draft[name].trim();
    onApply(filters);
  };

  return (
    <form class="filters panel" onSubmit={apply} aria-label="Filter the audit log">
      <div class="form-row">
        <div class="control">
          <label for={`${id}-actor`}>Actor</label>
          <input id={`${id}-actor`} type="text" autoComplete="off" value={draft.actor} onInput={set('actor')} aria-describedby={`${id}-actor-hint`} />
          <p id={`${id}-actor-hint`} class="hint">
            An admin token's name, <code>SIGHUP</code>, or <code>command line (user)</code>.
          </p>
        </div>
        <div class="control">
          <label for={`${id}-action`}>Action</label>
          <input id={`${id}-action`} type="text" list={`${id}-actions`} autoComplete="off" value={draft.action} onInput={set('action')} />
          <datalist id={`${id}-actions`}>
            {AUDIT_ACTIONS.map((action) => (
              <option key={action} value={action} />
            ))}
          </datalist>
        </div>
        <div class="control">
          <label for={`${id}-kind`}>Item kind</label>
          <select id={`${id}-kind`} value={draft.item_kind} onChange={set('item_kind')}>
            <option value="">Any kind</option>
            {AUDIT_ITEM_KINDS.map((kind) => (
              <option key={kind} value={kind}>
                {kind}
              </option>
            ))}
          </select>
        </div>
        <div class="control">
          <label for={`${id}-item`}>Item id</label>
          <input id={`${id}-item`} type="text" autoComplete="off" value={draft.item_id} onInput={set('item_id')} />
        </div>
      </div>
      <div class="actions">
        <button type="submit">Apply filters</button>
        <button
          type="button"
          class="button-secondary"
          onClick={() => {
            setDraft({ actor: '', action: '', item_kind: '', item_id: '' });
            onApply({});
          }}
        >
          Clear filters
        </button>
      </div>
    </form>
  );
}
