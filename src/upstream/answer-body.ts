/** What an answer body can ask of the connection it arrives on (undici's dispatch controller). */
export interface AnswerFlow {
  /** Stop reading the socket until `resume`. */
  pause(): void;
  resume(): void;
  /** Give the request up: the connection is not reused with a half-read answer. */
  abort(reason: Error): void;
}

/** Bytes kept while nobody reads the body yet; past them the connection is paused (a Readable's default high-water mark). */
const HIGH_WATER_BYTES = 64 * 1024;

/** Thrown into a reader whose body the gateway let go of before its end. */
export class AnswerAbandoned extends Error {
  constructor(message = 'The upstream answer was given up before its end.') {
    super(message);
    this.name = 'AnswerAbandoned';
  }
}

/** The rest of a body being read and dropped (`AnswerBody.dropping`). */
export interface DroppedRest {
  take(chunk: Buffer): void;
  /** The body is over: no more patience needed. */
  stop(): void;
}

/** A flow for a body that is complete already: there is nothing to pause or abort. */
const SETTLED_FLOW: AnswerFlow = { pause: () => undefined, resume: () => undefined, abort: () => undefined };

/**
 * The body of an upstream answer as undici hands it over chunk by chunk (DESIGN.md section 6):
 * read whole (`whole`), piped chunk by chunk with backpressure (`pipe`), pulled a chunk at a
 * time (`chunks`), or read to its end and dropped (`drop`), by one reader at a time. None of
 * them costs a stream: a Readable per answer (undici's `request()`) is a sizeable share of what
 * a bare proxy spends per JSON call and per chat stream (measured: see docs/performance.md).
 *
 * Chunks that arrive before a reader claims the body wait for it, up to HIGH_WATER_BYTES, and
 * then the connection pauses. A body ends or fails once; a reader that comes later learns
 * which at once.
 */
export class AnswerBody {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private state: 'open' | 'ended' | 'failed' = 'open';
  private failure: Error | undefined;
  private claimed = false;
  private sink: ((chunk: Buffer) => void) | undefined;
  private settle: ((error?: Error) => void) | undefined;

  constructor(private flow: AnswerFlow) {}

  /** A body that is all there already (an error answer read before it was chosen). */
  static of(bytes: Buffer): AnswerBody {
    const body = new AnswerBody(SETTLED_FLOW);
    if (bytes.length > 0) body.push(bytes);
    body.end();
    return body;
  }

  /** Whether the body is over: read to its end, failed, or given up. */
  get finished(): boolean {
    return this.state !== 'open';
  }

  // ---- the connection's side

  push(chunk: Buffer): void {
    if (this.state !== 'open') return;
    if (this.sink !== undefined) return this.sink(chunk);
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= HIGH_WATER_BYTES) this.flow.pause();
  }

  end(): void {
    if (this.state !== 'open') return;
    this.state = 'ended';
    const settle = this.release();
    settle?.();
  }

  fail(error: Error): void {
    if (this.state !== 'open') return;
    this.state = 'failed';
    this.failure = error;
    const settle = this.release();
    settle?.(error);
  }

  /**
   * When the body is over, it lets go of the reader's handlers and of the connection's
   * controller, which holds undici's state of the request (its head's raw bytes among it): a
   * body kept a little longer (until the call's end) would otherwise keep all that through
   * young-generation collections, promoting it to the old generation on every chat call
   * (`npm run bench:profile -- --allocations --survivors` names the survivors).
   */
  private release(): ((error?: Error) => void) | undefined {
    const settle = this.settle;
    this.flow = SETTLED_FLOW;
    this.sink = undefined;
    this.settle = undefined;
    return settle;
  }

  // ---- the reader's side

  /**
   * Lets the rest of the body go: the request is aborted, and a reader gets `reason`. A body
   * that is over already is left as it is (nothing is made: an Error costs its stack trace).
   */
  destroy(reason?: Error): void {
    if (this.state !== 'open') return;
    const flow = this.flow;
    const failure = reason ?? new AnswerAbandoned();
    this.fail(failure);
    flow.abort(failure);
  }

  /** The whole body; rejects with the body's failure. */
  whole(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let length = 0;
      this.claim(
        (chunk) => {
          chunks.push(chunk);
          length += chunk.length;
        },
        (error) => (error ? reject(error) : resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length))),
      );
    });
  }

  /**
   * Hands every chunk to `pass`, in order; when `pass` returns false (the client's socket is
   * full) the connection pauses until `drained` resolves. Resolves at the body's end (after a
   * pending drain); rejects with the body's failure, with what `pass` throws, or when `drained`
   * rejects (the client left): the body is then given up.
   */
  pipe(pass: (chunk: Buffer) => boolean, drained: () => Promise<void>): Promise<void> {
    return new Promise((resolve, reject) => {
      let waiting: Promise<void> | undefined;
      let over = false;
      const fail = (error: unknown) => {
        if (over) return;
        over = true;
        this.destroy(error instanceof Error ? error : new AnswerAbandoned(String(error)));
        reject(error);
      };
      const finish = () => {
        if (over) return;
        over = true;
        resolve();
      };
      this.claim(
        (chunk) => {
          if (over) return;
          let more: boolean;
          try {
            more = pass(chunk);
          } catch (error) {
            fail(error);
            return;
          }
          if (more || waiting !== undefined) return;
          this.flow.pause();
          waiting = drained().then(() => {
            waiting = undefined;
            this.flow.resume();
          }, fail);
        },
        (error) => {
          if (error) fail(error);
          else if (waiting === undefined) finish();
          else void waiting.then(finish);
        },
      );
    });
  }

  /**
   * The chunks one `next()` at a time, for readers that pull (translated streams, answers read
   * before failover). Chunks that arrive before they are asked for wait, up to HIGH_WATER_BYTES,
   * then the connection pauses. Leaving (`return`, as `break` does) leaves the body as it is, with
   * what waited, for another reader: the caller decides what becomes of the rest (`drop`,
   * `destroy`).
   */
  chunks(): AsyncIterableIterator<Buffer> {
    let queue: Buffer[] = [];
    let queued = 0;
    let asking: { resolve: (result: IteratorResult<Buffer>) => void; reject: (error: Error) => void } | undefined;
    let over: { error?: Error } | undefined;
    let left = false;
    this.claim(
      (chunk) => {
        if (asking === undefined) {
          queue.push(chunk);
          queued += chunk.length;
          if (queued >= HIGH_WATER_BYTES) this.flow.pause();
          return;
        }
        const { resolve } = asking;
        asking = undefined;
        resolve({ value: chunk, done: false });
      },
      (error) => {
        if (asking === undefined) {
          over = { error };
          return;
        }
        // Told to the reader that waits: reported once, as an iterator does.
        over = {};
        const { resolve, reject } = asking;
        asking = undefined;
        if (error) reject(error);
        else resolve({ value: undefined, done: true });
      },
    );
    const iterator: AsyncIterableIterator<Buffer> = {
      next: () => {
        if (queue.length > 0) {
          const chunk = queue.shift()!;
          queued -= chunk.length;
          if (queued < HIGH_WATER_BYTES) this.flow.resume();
          return Promise.resolve({ value: chunk, done: false });
        }
        if (left) return Promise.resolve({ value: undefined, done: true });
        if (over === undefined) return new Promise((resolve, reject) => (asking = { resolve, reject }));
        if (over.error === undefined) return Promise.resolve({ value: undefined, done: true });
        const error = over.error;
        over = {}; // a failure is reported once, as an iterator does
        return Promise.reject(error);
      },
      return: () => {
        if (!left) {
          left = true;
          this.unclaim(queue, queued);
          queue = [];
          queued = 0;
        }
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /**
   * Reads what is left and drops it, so that the connection serves the next call; a body that
   * goes on past `limitBytes`, or past `patienceMs` when given, is given up instead (the
   * connection is closed). Resolves when the body is over, however it ended; never rejects.
   */
  drop(limitBytes: number, patienceMs?: number): Promise<void> {
    return new Promise((resolve) => {
      const rest = this.dropping(limitBytes, patienceMs);
      this.claim(rest.take, () => {
        rest.stop();
        resolve();
      });
    });
  }

  /**
   * `drop`'s rules for a reader that keeps the body and needs no more of it (a translated
   * stream's pipe after the final event): `take` each chunk that follows; past `limitBytes`, or
   * past `patienceMs` from now when given, the body is given up. `stop` when the body is over.
   */
  dropping(limitBytes: number, patienceMs?: number): DroppedRest {
    let size = 0;
    const timer = patienceMs === undefined ? undefined : setTimeout(() => this.destroy(), patienceMs);
    return {
      take: (chunk) => {
        size += chunk.length;
        if (size > limitBytes) this.destroy();
      },
      stop: () => clearTimeout(timer),
    };
  }

  /**
   * Makes `sink` and `settle` the body's one reader: what waited is handed over as one chunk
   * (pieces of one byte stream), then the end or the failure if the body is over already.
   */
  private claim(sink: (chunk: Buffer) => void, settle: (error?: Error) => void): void {
    if (this.claimed) throw new Error('An upstream answer body can be read only once.');
    this.claimed = true;
    const waited = this.pending;
    this.pending = [];
    if (waited.length > 0) sink(waited.length === 1 ? waited[0] : Buffer.concat(waited, this.pendingBytes));
    this.pendingBytes = 0;
    if (this.state === 'ended') return settle();
    if (this.state === 'failed') return settle(this.failure);
    this.sink = sink;
    this.settle = settle;
    this.flow.resume();
  }

  /**
   * A reader that leaves (early, or after the end it was told of) gives the body back, with the
   * chunks it did not take first: a next reader gets them, then the rest or the end.
   */
  private unclaim(untaken: Buffer[], bytes: number): void {
    this.pending = untaken;
    this.pendingBytes = bytes;
    this.sink = undefined;
    this.settle = undefined;
    this.claimed = false;
  }
}
