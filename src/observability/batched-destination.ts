import type { DestinationStream } from 'pino';

/**
 * What BatchedDestination hands its chunks to: pino's writer (sonic-boom) in its `buffer`
 * content mode, which writes the bytes it is given as they are.
 */
export interface ChunkWriter {
  write(chunk: Buffer): unknown;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** Lines are passed on once the next one would not fit in this many bytes... */
const CHUNK_BYTES = 64 * 1024;
/** ...or after this long. */
const FLUSH_MS = 1_000;
/** The most bytes one UTF-16 code unit takes in UTF-8. */
const MAX_UTF8_PER_UNIT = 3;

/** Destinations whose waiting lines are written when the process exits (one `exit` listener for all). */
const destinations = new Set<BatchedDestination>();
let exitListening = false;

/**
 * The JSON log's way to standard output: lines are encoded into a 64 KiB buffer as they come
 * (about 140 call lines) and the writer gets the buffer when the next line would not fit, or
 * once a second. The writer is pino's synchronous one: a write per 64 KiB costs little, and
 * nothing is ever in flight, so what waits when the process exits is written, in order. (pino's
 * asynchronous writer, in 4 KiB chunks, goes through libuv's thread pool per write, a visible
 * share of a call's CPU at full load in `bench:profile`, and a write still in the pool when the
 * process exits can be lost.) Lines wait as bytes, not as the strings pino hands over: a call
 * line is a rope of some forty pieces until something flattens it, and a few hundred of them
 * waiting would be copied by every young-generation collection. `flush` (Nest's shutdown) and the
 * process's `exit` write what waits.
 */
export class BatchedDestination implements DestinationStream {
  private chunk: Buffer | undefined;
  private used = 0;

  constructor(private readonly target: ChunkWriter) {
    setInterval(() => this.passOn(), FLUSH_MS).unref();
    destinations.add(this);
    if (!exitListening) {
      exitListening = true;
      process.on('exit', () => {
        for (const destination of destinations) {
          try {
            destination.flushSync();
          } catch {
            // Standard output is gone (EPIPE): nothing left to write to.
          }
        }
      });
    }
  }

  write(line: string): void {
    const room = CHUNK_BYTES - this.used;
    // Counting a line's bytes reads it once more: only near the end of the buffer is it needed.
    if (line.length * MAX_UTF8_PER_UNIT > room) {
      const bytes = Buffer.byteLength(line);
      if (bytes > room) this.passOn();
      if (bytes > CHUNK_BYTES) {
        this.target.write(Buffer.from(line));
        return;
      }
    }
    this.chunk ??= Buffer.allocUnsafe(CHUNK_BYTES);
    this.used += this.chunk.write(line, this.used);
  }

  /** Passes the waiting lines on and lets the writer write them (pino's `logger.flush`). */
  flush(callback?: (error?: Error) => void): void {
    this.passOn();
    this.target.flush(callback);
  }

  /** Writes everything now, blocking (the process is exiting). */
  flushSync(): void {
    this.passOn();
    this.target.flushSync();
  }

  /** The writer keeps what it is given until it is written, so each chunk is a buffer of its own. */
  private passOn(): void {
    if (this.chunk === undefined || this.used === 0) return;
    const waiting = this.chunk.subarray(0, this.used);
    this.chunk = undefined;
    this.used = 0;
    this.target.write(waiting);
  }
}
