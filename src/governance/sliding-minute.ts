/** One minute in milliseconds: the window of every per-minute limit. */
export const MINUTE_MS = 60_000;

/** The minute (since the epoch) that `at` falls in: the key under which counts are kept and shared. */
export function minuteOf(at: number): number {
  return Math.floor(at / MINUTE_MS);
}

/**
 * Counts of one kind (requests or tokens) for the current and the previous minute, read as a
 * sliding minute: the current minute's count plus the previous minute's, weighted by the part of
 * the previous minute still inside the last 60 s. A fixed window would let a client spend twice
 * its limit across a minute's boundary; a log of every call would cost memory per call.
 */
export interface MinuteCounts {
  /** The minute `current` belongs to. */
  minute: number;
  current: number;
  previous: number;
}

/** The sliding minute's count at `at` (counts of `at`'s minute and the one before). */
export function slidingCount(counts: MinuteCounts, at: number): number {
  const elapsed = (at - counts.minute * MINUTE_MS) / MINUTE_MS;
  return counts.previous * (1 - elapsed) + counts.current;
}

/**
 * Milliseconds from `at` until the sliding count is at most `allowed`, if nothing more is
 * counted meanwhile (counts of `at`'s minute and the one before). 0 when it is already.
 */
export function waitUntilAtMost(counts: MinuteCounts, at: number, allowed: number): number {
  if (slidingCount(counts, at) <= allowed) return 0;
  const start = counts.minute * MINUTE_MS;
  if (counts.current <= allowed) {
    // The previous minute's share has to fade: previous * (1 - f) + current <= allowed.
    return Math.max(0, Math.ceil(start + MINUTE_MS * (1 - (allowed - counts.current) / counts.previous) - at));
  }
  // Not within this minute: in the next one, this minute's count is the fading share.
  const next = start + MINUTE_MS;
  return Math.ceil(next + MINUTE_MS * Math.max(0, 1 - allowed / counts.current) - at);
}
