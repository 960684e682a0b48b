import { type RefObject } from 'preact';
import { useEffect } from 'preact/hooks';
import type { Problems } from '../problems';

/** The top of a refused form: what was not saved, the problems no field shows, and where the others are. */
export function FormProblemsAlert({ problems, title }: { problems: Problems; title: string }) {
  const marked = Object.values(problems.fields).reduce((total, list) => total + list.length, 0);
  if (problems.general.length === 0 && marked === 0) return null;
  return (
    <div class="alert alert-error" role="alert">
      <strong>{title} </strong>
      {problems.general.length === 1 && problems.general[0]}
      {problems.general.length > 1 && (
        <ul class="problem-list">
          {problems.general.map((problem) => (
            <li key={problem}>{problem}</li>
          ))}
        </ul>
      )}
      {marked > 0 && ` ${marked === 1 ? 'A field needs' : `${marked} fields need`} a change: see the marked ${marked === 1 ? 'field' : 'fields'} below.`}
    </div>
  );
}

/** A field's problems, beside it; the field names this element in its aria-describedby. */
export function FieldProblem({ id, problems }: { id: string; problems: string[] | undefined }) {
  if (!problems || problems.length === 0) return null;
  return (
    <p id={id} class="field-error">
      {problems.join(' ')}
    </p>
  );
}

/** aria-invalid and aria-describedby of a control or group: its hints and, when refused, its problem. */
export function describedBy(problems: string[] | undefined, problemId: string, ...hints: Array<string | undefined>) {
  const invalid = problems !== undefined && problems.length > 0;
  const ids = [...hints.filter((hint): hint is string => hint !== undefined), ...(invalid ? [problemId] : [])];
  return { 'aria-invalid': invalid ? ('true' as const) : undefined, 'aria-describedby': ids.length > 0 ? ids.join(' ') : undefined };
}

/** After a refused submit, focus moves to the first marked field (a group's first control), so the problem is read with it. */
export function useFocusFirstProblem(form: RefObject<HTMLFormElement | null>, error: unknown) {
  useEffect(() => {
    if (error === undefined || error === null) return;
    const marked = form.current?.querySelector<HTMLElement>('[aria-invalid="true"]');
    const target = marked?.matches('fieldset') ? marked.querySelector<HTMLElement>('input, select, textarea, button') : marked;
    target?.focus();
  }, [error]);
}
