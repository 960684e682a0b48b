let pending: Promise<void> | undefined;

/**
 * Resolves in the event loop's next check phase (`setImmediate`), after the I/O callbacks the
 * loop is running now; every caller until then shares one promise and one Immediate. A whole
 * answer is written first and metered and recorded here: the answers that one turn of the loop
 * completes then go out back to back, and their bookkeeping follows together. On the bench's
 * chat JSON that took ~10 µs of CPU off every call (docs/performance-log.md, "Bookkeeping after
 * the turn's answers").
 */
export function nextCheckPhase(): Promise<void> {
  return (pending ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      pending = undefined;
      resolve();
    }),
  ));
}
