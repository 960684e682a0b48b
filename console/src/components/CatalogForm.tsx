import type { ComponentChildren } from 'preact';
import { useEffect, useId, useMemo, useRef } from 'preact/hooks';
import { useAction } from '../hooks';
import { problemsOf } from '../problems';
import { FormActions } from './FormActions';
import { describedBy, FieldProblem, FormProblemsAlert, useFocusFirstProblem } from './FormProblems';
import { ErrorAlert } from './Status';

/** A line or a model, as the catalog forms read them. */
export interface CatalogItem {
  id: string;
  version: number;
  source: string;
}

/** The props of LineForm and ModelForm: without `item` it adds one, with it it changes that one. */
export interface CatalogFormProps<T> {
  item?: T;
  onSaved: (item: T) => void;
  onCancel?: () => void;
  /** Reads the item again after a 409 and shows the form with its current values. */
  onReload?: () => Promise<void>;
}

/**
 * The state a catalog form keeps besides its draft: the submit's busy flag and refusal sorted to
 * `fields`, and focus on the first field of an opened change or on the first refused one.
 */
export function useCatalogForm<F extends string>(fields: readonly F[], editing: boolean) {
  const id = useId();
  const action = useAction();
  const ref = useRef<HTMLFormElement>(null);
  const first = useRef<HTMLInputElement>(null);
  const problems = useMemo(() => problemsOf(action.error, fields), [action.error]);

  useEffect(() => {
    if (editing) first.current?.focus();
  }, []);
  useFocusFirstProblem(ref, action.error);

  /** A field's aria-invalid and aria-describedby: its hints and, when refused, its problem. */
  const field = (name: F, ...hints: Array<string | undefined>) => describedBy(problems.fields[name], `${id}-${name}-problem`, ...hints);
  return { id, action, ref, first, problems, field };
}

/**
 * The frame of a catalog form: its name, the configuration-file note, the refusal (or the 409
 * offer to reload), and the buttons. `save` runs on submit with the busy flag and error of `form`.
 */
export function CatalogForm({
  kind,
  item,
  form,
  save,
  onCancel,
  onReload,
  children,
}: {
  kind: 'line' | 'model';
  item: CatalogItem | undefined;
  form: Pick<ReturnType<typeof useCatalogForm>, 'ref' | 'action' | 'problems'>;
  save: () => Promise<void>;
  onCancel?: () => void;
  onReload?: () => Promise<void>;
  children: ComponentChildren;
}) {
  const title = kind === 'line' ? 'Line' : 'Model';
  const submit = (event: Event) => {
    event.preventDefault();
    void form.action.run(save);
  };

  return (
    <form ref={form.ref} onSubmit={submit} aria-label={item ? `Edit ${kind} ${item.id}` : `Add a ${kind}`} class="catalog-form" noValidate>
      {item?.source === 'config' && <FromFileNote kind={kind} />}
      {item && form.problems.conflict && onReload ? (
        <Conflict onReload={onReload} />
      ) : (
        <FormProblemsAlert problems={form.problems} title={item ? `${title} not saved.` : `${title} not added.`} />
      )}
      {children}
      <FormActions busy={form.action.busy} busyText="Saving…" submitText={item ? `Save ${kind}` : `Add ${kind}`} onCancel={onCancel} />
    </form>
  );
}

/** The id of an item being added; `children` say what the id names. */
export function IdControl({
  kind,
  form: { id, problems, field },
  value,
  onInput,
  children,
}: {
  kind: 'line' | 'model';
  form: Pick<ReturnType<typeof useCatalogForm<'id'>>, 'id' | 'problems' | 'field'>;
  value: string;
  onInput: (event: { currentTarget: { value: string } }) => void;
  children: ComponentChildren;
}) {
  return (
    <div class="control">
      <label for={`${id}-id`}>{kind === 'line' ? 'Line id' : 'Model id'}</label>
      <input id={`${id}-id`} type="text" required autoComplete="off" spellcheck={false} value={value} onInput={onInput} {...field('id', `${id}-id-hint`)} />
      <p id={`${id}-id-hint`} class="hint">
        {children} It cannot change later.
      </p>
      <FieldProblem id={`${id}-id-problem`} problems={problems.fields.id} />
    </div>
  );
}

/** On an item of the configuration file: the file wins again at every start. */
function FromFileNote({ kind }: { kind: 'line' | 'model' }) {
  return (
    <p class="alert alert-info">
      This {kind} comes from the configuration file: the file's values are applied again at every start (and reload), so a change made here lasts until then.
    </p>
  );
}

/** A 409 on a change: the item's version moved on since the form was opened. */
function Conflict({ onReload }: { onReload: () => Promise<void> }) {
  const action = useAction();
  return (
    <>
      <div class="alert alert-error" role="alert">
        <p>
          <strong>Someone else changed this item since you opened it.</strong> Nothing was saved. Reload the item to see its current values, then make your
          change again.
        </p>
        <button type="button" class="button-secondary" disabled={action.busy} onClick={() => void action.run(onReload)}>
          {action.busy ? 'Reloading…' : 'Reload the item'}
        </button>
      </div>
      <ErrorAlert error={action.error} title="The item could not be read again." />
    </>
  );
}
