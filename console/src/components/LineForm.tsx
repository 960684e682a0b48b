import { useState } from 'preact/hooks';
import { changeUpstream, createUpstream, type UpstreamBody } from '../api';
import { Checks, positiveInteger } from '../problems';
import { UPSTREAM_AUTH_STYLES, type UpstreamView } from '../types';
import { CatalogForm, type CatalogFormProps, IdControl, useCatalogForm } from './CatalogForm';
import { FieldProblem } from './FormProblems';

const FIELDS = ['id', 'base_url', 'api_key', 'auth', 'timeout_ms', 'max_concurrency'] as const;

interface Draft {
  id: string;
  base_url: string;
  api_key: string;
  auth: string;
  timeout_ms: string;
  max_concurrency: string;
}

function draftOf(line: UpstreamView | undefined): Draft {
  return {
    id: line?.id ?? '',
    base_url: line?.base_url ?? '',
    // The key is never shown: empty keeps it.
    api_key: '',
    auth: line?.auth ?? '',
    timeout_ms: line ? String(line.timeout_ms) : '',
    max_concurrency: line?.max_concurrency === undefined ? '' : String(line.max_concurrency),
  };
}

/**
 * A new line, or a change of one (`item` given): sent as a PATCH with the version read, so a
 * change made meanwhile by someone else gives 409 instead of being overwritten. An emptied
 * optional field is sent as null, which restores its default.
 */
export function LineForm({ item: line, onSaved, onCancel, onReload }: CatalogFormProps<UpstreamView>) {
  const editing = line !== undefined;
  const [draft, setDraft] = useState<Draft>(() => draftOf(line));
  const form = useCatalogForm(FIELDS, editing);
  const { id, problems, field } = form;
  const set = (name: keyof Draft) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });

  const save = async () => {
    const checks = new Checks();
    const timeout = checks.take(() => positiveInteger(draft.timeout_ms, 'timeout_ms', 'milliseconds'));
    const concurrency = checks.take(() => positiveInteger(draft.max_concurrency, 'max_concurrency', 'calls at once'));
    const key = draft.api_key.trim();
    if (!line && key === '') checks.add('api_key: give the vendor key, or a ${VAR} reference to an environment variable');
    checks.done();
    if (line) {
      const body: UpstreamBody = {
        base_url: draft.base_url.trim(),
        auth: draft.auth === '' ? null : draft.auth,
        timeout_ms: timeout ?? null,
        max_concurrency: concurrency ?? null,
        ...(key === '' ? {} : { api_key: key }),
      };
      onSaved(await changeUpstream(line.id, line.version, body));
    } else {
      const body: UpstreamBody = {
        id: draft.id.trim(),
        base_url: draft.base_url.trim(),
        api_key: key,
        ...(draft.auth === '' ? {} : { auth: draft.auth }),
        ...(timeout === undefined ? {} : { timeout_ms: timeout }),
        ...(concurrency === undefined ? {} : { max_concurrency: concurrency }),
      };
      const created = await createUpstream(body);
      // A reset also clears the browser's "edited and now invalid" marks on the emptied fields.
      form.ref.current?.reset();
      setDraft(draftOf(undefined));
      onSaved(created);
    }
  };

  return (
    <CatalogForm kind="line" item={line} form={form} save={save} onCancel={onCancel} onReload={onReload}>
      <div class="form-row">
        {!editing && (
          <IdControl kind="line" form={form} value={draft.id} onInput={set('id')}>
            The name models give in their lines, such as <code>line-a</code>.
          </IdControl>
        )}
        <div class="control control-wide">
          <label for={`${id}-base_url`}>Base URL</label>
          <input
            id={`${id}-base_url`}
            ref={form.first}
            type="text"
            inputMode="url"
            required
            autoComplete="off"
            spellcheck={false}
            value={draft.base_url}
            onInput={set('base_url')}
            {...field('base_url', `${id}-base_url-hint`)}
          />
          <p id={`${id}-base_url-hint`} class="hint">
            The vendor's root, http or https, without a path: <code>https://api.vendor.example</code>.
          </p>
          <FieldProblem id={`${id}-base_url-problem`} problems={problems.fields.base_url} />
        </div>
      </div>
      <div class="form-row">
        <div class="control control-wide">
          <label for={`${id}-api_key`}>Vendor key</label>
          <input
            id={`${id}-api_key`}
            type="password"
            required={!editing}
            autoComplete="off"
            spellcheck={false}
            value={draft.api_key}
            onInput={set('api_key')}
            {...field('api_key', editing ? `${id}-api_key-current` : undefined, `${id}-api_key-hint`)}
          />
          {line && (
            <p id={`${id}-api_key-current`} class="hint">
              Leave empty to keep the current key ({keyText(line)}).
            </p>
          )}
          <p id={`${id}-api_key-hint`} class="hint">
            The key itself, stored encrypted (needs GATEWAY_SECRET_KEY on every replica), or a reference such as <code>{'${LINE_A_KEY}'}</code> to an
            environment variable set on every replica. It is never shown again.
          </p>
          <FieldProblem id={`${id}-api_key-problem`} problems={problems.fields.api_key} />
        </div>
      </div>
      <div class="form-row">
        <div class="control">
          <label for={`${id}-auth`}>Auth style</label>
          <select id={`${id}-auth`} value={draft.auth} onChange={set('auth')} {...field('auth', `${id}-auth-hint`)}>
            <option value="">Default of the called interface</option>
            {UPSTREAM_AUTH_STYLES.map((style) => (
              <option key={style} value={style}>
                {style}
              </option>
            ))}
          </select>
          <p id={`${id}-auth-hint`} class="hint">
            How the key is sent to the vendor.
          </p>
          <FieldProblem id={`${id}-auth-problem`} problems={problems.fields.auth} />
        </div>
        <div class="control">
          <label for={`${id}-timeout_ms`}>Timeout (ms)</label>
          <input
            id={`${id}-timeout_ms`}
            type="text"
            inputMode="numeric"
            autoComplete="off"
            value={draft.timeout_ms}
            onInput={set('timeout_ms')}
            {...field('timeout_ms', `${id}-timeout_ms-hint`)}
          />
          <p id={`${id}-timeout_ms-hint`} class="hint">
            No answer headers within this time gives 504. Empty: 600000 (10 minutes).
          </p>
          <FieldProblem id={`${id}-timeout_ms-problem`} problems={problems.fields.timeout_ms} />
        </div>
        <div class="control">
          <label for={`${id}-max_concurrency`}>Max concurrency</label>
          <input
            id={`${id}-max_concurrency`}
            type="text"
            inputMode="numeric"
            autoComplete="off"
            value={draft.max_concurrency}
            onInput={set('max_concurrency')}
            {...field('max_concurrency', `${id}-max_concurrency-hint`)}
          />
          <p id={`${id}-max_concurrency-hint`} class="hint">
            Calls at once on this line, on each replica. Empty: no limit.
          </p>
          <FieldProblem id={`${id}-max_concurrency-problem`} problems={problems.fields.max_concurrency} />
        </div>
      </div>
    </CatalogForm>
  );
}

/** The vendor key as the catalog shows it: its reference, or that it is set and its last four characters. */
export function keyText(line: UpstreamView): string {
  if (line.api_key.reference !== null) return line.api_key.reference;
  if (!line.api_key.set) return 'not set';
  return line.api_key.last4 === null ? 'set' : `set · …${line.api_key.last4}`;
}
