import { Fragment, type ComponentChildren, type VNode } from 'preact';
import { useState } from 'preact/hooks';
import type { Loaded } from '../hooks';
import type { CatalogFormProps, CatalogItem } from './CatalogForm';
import { ConfirmDelete } from './ConfirmDelete';
import { ListView } from './ListView';
import { Notice } from './Status';
import { FormRow, ScrollTable } from './Table';

/** Moves focus to an element found after the next render, such as the row button that opened a closed form. */
function focusSoon(selector: string) {
  setTimeout(() => document.querySelector<HTMLElement>(selector)?.focus());
}

/**
 * The lines or the models of the catalog: the add form, the table with each item's Edit and
 * Delete, the confirm step under a row, the change form under the table, and a notice of what
 * went through. `columns` name the cells `cells` gives, between the id and the source.
 */
export function CatalogSection<T extends CatalogItem>({
  kind,
  list,
  columns,
  cells,
  form,
  read,
  remove,
  deleteNote,
  deleteWarning,
}: {
  kind: 'line' | 'model';
  list: Loaded<T[]>;
  columns: Array<{ name: string; number?: boolean }>;
  cells: (item: T) => ComponentChildren;
  form: (props: CatalogFormProps<T>) => VNode;
  /** Reads one item again, to show its current values after a 409. */
  read: (id: string) => Promise<T>;
  remove: (item: T) => Promise<unknown>;
  /** What the delete does to calls. */
  deleteNote: string;
  deleteWarning?: (item: T) => string | undefined;
}) {
  const title = kind === 'line' ? 'Line' : 'Model';
  const heading = `catalog-${kind}s-heading`;
  const [editing, setEditing] = useState<T | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [added, setAdded] = useState(0);

  // `data-edit-line="<id>"` and the like find a row's button again once its form closes.
  const marked = (action: 'edit' | 'delete', id: string) => ({ [`data-${action}-${kind}`]: id });
  const focusButton = (action: 'edit' | 'delete', id: string) => focusSoon(`[data-${action}-${kind}="${CSS.escape(id)}"]`);
  const closeEdit = (id: string) => {
    setEditing(null);
    focusButton('edit', id);
  };

  return (
    <section aria-labelledby={heading}>
      <h2 id={heading}>{`${title}s`}</h2>
      {list.data?.some((item) => item.source === 'config') && <FromFileHint kind={`${kind}s`} />}
      <details class="panel disclosure">
        <summary>{`Add a ${kind}`}</summary>
        {/* A new key after each add: the form starts empty again. */}
        <Fragment key={added}>
          {form({
            onSaved: (item) => {
              setNotice(`${title} ${item.id} added.`);
              setAdded((value) => value + 1);
              list.reload();
            },
          })}
        </Fragment>
      </details>
      {notice && <Notice>{notice}</Notice>}
      <ListView list={list} rows={list.data} what={`${kind}s`} errorTitle={`${title}s could not be loaded.`} empty={`No ${kind}s yet. Add one above.`}>
        {(items) => (
          <ScrollTable labelledBy={heading}>
            <thead>
              <tr>
                <th scope="col">{title}</th>
                {columns.map((column) => (
                  <th key={column.name} scope="col" class={column.number ? 'number' : undefined}>
                    {column.name}
                  </th>
                ))}
                <th scope="col">Source</th>
                <th scope="col" class="number">
                  Version
                </th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((item) => (
                <Fragment key={item.id}>
                  <tr class={editing?.id === item.id ? 'selected' : undefined}>
                    <th scope="row">{item.id}</th>
                    {cells(item)}
                    <td>{item.source}</td>
                    <td class="number">{item.version}</td>
                    <td>
                      <div class="row-actions">
                        <button
                          type="button"
                          class="button-secondary button-small"
                          {...marked('edit', item.id)}
                          aria-expanded={editing?.id === item.id}
                          onClick={() => {
                            setDeleting(null);
                            setEditing(editing?.id === item.id ? null : item);
                          }}
                        >
                          Edit<span class="visually-hidden">{` ${kind} ${item.id}`}</span>
                        </button>
                        <button
                          type="button"
                          class="button-danger button-small"
                          {...marked('delete', item.id)}
                          aria-expanded={deleting === item.id}
                          onClick={() => setDeleting(deleting === item.id ? null : item.id)}
                        >
                          Delete<span class="visually-hidden">{` ${kind} ${item.id}`}</span>
                        </button>
                      </div>
                    </td>
                  </tr>
                  {deleting === item.id && (
                    <FormRow columns={columns.length + 4}>
                      <ConfirmDelete
                        kind={kind}
                        name={item.id}
                        source={item.source}
                        question={`Delete ${kind} ${item.id}?`}
                        note={deleteNote}
                        warning={deleteWarning?.(item)}
                        onConfirm={async () => {
                          await remove(item);
                          setDeleting(null);
                          if (editing?.id === item.id) setEditing(null);
                          setNotice(`${title} ${item.id} deleted.`);
                          list.reload();
                        }}
                        // A refusal may come from a stale version or from new users: the list is read again.
                        onFailed={list.reload}
                        onCancel={() => {
                          setDeleting(null);
                          focusButton('delete', item.id);
                        }}
                      />
                    </FormRow>
                  )}
                </Fragment>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </ListView>
      {editing && (
        <section class="panel detail" aria-labelledby={`edit-${kind}-heading`}>
          <h3 id={`edit-${kind}-heading`}>{`Edit ${kind} ${editing.id}`}</h3>
          <Fragment key={`${editing.id}:${editing.version}`}>
            {form({
              item: editing,
              onSaved: (item) => {
                setNotice(`${title} ${item.id} saved (version ${item.version}).`);
                closeEdit(item.id);
                list.reload();
              },
              onCancel: () => closeEdit(editing.id),
              onReload: async () => {
                setEditing(await read(editing.id));
                list.reload();
              },
            })}
          </Fragment>
        </section>
      )}
    </section>
  );
}

function FromFileHint({ kind }: { kind: string }) {
  return (
    <p class="hint">
      The {kind} of source <code>config</code> come from the configuration file: its values are applied again at every start (and reload), so a change made here
      lasts until then, and a deleted one comes back.
    </p>
  );
}
