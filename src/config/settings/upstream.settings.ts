/** Settings of upstream lines (environment, docs/configuration.md). */

export interface LineSettings {
  /** How long a line that refused a connection or timed out is skipped. */
  cooldownMs: number;
  /** Keep-alive sockets per line. */
  connections: number;
}
export const LINE_SETTINGS = Symbol('LINE_SETTINGS');
