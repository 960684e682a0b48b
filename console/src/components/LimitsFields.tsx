import { type ComponentChildren, Fragment, type RefObject } from 'preact';
import { useEffect, useId, useMemo, useRef, useState } from 'preact/hooks';
import { rateLimitParts } from '../format';
import { useAction } from '../hooks';
import { Checks, problemsByPart, problemsOf } from '../problems';
import { RATE_LIMIT_NAMES, type RateLimitName, type RateLimits } from '../types';
import { FormActions } from './FormActions';
import { describedBy, FieldProblem, FormProblemsAlert, useFocusFirstProblem } from './FormProblems';

/**
 * The rate limits of an owner or a key as three inputs, one per limit, each empty when that
 * limit is not set. Shared by the create forms (optional limits) and LimitsForm (a change).
 */

/** The text of each limit's input. */
export type LimitsDraft = Record<RateLimitName, string>;

const LIMIT_FIELDS: Record<RateLimitName, { label: string; hint: string }> = {
  requests_per_minute: { label: 'Requests per minute', hint: 'Calls admitted in any sliding minute.' },
  tokens_per_minute: { label: 'Tokens per minute', hint: 'Input plus output tokens of the calls in any sliding minute.' },
  concurrent_requests: { label: 'Calls at once', hint: 'Calls under way at the same time.' },
};

function draftOf(limits: RateLimits | null): LimitsDraft {
  const text = (value: number | null | undefined) => (value == null ? '' : String(value));
  return {
    requests_per_minute: text(limits?.requests_per_minute),
    tokens_per_minute: text(limits?.tokens_per_minute),
    concurrent_requests: text(limits?.concurrent_requests),
  };
}

/**
 * The limits of a draft, an empty input as null. An input that is not a whole number (digits,
 * or digits grouped by thousands with commas) is noted in `checks` under its field; the gateway
 * judges the range itself (from 1 up to its largest limit).
 */
function limitsOfDraft(draft: LimitsDraft, checks: Checks): RateLimits {
  const limits: RateLimits = { requests_per_minute: null, tokens_per_minute: null, concurrent_requests: null };
  for (const name of RATE_LIMIT_NAMES) {
    const text = draft[name].trim();
    if (text === '') continue;
    if (/^\d+$/.test(text) || /^\d{1,3}(,\d{3})+$/.test(text)) limits[name] = Number(text.replaceAll(',', ''));
    else checks.add(`limits.${name}: must be a whole number, such as 600, or empty for no limit`);
  }
  return limits;
}

/** The state of a form with the limits fieldset: its draft, and the problems of its refused submit (`error`), sorted to the limits. */
export function useLimitsDraft(limits: RateLimits | null, error: unknown) {
  const [draft, setDraft] = useState<LimitsDraft>(() => draftOf(limits));
  const problems = useMemo(() => problemsOf(error, ['limits']), [error]);
  /** Every limit, empty ones as null; throws the problems of the inputs, with those noted before in `checks`. */
  const all = (checks = new Checks()): RateLimits => {
    const given = limitsOfDraft(draft, checks);
    checks.done();
    return given;
  };
  return {
    draft,
    problems,
    setDraft,
    /** The inputs back to `next` (none: empty). */
    reset: (next: RateLimits | null = null) => setDraft(draftOf(next)),
    all,
    /** `{ limits }` for a new owner or key, or nothing when every input is empty. */
    optional: (checks?: Checks): { limits?: RateLimits } => {
      const given = all(checks);
      return RATE_LIMIT_NAMES.some((name) => given[name] !== null) ? { limits: given } : {};
    },
  };
}

export type LimitsDraftState = ReturnType<typeof useLimitsDraft>;

/** The three inputs in a group named by `legend`; each refused limit's problem shows at its input. */
export function LimitsFieldset({
  state,
  legend,
  hint,
  first,
}: {
  state: Pick<LimitsDraftState, 'draft' | 'setDraft' | 'problems'>;
  legend: string;
  hint: ComponentChildren;
  first?: RefObject<HTMLInputElement | null>;
}) {
  const id = useId();
  const parts = problemsByPart(state.problems.fields.limits, 'limits');
  return (
    <fieldset class="limits" {...describedBy(parts[''], `${id}-problem`, `${id}-hint`)}>
      <legend>{legend}</legend>
      <p id={`${id}-hint`} class="hint">
        {hint} Leave a field empty for no such limit.
      </p>
      <div class="form-row">
        {RATE_LIMIT_NAMES.map((name, index) => (
          <div class="control" key={name}>
            <label for={`${id}-${name}`}>{LIMIT_FIELDS[name].label}</label>
            <input
              id={`${id}-${name}`}
              ref={index === 0 ? first : undefined}
              type="text"
              inputMode="numeric"
              autoComplete="off"
              value={state.draft[name]}
              onInput={(event) => {
                const value = event.currentTarget.value;
                state.setDraft((current) => ({ ...current, [name]: value }));
              }}
              {...describedBy(parts[name], `${id}-${name}-problem`, `${id}-${name}-hint`)}
            />
            <p id={`${id}-${name}-hint`} class="hint">
              {LIMIT_FIELDS[name].hint}
            </p>
            <FieldProblem id={`${id}-${name}-problem`} problems={parts[name]} />
          </div>
        ))}
      </div>
      <FieldProblem id={`${id}-problem`} problems={parts['']} />
    </fieldset>
  );
}

/** Rate limits as rateLimitsText writes them, a line breaking only between two limits. */
export function LimitsSummary({ limits, none = 'No rate limits' }: { limits: RateLimits | null; none?: string }) {
  const parts = rateLimitParts(limits);
  if (parts.length === 0) return <>{none}</>;
  return (
    <>
      {parts.map((part, index) => (
        <Fragment key={part}>
          {index > 0 && ' · '}
          <span class="nowrap">{part}</span>
        </Fragment>
      ))}
    </>
  );
}

/**
 * A change of the rate limits of an owner or a key: every limit is sent, an empty one as null
 * (which clears it), so the stored limits become the ones shown. `save` sends them and gives
 * back the item as the gateway stored it.
 */
export function LimitsForm({
  label,
  legend,
  hint,
  limits,
  source,
  save,
  onCancel,
}: {
  /** The form's accessible name, such as "Rate limits of team-a". */
  label: string;
  legend: string;
  hint: ComponentChildren;
  limits: RateLimits | null;
  /** Where the owner or key comes from: the configuration file's limits return at every start. */
  source: 'config' | 'admin';
  save: (limits: RateLimits) => Promise<{ limits: RateLimits | null }>;
  onCancel?: () => void;
}) {
  const action = useAction();
  const state = useLimitsDraft(limits, action.error);
  const form = useRef<HTMLFormElement>(null);
  const first = useRef<HTMLInputElement>(null);

  // Opened on demand (it has a Cancel): the first input takes the focus.
  useEffect(() => {
    if (onCancel) first.current?.focus();
  }, []);
  useFocusFirstProblem(form, action.error);

  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const saved = await save(state.all());
      state.reset(saved.limits);
    });
  };

  return (
    <form ref={form} class="inline-form" onSubmit={submit} aria-label={label} noValidate>
      <FormProblemsAlert problems={state.problems} title="Rate limits not changed." />
      <LimitsFieldset
        state={state}
        legend={legend}
        hint={
          <>
            {hint}
            {source === 'config' && ' It comes from the configuration file, whose limits return at every start (and reload).'}
          </>
        }
        first={first}
      />
      <FormActions busy={action.busy} busyText="Saving…" submitText="Save rate limits" onCancel={onCancel} />
    </form>
  );
}
