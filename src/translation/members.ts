/**
 * Copies of an object without its empty members, shared by the protocol adapters. A loop over
 * the keys: `Object.fromEntries(Object.entries(value).filter(...))` builds an array per member
 * and costs several times as much, and a translated stream makes several such copies before its
 * first byte.
 */

/** The members that are not undefined, in their order: bodies compare and serialise without `key: undefined` noise. */
export function definedOnly<T extends object>(value: T): T {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== undefined) copy[key] = member;
  }
  return copy as T;
}

/**
 * `known` with each member of `update` that is not undefined written over it (a copy): usage
 * figures, where each figure an event reports overwrites the one known before (canonical/events.ts).
 */
export function mergeDefined<T extends object>(known: T, update: T): T {
  const merged = { ...known } as Record<string, unknown>;
  for (const key of Object.keys(update)) {
    const member = (update as Record<string, unknown>)[key];
    if (member !== undefined) merged[key] = member;
  }
  return merged as T;
}

/** The members that are neither null nor undefined (an upstream's null says as little as a missing member). */
export function presentOnly(value: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const member = value[key];
    if (member !== undefined && member !== null) copy[key] = member;
  }
  return copy;
}
