import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { catalogModel, deleteModel, deleteUpstream, listCatalogModels, listUpstreams, type ReloadCounts, reloadConfiguration, upstream } from '../api';
import { CatalogSection } from '../components/CatalogSection';
import { keyText, LineForm } from '../components/LineForm';
import { ModelForm } from '../components/ModelForm';
import { count } from '../format';
import { type Loaded, useAction, useLoad } from '../hooks';
import { ErrorAlert, Notice } from '../components/Status';
import { type CatalogModelView, lineItemOf, type ModelLine, type UpstreamView } from '../types';

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
      <ReloadSection
        onReloaded={() => {
          lines.reload();
          models.reload();
        }}
      />
    </>
  );
}

/** The configuration file read again, as SIGHUP does: its items replace theirs, the API's stay. */
function ReloadSection({ onReloaded }: { onReloaded: () => void }) {
  const action = useAction();
  const [applied, setApplied] = useState<ReloadCounts | undefined>(undefined);
  const reload = () =>
    void action.run(async () => {
      setApplied(undefined);
      setApplied(await reloadConfiguration());
      onReloaded();
    });
  return (
    <section class="panel" aria-labelledby="reload-heading">
      <h2 id="reload-heading">Configuration file</h2>
      <p class="hint">
        Items of source <code>config</code> come from the gateway's configuration file. Reading it again applies its lines, models, owners and keys on every
        replica; a file with a problem changes nothing and says why.
      </p>
      <ErrorAlert error={action.error} title="The file was not applied." />
      {applied && (
        <Notice>
          Applied {count(applied.upstreams)} lines, {count(applied.models)} models, {count(applied.owners)} owners and {count(applied.keys)} keys from the file.
        </Notice>
      )}
      <button type="button" class="button-secondary" onClick={reload} disabled={action.busy}>
        {action.busy ? 'Reading…' : 'Read the configuration file again'}
      </button>
    </section>
  );
}

function LinesSection({ lines, models }: { lines: Loaded<UpstreamView[]>; models: CatalogModelView[] | undefined }) {
  const usersOf = (id: string) => models?.filter((model) => model.lines.some((line) => lineItemOf(line).id === id)).map((model) => model.id) ?? [];
  return (
    <CatalogSection
      kind="line"
      list={lines}
      columns={[
        { name: 'Base URL' },
        { name: 'Auth style' },
        { name: 'Timeout', number: true },
        { name: 'Max concurrency', number: true },
        { name: 'Vendor key' },
      ]}
      cells={(line) => (
        <>
          <td>
            <code>{line.base_url}</code>
          </td>
          <td>{line.auth ?? <span class="muted">interface default</span>}</td>
          <td class="number">{count(line.timeout_ms)} ms</td>
          <td class="number">{line.max_concurrency === undefined ? <span class="muted">no limit</span> : count(line.max_concurrency)}</td>
          <td>{line.api_key.reference !== null ? <code>{line.api_key.reference}</code> : keyText(line)}</td>
        </>
      )}
      form={(props) => <LineForm {...props} />}
      read={upstream}
      remove={(line) => deleteUpstream(line.id, line.version)}
      deleteNote="Calls on it finish; new calls no longer use it."
      deleteWarning={(line) => {
        const users = usersOf(line.id);
        return users.length > 0 ? `The models ${users.join(', ')} name this line: the gateway refuses to delete it until none does.` : undefined;
      }}
    />
  );
}

function ModelsSection({ models, lineIds }: { models: Loaded<CatalogModelView[]>; lineIds: string[] | undefined }) {
  return (
    <CatalogSection
      kind="model"
      list={models}
      columns={[{ name: 'Upstream model' }, { name: 'Interfaces' }, { name: 'Lines' }, { name: 'Prices' }]}
      cells={(model) => (
        <>
          <td>
            <code>{model.upstream_model}</code>
          </td>
          <td>{model.interfaces.join(', ')}</td>
          <td>
            <LineOrder lines={model.lines} />
            {model.retry?.attempts !== undefined && (
              <span class="cell-sub">{model.retry.attempts === 1 ? '1 retry' : `${count(model.retry.attempts)} retries`} after every line failed</span>
            )}
          </td>
          <td class="wrap">
            <PricesSummary model={model} />
          </td>
        </>
      )}
      form={(props) => <ModelForm {...props} lineIds={lineIds} />}
      read={catalogModel}
      remove={(model) => deleteModel(model.id, model.version)}
      deleteNote="Calls in flight finish; keys naming it no longer reach it."
    />
  );
}

/**
 * A model's lines in the order they are tried: an arrow for the eye, "then" for a screen reader;
 * each with its weight (`×3`, read as "weight 3") and its own model name where set.
 */
function LineOrder({ lines }: { lines: ModelLine[] }) {
  return (
    <>
      {lines.map(lineItemOf).map((line, index) => (
        <Fragment key={line.id}>
          {index > 0 && (
            <>
              <span aria-hidden="true"> → </span>
              <span class="visually-hidden">, then </span>
            </>
          )}
          {line.id}
          {line.weight !== undefined && (
            <>
              <span aria-hidden="true"> ×{line.weight}</span>
              <span class="visually-hidden"> weight {line.weight}</span>
            </>
          )}
          {line.upstream_model !== undefined && (
            <>
              {' '}
              <span class="muted">as</span> <code>{line.upstream_model}</code>
            </>
          )}
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
