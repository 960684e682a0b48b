/**
 * Yields the source's items, and `ping()` whenever the source has been silent for
 * `intervalMs` (SPEC.md: translated messages streams send `ping` after 15 s without upstream
 * output). The pending read is never abandoned: after a ping it keeps waiting for it.
 */
export async function* withKeepAlive<T>(source: AsyncIterable<T>, intervalMs: number, ping: () => T): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    while (true) {
      if (!pending) {
        pending = iterator.next();
        // Observed here too, so a read that fails after the consumer left is not unhandled.
        pending.catch(() => undefined);
      }
      const silence = new Promise<'silent'>((resolve) => {
        timer = setTimeout(() => resolve('silent'), intervalMs);
      });
      const outcome = await Promise.race([pending, silence]);
      clearTimeout(timer);
      if (outcome === 'silent') {
        yield ping();
        continue;
      }
      pending = undefined;
      if (outcome.done) return;
      yield outcome.value;
    }
  } finally {
    clearTimeout(timer);
    await iterator.return?.();
  }
}
