import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { catalogModel, deleteModel, deleteUpstream, listCatalogModels, listUpstreams, upstream } from '../api';
import { keyText, LineForm } from '../components/LineForm';
import { ModelForm } from '../components/ModelForm';
import { Busy, ErrorAlert, Loading, Notice } from '../components/Status';
import { count } from '../format';
import { type Loaded, useAction, useLoad } from '../hooks';
import type { CatalogModelView, UpstreamView } from '../types';

/**
 * The catalog: upstream lines and the models that call them, added, changed and deleted while the
 * gateway runs. Changes carry the version read; a line a model names cannot be deleted.
 */
export function CatalogPage() {
  const lines = useLoad(listUpstreams, []);
  const models = useLoad(listCatalogModels, []);

  return (
    <>
      <h1 tabIndex={-1}>Models and lines</h1>
      <p class="lead">
        Lines are a vendor's address and key; models name the lines that serve them and their prices. A change takes effect on every replica within moments;
        calls in flight finish with the model and prices they started with.
      </p>
      <LinesSection lines={lines} models={models.data} />
      <ModelsSection models={models} lineIds={lines.data?.map((line) => line.id)} />
    </>
  );
}

/** Moves focus to an element found after the next render, such as the row button that opened a closed form. */
function focusSoon(find: () => HTMLElement | null | undefined) {
  setTimeout(() => find()?.focus());
}

function byData(name: string, value: string): HTMLElement | null {
  return document.querySelector<HTMLElement>(`[data-${name}="${CSS.escape(value)}"]`);
}

type RowMode = { id: string; mode: 'delete' } | null;

function LinesSection({ lines, models }: { lines: Loaded<UpstreamView[]>; models: CatalogModelView[] | undefined }) {
  const [editing, setEditing] = useState<UpstreamView | null>(null);
  const [open, setOpen] = useState<RowMode>(null);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [added, setAdded] = useState(0);

  const closeEdit = (id: string) => {
    setEditing(null);
    focusSoon(() => byData('edit-line', id));
  };
  const usersOf = (id: string) => models?.filter((model) => model.lines.includes(id)).map((model) => model.id) ?? [];

  return (
    <section aria-labelledby="catalog-lines-heading">
      <h2 id="catalog-lines-heading">Lines</h2>
      {lines.data?.some((line) => line.source === 'config') && <FromFileHint kind="lines" />}
      <details class="panel disclosure">
        <summary>Add a line</summary>
        <LineForm
          key={added}
          onSaved={(line) => {
            setNotice(`Line ${line.id} added.`);
            setAdded((value) => value + 1);
            lines.reload();
          }}
        />
      </details>
      {notice && <Notice>{notice}</Notice>}
      <Busy loading={lines.loading}>
        {lines.loading && !lines.data && <Loading what="lines" />}
        <ErrorAlert error={lines.error} title="Lines could not be loaded." />
        {lines.data && lines.data.length === 0 && <p class="empty">No lines yet. Add one above.</p>}
        {lines.data && lines.data.length > 0 && (
          <div class="table-scroll" tabIndex={0} role="region" aria-labelledby="catalog-lines-heading">
            <table>
              <thead>
                <tr>
                  <th scope="col">Line</th>
                  <th scope="col">Base URL</th>
                  <th scope="col">Auth style</th>
                  <th scope="col" class="number">
                    Timeout
                  </th>
                  <th scope="col" class="number">
                    Max concurrency
                  </th>
                  <th scope="col">Vendor key</th>
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
                {lines.data.map((line) => (
                  <Fragment key={line.id}>
                    <tr class={editing?.id === line.id ? 'selected' : undefined}>
                      <th scope="row">{line.id}</th>
                      <td>
                        <code>{line.base_url}</code>
                      </td>
                      <td>{line.auth ?? <span class="muted">interface default</span>}</td>
                      <td class="number">{count(line.timeout_ms)} ms</td>
                      <td class="number">{line.max_concurrency === undefined ? <span class="muted">no limit</span> : count(line.max_concurrency)}</td>
                      <td>{line.api_key.reference !== null ? <code>{line.api_key.reference}</code> : keyText(line)}</td>
                      <td>{line.source}</td>
                      <td class="number">{line.version}</td>
                      <td>
                        <div class="row-actions">
                          <button
                            type="button"
                            class="button-secondary button-small"
                            data-edit-line={line.id}
                            aria-expanded={editing?.id === line.id}
                            onClick={() => {
                              setOpen(null);
                              setEditing(editing?.id === line.id ? null : line);
                            }}
                          >
                            Edit<span class="visually-hidden"> line {line.id}</span>
                          </button>
                          <button
                            type="button"
                            class="button-danger button-small"
                            data-delete-line={line.id}
                            aria-expanded={open?.id === line.id}
                            onClick={() => setOpen(open?.id === line.id ? null : { id: line.id, mode: 'delete' })}
                          >
                            Delete<span class="visually-hidden"> line {line.id}</span>
                          </button>
                        </div>
                      </td>
                    </tr>
                    {open?.id === line.id && (
                      <tr class="row-form">
                        <td colSpan={9}>
                          <DeleteItem
                            kind="line"
                            id={line.id}
                            source={line.source}
                            warning={
                              usersOf(line.id).length > 0
                                ? `The models ${usersOf(line.id).join(', ')} name this line: the gateway refuses to delete it until none does.`
                                : undefined
                            }
                            remove={() => deleteUpstream(line.id, line.version)}
                            onDone={() => {
                              setOpen(null);
                              if (editing?.id === line.id) setEditing(null);
                              setNotice(`Line ${line.id} deleted.`);
                              lines.reload();
                            }}
                            onFailed={lines.reload}
                            onCancel={() => {
                              setOpen(null);
                              focusSoon(() => byData('delete-line', line.id));
                            }}
                          />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Busy>
      {editing && (
        <section class="panel detail" aria-labelledby="edit-line-heading">
          <h3 id="edit-line-heading">Edit line {editing.id}</h3>
          <LineForm
            key={`${editing.id}:${editing.version}`}
            line={editing}
            onSaved={(line) => {
              setNotice(`Line ${line.id} saved (version ${line.version}).`);
              closeEdit(line.id);
              lines.reload();
            }}
            onCancel={() => closeEdit(editing.id)}
            onReload={async () => {
              setEditing(await upstream(editing.id));
              lines.reload();
            }}
          />
        </section>
      )}
    </section>
  );
}

function ModelsSection({ models, lineIds }: { models: Loaded<CatalogModelView[]>; lineIds: string[] | undefined }) {
  const [editing, setEditing] = useState<CatalogModelView | null>(null);
  const [open, setOpen] = useState<RowMode>(null);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [added, setAdded] = useState(0);

  const closeEdit = (id: string) => {
    setEditing(null);
    focusSoon(() => byData('edit-model', id));
  };

  return (
    <section aria-labelledby="catalog-models-heading">
      <h2 id="catalog-models-heading">Models</h2>
      {models.data?.some((model) => model.source === 'config') && <FromFileHint kind="models" />}
      <details class="panel disclosure">
        <summary>Add a model</summary>
        <ModelForm
          key={added}
          lineIds={lineIds}
          onSaved={(model) => {
            setNotice(`Model ${model.id} added.`);
            setAdded((value) => value + 1);
            models.reload();
          }}
        />
      </details>
      {notice && <Notice>{notice}</Notice>}
      <Busy loading={models.loading}>
        {models.loading && !models.data && <Loading what="models" />}
        <ErrorAlert error={models.error} title="Models could not be loaded." />
        {models.data && models.data.length === 0 && <p class="empty">No models yet. Add one above.</p>}
        {models.data && models.data.length > 0 && (
          <div class="table-scroll" tabIndex={0} role="region" aria-labelledby="catalog-models-heading">
            <table>
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col">Upstream model</th>
                  <th scope="col">Interfaces</th>
                  <th scope="col">Lines</th>
                  <th scope="col">Prices</th>
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
                {models.data.map((model) => (
                  <Fragment key={model.id}>
                    <tr class={editing?.id === model.id ? 'selected' : undefined}>
                      <th scope="row">{model.id}</th>
                      <td>
                        <code>{model.upstream_model}</code>
                      </td>
                      <td>{model.interfaces.join(', ')}</td>
                      <td>
                        <LineOrder lines={model.lines} />
                      </td>
                      <td class="wrap">
                        <PricesSummary model={model} />
                      </td>
                      <td>{model.source}</td>
                      <td class="number">{model.version}</td>
                      <td>
                        <div class="row-actions">
                          <button
                            type="button"
                            class="button-secondary button-small"
                            data-edit-model={model.id}
                            aria-expanded={editing?.id === model.id}
                            onClick={() => {
                              setOpen(null);
                              setEditing(editing?.id === model.id ? null : model);
                            }}
                          >
                            Edit<span class="visually-hidden"> model {model.id}</span>
                          </button>
                          <button
                            type="button"
                            class="button-danger button-small"
                            data-delete-model={model.id}
                            aria-expanded={open?.id === model.id}
                            onClick={() => setOpen(open?.id === model.id ? null : { id: model.id, mode: 'delete' })}
                          >
                            Delete<span class="visually-hidden"> model {model.id}</span>
                          </button>
                        </div>
                      </td>
                    </tr>
                    {open?.id === model.id && (
                      <tr class="row-form">
                        <td colSpan={8}>
                          <DeleteItem
                            kind="model"
                            id={model.id}
                            source={model.source}
                            remove={() => deleteModel(model.id, model.version)}
                            onDone={() => {
                              setOpen(null);
                              if (editing?.id === model.id) setEditing(null);
                              setNotice(`Model ${model.id} deleted.`);
                              models.reload();
                            }}
                            onFailed={models.reload}
                            onCancel={() => {
                              setOpen(null);
                              focusSoon(() => byData('delete-model', model.id));
                            }}
                          />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Busy>
      {editing && (
        <section class="panel detail" aria-labelledby="edit-model-heading">
          <h3 id="edit-model-heading">Edit model {editing.id}</h3>
          <ModelForm
            key={`${editing.id}:${editing.version}`}
            model={editing}
            lineIds={lineIds}
            onSaved={(model) => {
              setNotice(`Model ${model.id} saved (version ${model.version}).`);
              closeEdit(model.id);
              models.reload();
            }}
            onCancel={() => closeEdit(editing.id)}
            onReload={async () => {
              setEditing(await catalogModel(editing.id));
              models.reload();
            }}
          />
        </section>
      )}
    </section>
  );
}

function FromFileHint({ kind }: { kind: 'lines' | 'models' }) {
  return (
    <p class="hint">
      The {kind} of source <code>config</code> come from the configuration file: its values are applied again at every start (and reload), so a change made here
      lasts until then, and a deleted one comes back.
    </p>
  );
}

/** A model's lines in the order they are tried: an arrow for the eye, "then" for a screen reader. */
function LineOrder({ lines }: { lines: string[] }) {
  return (
    <>
      {lines.map((line, index) => (
        <Fragment key={line}>
          {index > 0 && (
            <>
              <span aria-hidden="true"> → </span>
              <span class="visually-hidden">, then </span>
            </>
          )}
          {line}
        </Fragment>
      ))}
    </>
  );
}

function PricesSummary({ model }: { model: CatalogModelView }) {
  const prices = Object.entries(model.prices ?? {});
  const tiers = model.price_tiers?.length ?? 0;
  return (
    <>
      {prices.length === 0 ? (
        <span class="muted">No prices</span>
      ) : (
        prices.map(([name, amount], index) => (
          <Fragment key={name}>
            {index > 0 && ', '}
            <span class="nowrap">
              {name} <span class="number">{amount}</span>
            </span>
          </Fragment>
        ))
      )}
      {tiers > 0 && <span class="muted"> (+{tiers === 1 ? '1 price tier' : `${tiers} price tiers`})</span>}
    </>
  );
}

/** The confirm step of a delete; a refusal (a line still named by models, a stale version) is shown with the gateway's reason. */
function DeleteItem({
  kind,
  id,
  source,
  warning,
  remove,
  onDone,
  onFailed,
  onCancel,
}: {
  kind: 'line' | 'model';
  id: string;
  source: string;
  warning?: string;
  remove: () => Promise<unknown>;
  onDone: () => void;
  /** After a 409, so the list shows the current version and users. */
  onFailed: () => void;
  onCancel: () => void;
}) {
  const action = useAction();
  const confirm = useRef<HTMLButtonElement>(null);

  useEffect(() => confirm.current?.focus(), []);
  return (
    <div class="confirm" role="group" aria-label={`Delete ${kind} ${id}`}>
      <p>
        <strong>
          Delete {kind} {id}?
        </strong>{' '}
        {kind === 'line' ? 'Calls on it finish; new calls no longer use it.' : 'Calls in flight finish; keys naming it no longer reach it.'}
        {source === 'config' && ' It comes from the configuration file, so it comes back at the next start.'}
      </p>
      {warning && <p class="alert alert-warn">{warning}</p>}
      <ErrorAlert error={action.error} title={`${kind === 'line' ? 'Line' : 'Model'} not deleted.`} />
      <div class="actions">
        <button
          type="button"
          class="button-danger"
          disabled={action.busy}
          ref={confirm}
          onClick={() =>
            void action
              .run(async () => {
                await remove();
                onDone();
              })
              .then((done) => {
                if (!done) onFailed();
              })
          }
        >
          {action.busy ? 'Deleting…' : `Yes, delete the ${kind}`}
        </button>
        <button type="button" class="button-secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
