/** Settings of the operator console (environment, docs/configuration.md). */

export interface ConsoleSettings {
  /** How long a console sign-in lasts (`CONSOLE_SESSION_HOURS`, default 12); signing out ends it sooner. */
  sessionTtlMs: number;
}
export const CONSOLE_SETTINGS = Symbol('CONSOLE_SETTINGS');
