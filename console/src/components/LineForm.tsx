import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { changeUpstream, createUpstream, type UpstreamBody } from '../api';
import { useAction } from '../hooks';
import { Checks, positiveInteger, problemsOf } from '../problems';
import { UPSTREAM_AUTH_STYLES, type UpstreamView } from '../types';
import { describedBy, FieldProblem, FormProblemsAlert, useFocusFirstProblem } from './FormProblems';
import { Conflict, FromFileNote } from './CatalogNotes';

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
 * A new line, or a change of one (`line` given): sent as a PATCH with the version read, so a
 * change made meanwhile by someone else gives 409 instead of being overwritten. An emptied
 * optional field is sent as null, which restores its default.
 */
export function LineForm({
  line,
  onSaved,
  onCancel,
  onReload,
}: {
  line?: UpstreamView;
  onSaved: (line: UpstreamView) => void;
  onCancel?: () => void;
  /** Reads the line again after a 409 and shows the form with its current values. */
  onReload?: () => Promise<void>;
}) {
  const id = useId();
  const editing = line !== undefined;
  const [draft, setDraft] = useState<Draft>(() => draftOf(line));
  const action = useAction();
  const form = useRef<HTMLFormElement>(null);
  const first = useRef<HTMLInputElement>(null);
  const problems = useMemo(() => problemsOf(action.error, FIELDS), [action.error]);
  const set = (name: keyof Draft) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });

  useEffect(() => {
    if (editing) first.current?.focus();
  }, []);
  useFocusFirstProblem(form, action.error);

  const submit = (event: Event) => {
    event.preventDefault();
    const element = event.currentTarget as HTMLFormElement;
    void action.run(async () => {
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
        element.reset();
        setDraft(draftOf(undefined));
        onSaved(created);
      }
    });
  };

  const label = line ? `Edit line ${line.id}` : 'Add a line';
  const field = (name: (typeof FIELDS)[number], ...hints: Array<string | undefined>) => describedBy(problems.fields[name], `${id}-${name}-problem`, ...hints);

  return (
    <form ref={form} onSubmit={submit} aria-label={label} class="catalog-form" noValidate>
      {line?.source === 'config' && <FromFileNote kind="line" />}
      {editing && problems.conflict && onReload ? (
        <Conflict onReload={onReload} />
      ) : (
        <FormProblemsAlert problems={problems} title={editing ? 'Line not saved.' : 'Line not added.'} />
      )}
      <div class="form-row">
        {!editing && (
          <div class="control">
            <label for={`${id}-id`}>Line id</label>
            <input
              id={`${id}-id`}
              type="text"
              required
              autoComplete="off"
              spellcheck={false}
              value={draft.id}
              onInput={set('id')}
              {...field('id', `${id}-id-hint`)}
            />
            <p id={`${id}-id-hint`} class="hint">
              The name models give in their lines, such as <code>line-a</code>. It cannot change later.
            </p>
            <FieldProblem id={`${id}-id-problem`} problems={problems.fields.id} />
          </div>
        )}
        <div class="control control-wide">
          <label for={`${id}-base_url`}>Base URL</label>
          <input
            id={`${id}-base_url`}
            ref={first}
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
      <div class="actions">
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Saving…' : editing ? 'Save line' : 'Add line'}
        </button>
        {onCancel && (
          <button type="button" class="button-secondary" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** The vendor key as the catalog shows it: its reference, or that it is set and its last four characters. */
export function keyText(line: UpstreamView): string {
  if (line.api_key.reference !== null) return line.api_key.reference;
  if (!line.api_key.set) return 'not set';
  return line.api_key.last4 === null ? 'set' : `set · …${line.api_key.last4}`;
}
