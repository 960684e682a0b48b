let pending: Promise<void> | undefined;

/**
 * Resolves in the event loop's next check phase (`setImmediate`), after the I/O callbacks the
 * loop is running now; every caller until then shares one promise and one Immediate. A whole
 * answer is written first and metered and recorded here: the answers that one turn of the loop
 * completes then go out back to back, and their bookkeeping follows together, which costs less
 * CPU per call than bookkeeping between the answers (measured: see docs/performance.md).
 */
export function nextCheckPhase(): Promise<void> {
  return (pending ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      pending = undefined;
      resolve();
    }),
  ));
}
