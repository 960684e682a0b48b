import type { DestinationStream } from 'pino';

/** What BatchedDestination hands its chunks to: pino's writer (sonic-boom). */
export interface FlushableDestination extends DestinationStream {
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** Lines are passed on once this many characters are waiting... */
const CHUNK_CHARS = 64 * 1024;
/** ...or after this long. */
const FLUSH_MS = 1_000;

/** Destinations whose waiting lines are written when the process exits (one `exit` listener for all). */
const destinations = new Set<BatchedDestination>();
let exitListening = false;

/**
 * The JSON log's way to standard output: lines wait in memory and go to the writer 64 KiB at a
 * time (about 140 call lines), or once a second. The writer is pino's synchronous one: a write
 * per 64 KiB costs little, and nothing is ever in flight, so what waits when the process exits
 * is written, in order. (The asynchronous writer in 4 KiB chunks went through libuv's thread
 * pool per write, 3-5 % of a call's CPU at full load by `bench:profile`, and a write still in
 * the pool when the process exited could be lost.) `flush` (Nest's shutdown) and the process's
 * `exit` write what waits.
 */
export class BatchedDestination implements DestinationStream {
  private lines: string[] = [];
  private size = 0;

  constructor(private readonly target: FlushableDestination) {
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
    this.lines.push(line);
    this.size += line.length;
    if (this.size >= CHUNK_CHARS) this.passOn();
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

  private passOn(): void {
    if (this.size === 0) return;
    const text = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
    this.lines = [];
    this.size = 0;
    this.target.write(text);
  }
}
