/**
 * Ids and time are passed into the pure translation code, so its output is reproducible in
 * tests and nothing in it reads a clock or a random source.
 */
export interface TranslationContext {
  /** New id with a protocol prefix, e.g. `newId('msg')` → `msg_…`. */
  newId(prefix: string): string;
  /** Unix seconds. */
  now(): number;
}
