import { PassThrough } from 'node:stream';
import type { OpenedResponse } from '../upstream/forward.service';
import { dropRest, readWhole } from './forwarded-call';

describe(readWhole.name, () => {
  const opened = (body: PassThrough, headers: Record<string, string>) => ({ body, headers }) as unknown as OpenedResponse;

  it('has an answer with a Content-Length at its last byte, before the body ends', async () => {
    const body = new PassThrough();
    const whole = readWhole(opened(body, { 'content-length': '11' }));
    body.write('{"id":');
    body.write('"a1"}');

    expect((await whole).toString()).toBe('{"id":"a1"}');
    expect(body.readableEnded).toBe(false);
  });

  it('reads an answer without a Content-Length to its end', async () => {
    const body = new PassThrough();
    const whole = readWhole(opened(body, {}));
    body.write('{"id":');
    body.end('"a1"}');

    expect((await whole).toString()).toBe('{"id":"a1"}');
  });
});

describe(dropRest.name, () => {
  it('reads what is left to the end, so the connection can serve the next call', async () => {
    const body = new PassThrough();
    body.write('event: ping\n\n');
    const done = dropRest(body);
    body.end('data: trailing\n\n');

    await done;

    expect(body.readableEnded).toBe(true);
    expect(body.destroyed).toBe(true);
    expect(body.errored).toBeNull();
  });

  it('gives up on a body that goes on past a mebibyte', async () => {
    const body = new PassThrough();
    const done = dropRest(body);
    for (let index = 0; index < 20; index++) body.write(Buffer.alloc(64 * 1024));

    await done;

    expect(body.destroyed).toBe(true);
    expect(body.readableEnded).toBe(false);
  });

  it('gives up on a body that does not end within five seconds', async () => {
    jest.useFakeTimers();
    try {
      const body = new PassThrough();
      const done = dropRest(body);
      body.write('data: still here\n\n');
      jest.advanceTimersByTime(5_000);
      jest.useRealTimers();

      await done;

      expect(body.destroyed).toBe(true);
      expect(body.readableEnded).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  it('resolves at once for a body that already ended or was destroyed', async () => {
    const destroyed = new PassThrough();
    destroyed.destroy();
    const ended = new PassThrough({ autoDestroy: false });
    ended.resume();
    ended.end();
    await new Promise((resolve) => ended.once('end', resolve));

    await expect(dropRest(destroyed)).resolves.toBeUndefined();
    await expect(dropRest(ended)).resolves.toBeUndefined();
    expect(ended.listenerCount('data')).toBe(0);
  });
});
