/**
 * Numeric settings read from the environment. Unset or empty gives the default; anything else
 * must be a number of the kind asked for, or the start stops naming the variable.
 */

export function numberFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(text)}`);
  return value;
}

/**
 * A count of things per round or per write, or an interval that must not be 0: a whole number,
 * at least 1 (a batch of 0 would write or claim nothing, forever; pings every 0 ms would flood).
 */
export function positiveWholeFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = numberFrom(env, name, fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number of at least 1, got ${JSON.stringify(env[name])}`);
  return value;
}

/** A limit where 0 means none (`MAX_STREAMS`): a whole number, 0 or more. */
export function limitFrom(env: NodeJS.ProcessEnv, name: string): number {
  const value = numberFrom(env, name, 0);
  if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number (0: no limit), got ${JSON.stringify(env[name])}`);
  return value;
}
