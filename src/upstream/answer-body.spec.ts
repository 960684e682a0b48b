/**
 * @jest-environment node
 */
// Fakes timers: in jest's own sandbox (test/jest/shared-packages-runtime.js says why).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AnswerAbandoned, AnswerBody, AnswerFlow } from './answer-body';

/** The connection's side as the body sees it: what it was asked to do. */
function connection() {
  const flow = {
    paused: false,
    pauses: 0,
    aborted: [] as Error[],
    pause() {
      flow.paused = true;
      flow.pauses += 1;
    },
    resume() {
      flow.paused = false;
    },
    abort(reason: Error) {
      flow.aborted.push(reason);
    },
  };
  return { flow, body: new AnswerBody(flow satisfies AnswerFlow) };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A client socket that takes `room` chunks, then reports full until `drain()` is called. */
function client(room = Infinity) {
  const taken: string[] = [];
  let release: (() => void) | undefined;
  let leave: ((error: Error) => void) | undefined;
  const waits = { count: 0 };
  return {
    taken,
    waits,
    pass: (chunk: Buffer) => {
      taken.push(chunk.toString());
      return taken.length < room;
    },
    drained: () => {
      waits.count += 1;
      return new Promise<void>((resolve, reject) => {
        release = resolve;
        leave = reject;
      });
    },
    drain: () => release?.(),
    close: () => leave?.(new Error('client closed')),
  };
}

describe('AnswerBody.whole', () => {
  it('gives the chunks joined at the end, and a single chunk as it came', async () => {
    const { body } = connection();
    const whole = body.whole();
    body.push(Buffer.from('{"id":'));
    body.push(Buffer.from('"a1"}'));
    body.end();
    expect((await whole).toString()).toBe('{"id":"a1"}');

    const single = connection().body;
    const chunk = Buffer.from('{}');
    const read = single.whole();
    single.push(chunk);
    single.end();
    expect(await read).toBe(chunk);
  });

  it('includes what arrived before it was asked for, and settles at once for a body that ended', async () => {
    const { body } = connection();
    body.push(Buffer.from('ab'));
    body.push(Buffer.from('cd'));
    body.end();

    expect((await body.whole()).toString()).toBe('abcd');
  });

  it("rejects with the body's failure, also when it failed before", async () => {
    const { body } = connection();
    const whole = body.whole();
    body.push(Buffer.from('ab'));
    body.fail(new Error('socket hang up'));
    await expect(whole).rejects.toThrow('socket hang up');

    const early = connection().body;
    early.fail(new Error('reset'));
    await expect(early.whole()).rejects.toThrow('reset');
  });

  it('can be read only once', async () => {
    const { body } = connection();
    void body.whole();
    await expect(body.whole()).rejects.toThrow('only once');
    expect(() => body.chunks()).toThrow('only once');
  });
});

describe('AnswerBody.pipe', () => {
  it('hands every chunk over in order and resolves at the end', async () => {
    const { body } = connection();
    const { taken, pass, drained } = client();
    const piped = body.pipe(pass, drained);
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    body.push(Buffer.from('c'));
    body.end();

    await piped;
    expect(taken).toEqual(['a', 'b', 'c']);
  });

  it('pauses the connection while the client is full and resumes it when it drains', async () => {
    const { body, flow } = connection();
    const { taken, pass, drained, drain, waits } = client(1);
    const piped = body.pipe(pass, drained);
    body.push(Buffer.from('a'));

    expect(flow.paused).toBe(true);
    expect(waits.count).toBe(1);
    drain();
    await turn();
    expect(flow.paused).toBe(false);
    body.push(Buffer.from('b'));
    expect(taken).toEqual(['a', 'b']);
    expect(waits.count).toBe(2);
    drain();
    await turn();
    body.end();
    await piped;
  });

  it('resolves at the end only once a pending drain came', async () => {
    const { body } = connection();
    const { pass, drained, drain } = client(1);
    let resolved = false;
    const piped = body.pipe(pass, drained).then(() => (resolved = true));
    body.push(Buffer.from('a'));
    body.end();
    await turn();
    expect(resolved).toBe(false);

    drain();
    await piped;
    expect(resolved).toBe(true);
  });

  it('rejects when the client goes while the connection waits for it, and gives the request up', async () => {
    const { body, flow } = connection();
    const { pass, drained, close } = client(1);
    const piped = body.pipe(pass, drained);
    body.push(Buffer.from('a'));
    close();

    await expect(piped).rejects.toThrow('client closed');
    expect(flow.aborted).toHaveLength(1);
    expect(body.finished).toBe(true);
  });

  it("rejects with the body's failure without aborting again", async () => {
    const { body, flow } = connection();
    const { pass, drained } = client();
    const piped = body.pipe(pass, drained);
    body.push(Buffer.from('a'));
    body.fail(new Error('socket hang up'));

    await expect(piped).rejects.toThrow('socket hang up');
    expect(flow.aborted).toHaveLength(0);
  });

  it('rejects with what the chunk handler throws and gives the request up', async () => {
    const { body, flow } = connection();
    const piped = body.pipe(() => {
      throw new Error('meter broke');
    }, client().drained);
    body.push(Buffer.from('a'));

    await expect(piped).rejects.toThrow('meter broke');
    expect(flow.aborted.map((reason) => reason.message)).toEqual(['meter broke']);
  });

  it('hands over what waited as one chunk, then settles at once for a body already over', async () => {
    const { body } = connection();
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    body.end();
    const { taken, pass, drained } = client();
    await body.pipe(pass, drained);
    expect(taken).toEqual(['ab']);

    const failed = connection().body;
    failed.fail(new Error('reset'));
    await expect(failed.pipe(pass, drained)).rejects.toThrow('reset');
  });
});

describe('AnswerBody.chunks', () => {
  it('yields the chunks in order, those that waited first, and ends', async () => {
    const { body } = connection();
    body.push(Buffer.from('a'));
    const chunks = body.chunks();
    const read = (async () => {
      const taken: string[] = [];
      for await (const chunk of chunks) taken.push(chunk.toString());
      return taken;
    })();
    body.push(Buffer.from('b'));
    await turn();
    body.push(Buffer.from('c'));
    body.end();

    expect(await read).toEqual(['a', 'b', 'c']);
    await expect(chunks.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it("rejects a waiting read with the body's failure, once", async () => {
    const { body } = connection();
    const chunks = body.chunks();
    const read = chunks.next();
    body.fail(new Error('UND_ERR_BODY_TIMEOUT'));

    await expect(read).rejects.toThrow('UND_ERR_BODY_TIMEOUT');
    await expect(chunks.next()).resolves.toMatchObject({ done: true });

    const early = connection().body;
    early.fail(new Error('reset'));
    const late = early.chunks();
    await expect(late.next()).rejects.toThrow('reset');
  });

  it('pauses the connection while 64 KiB wait untaken, and resumes it as they are taken', async () => {
    const { body, flow } = connection();
    const chunks = body.chunks();
    body.push(Buffer.alloc(40 * 1024));
    body.push(Buffer.alloc(40 * 1024));
    expect(flow.paused).toBe(true);

    await chunks.next();
    expect(flow.paused).toBe(false);
  });

  it('leaves the body and what waited to the next reader when it is left early, without aborting', async () => {
    const { body, flow } = connection();
    const chunks = body.chunks();
    body.push(Buffer.from('event: one\n\n'));
    for await (const chunk of chunks) {
      expect(chunk.toString()).toBe('event: one\n\n');
      break;
    }
    body.push(Buffer.from('event: two\n\n'));
    const rest = body.whole();
    body.push(Buffer.from('event: three\n\n'));
    body.end();

    expect((await rest).toString()).toBe('event: two\n\nevent: three\n\n');
    expect(flow.aborted).toHaveLength(0);
  });

  it('lets a next reader come after it was left, also once the body is over', async () => {
    const { body } = connection();
    const chunks = body.chunks();
    body.push(Buffer.from('data: last\n\n'));
    body.end();
    for await (const chunk of chunks) void chunk;
    await chunks.return!();

    await expect(body.drop(1 << 20)).resolves.toBeUndefined();
  });

  it('hands chunks it had queued but not given back to the next reader', async () => {
    const { body } = connection();
    const chunks = body.chunks();
    body.push(Buffer.from('a'));
    body.push(Buffer.from('b'));
    await chunks.next();
    await chunks.return!();

    body.end();
    expect((await body.whole()).toString()).toBe('b');
  });
});

describe('AnswerBody.drop', () => {
  it('reads what is left to the end, so the connection can serve the next call', async () => {
    const { body, flow } = connection();
    body.push(Buffer.from('event: ping\n\n'));
    const done = body.drop(1 << 20);
    body.push(Buffer.from('data: trailing\n\n'));
    body.end();

    await done;
    expect(flow.aborted).toHaveLength(0);
  });

  it('gives up on a body that goes on past its limit', async () => {
    const { body, flow } = connection();
    const done = body.drop(1 << 20);
    for (let index = 0; index < 20; index++) body.push(Buffer.alloc(64 * 1024));

    await done;
    expect(flow.aborted).toHaveLength(1);
    expect(body.finished).toBe(true);
  });

  it('gives up on a body that does not end within its patience', async () => {
    jest.useFakeTimers();
    try {
      const { body, flow } = connection();
      const done = body.drop(1 << 20, 5_000);
      body.push(Buffer.from('data: still here\n\n'));
      jest.advanceTimersByTime(4_999);
      expect(flow.aborted).toHaveLength(0);
      jest.advanceTimersByTime(1);
      jest.useRealTimers();

      await done;
      expect(flow.aborted).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('resolves at once for a body that already ended or failed', async () => {
    const ended = connection().body;
    ended.end();
    const failed = connection();
    failed.body.fail(new Error('reset'));

    await expect(ended.drop(1 << 20)).resolves.toBeUndefined();
    await expect(failed.body.drop(1 << 20)).resolves.toBeUndefined();
    expect(failed.flow.aborted).toHaveLength(0);
  });
});

describe('AnswerBody.destroy', () => {
  it('gives the request up with an AnswerAbandoned, and a waiting reader gets it', async () => {
    const { body, flow } = connection();
    const read = body.chunks().next();
    body.destroy();

    await expect(read).rejects.toBeInstanceOf(AnswerAbandoned);
    expect(flow.aborted).toHaveLength(1);
    expect(flow.aborted[0]).toBeInstanceOf(AnswerAbandoned);
  });
});

describe('AnswerBody before a reader', () => {
  it('pauses the connection once 64 KiB wait, and resumes it when a reader comes', async () => {
    const { body, flow } = connection();
    body.push(Buffer.alloc(40 * 1024));
    expect(flow.paused).toBe(false);
    body.push(Buffer.alloc(40 * 1024));
    expect(flow.paused).toBe(true);

    const whole = body.whole();
    expect(flow.paused).toBe(false);
    body.end();
    expect((await whole).length).toBe(80 * 1024);
  });

  it('aborts the request when given up, once, and not after its end', () => {
    const open = connection();
    open.body.destroy();
    open.body.destroy();
    expect(open.flow.aborted).toHaveLength(1);
    expect(open.body.finished).toBe(true);

    const ended = connection();
    ended.body.end();
    ended.body.destroy();
    expect(ended.flow.aborted).toHaveLength(0);
  });
});

describe('AnswerBody.of', () => {
  it('is a body that is there already', async () => {
    expect((await AnswerBody.of(Buffer.from('{"error":{}}')).whole()).toString()).toBe('{"error":{}}');
    expect((await AnswerBody.of(Buffer.alloc(0)).whole()).length).toBe(0);
  });
});

describe('AnswerBody when over', () => {
  /** A full collection, made callable where the process was not started with --expose-gc. */
  function collect(): void {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  }

  it.each([
    ['read to its end', (body: AnswerBody) => body.end()],
    ['failed', (body: AnswerBody) => body.fail(new Error('reset'))],
  ])('lets go of the connection once %s, so a body kept longer does not keep undici’s state of the request', async (_, finish) => {
    let flow: AnswerFlow | undefined = { pause: () => undefined, resume: () => undefined, abort: () => undefined };
    const held = new WeakRef(flow);
    const body = new AnswerBody(flow);
    // Dropping the test's own reference is the point: only the body may still hold the flow.
    // eslint-disable-next-line no-useless-assignment
    flow = undefined;
    const read = body.whole().catch(() => undefined);
    finish(body);
    await read;
    // A WeakRef's target is kept to the end of the job that made it: collected after a turn.
    await turn();

    collect();
    expect(held.deref()).toBeUndefined();
    expect(body.finished).toBe(true);
  });
});
