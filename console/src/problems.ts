import { ApiError } from './api';
import { messageOf } from './components/Status';

/**
 * The problems of a refused change, sorted by the field they name. The gateway's 400 messages
 * start with the path of the field (`prices.input_tokens: must be …`, `lines[0]: unknown
 * upstream "x"`) and join several problems with "; "; the console's own checks throw messages
 * of the same form.
 */

/** A field path at the start of a problem: `name`, then `[0]` or `.name` parts, then ": ". */
const PATH = /^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\]|\.[A-Za-z0-9_-]+)*): /;
/** Where one problem ends and the next begins: "; " before another field path. */
const NEXT_PROBLEM = /; (?=[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\]|\.[A-Za-z0-9_-]+)*: )/;

export interface Problems {
  /** Problems by the first segment of their path, for the fields the form has. */
  fields: Record<string, string[]>;
  /** Problems no field of the form takes, shown at the top of the form. */
  general: string[];
  /** A 409 `conflict`: the item changed (or exists) since it was read. */
  conflict: boolean;
}

export const NO_PROBLEMS: Problems = { fields: {}, general: [], conflict: false };

export function problemsOf(error: unknown, fields: readonly string[]): Problems {
  if (error === undefined || error === null) return NO_PROBLEMS;
  if (error instanceof ApiError && error.status === 409) return { fields: {}, general: [messageOf(error)], conflict: true };
  // Only the gateway's 400s and the console's own checks name fields; anything else is said as it is.
  if (error instanceof ApiError && error.status !== 400) return { fields: {}, general: [messageOf(error)], conflict: false };
  const problems: Problems = { fields: {}, general: [], conflict: false };
  for (const problem of messageOf(error).split(NEXT_PROBLEM)) {
    const field = PATH.exec(problem)?.[1];
    if (field !== undefined && fields.includes(field)) (problems.fields[field] ??= []).push(problem);
    else problems.general.push(problem);
  }
  return problems;
}

/**
 * A field's problems by the part they name: `prices.input_tokens: …` under `input_tokens`,
 * `limits.requests_per_minute: …` under `requests_per_minute`; those of the field as a whole under ''.
 */
export function problemsByPart(problems: string[] | undefined, field: string): Record<string, string[]> {
  const parts: Record<string, string[]> = {};
  for (const problem of problems ?? []) {
    const part = problem.startsWith(`${field}.`) ? (/^\.([A-Za-z0-9_-]+):/.exec(problem.slice(field.length))?.[1] ?? '') : '';
    (parts[part] ??= []).push(problem);
  }
  return parts;
}

/**
 * A list field's problems by the item and part they name: `lines[1].weight: …` under `1.weight`,
 * `lines[1]: …` under `1`; those of the list as a whole under ''.
 */
export function problemsByItem(problems: string[] | undefined, field: string): Record<string, string[]> {
  const items: Record<string, string[]> = {};
  for (const problem of problems ?? []) {
    const item = problem.startsWith(`${field}[`) ? /^\[(\d+)\](?:\.([A-Za-z0-9_-]+))?:/.exec(problem.slice(field.length)) : null;
    const key = item ? (item[2] === undefined ? item[1] : `${item[1]}.${item[2]}`) : '';
    (items[key] ??= []).push(problem);
  }
  return items;
}

/** The `prices.<name>` problems' price names, to mark their rows. */
export function priceNamesIn(problems: string[] | undefined): Set<string> {
  return new Set(Object.keys(problemsByPart(problems, 'prices')).filter((name) => name !== ''));
}

/**
 * The console's own checks of a form, collected so that every problem shows at once, joined as
 * the gateway joins its own, then sorted to their fields by `problemsOf`.
 */
export class Checks {
  private readonly problems: string[] = [];

  /** The value `check` gives, or undefined after noting the problem it throws. */
  take<T>(check: () => T): T | undefined {
    try {
      return check();
    } catch (error) {
      this.problems.push(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }

  add(problem: string): void {
    this.problems.push(problem);
  }

  /** Throws every problem noted, if any: the form is not sent. */
  done(): void {
    if (this.problems.length > 0) throw new Error(this.problems.join('; '));
  }
}

/** A whole number from `min` to `max`, or undefined when empty; throws `field: problem` for anything else. */
export function wholeNumber(text: string, field: string, min: number, max: number, problem: string): number | undefined {
  const value = text.trim();
  if (value === '') return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max || !Number.isSafeInteger(Number(value))) throw new Error(`${field}: ${problem}`);
  return Number(value);
}

/** A whole number from 1, or undefined when empty; throws `field: …` for anything else. */
export function positiveInteger(text: string, field: string, what: string): number | undefined {
  return wholeNumber(text, field, 1, Number.MAX_SAFE_INTEGER, `must be a whole number from 1 (${what})`);
}
