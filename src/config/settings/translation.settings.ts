/** Settings of translated calls (environment, docs/configuration.md). */

export interface TranslationSettings {
  /** Translated messages streams send `ping` after this long without upstream output. */
  pingIntervalMs: number;
}
export const TRANSLATION_SETTINGS = Symbol('TRANSLATION_SETTINGS');
