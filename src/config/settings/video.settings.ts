/** How video tasks are followed (environment settings, docs/configuration.md "Environment variables"). */
export interface VideoSettings {
  /** How often each replica looks for due tasks; 0 turns the background reconciler off. */
  reconcileIntervalMs: number;
  /** Wait before the first poll of a new task; each further poll waits twice as long as the last. */
  firstPollDelayMs: number;
  /** Longest wait between two polls of one task. */
  maxPollDelayMs: number;
  /** A claimed task is left to its replica this long before another may claim it (a replica that died). */
  claimLeaseMs: number;
  /** Tasks claimed per round. */
  claimBatchSize: number;
  /** A submit that never came back (the replica died on the way) releases its reservation after this long. */
  submitLostAfterMs: number;
}
export const VIDEO_SETTINGS = Symbol('VIDEO_SETTINGS');
