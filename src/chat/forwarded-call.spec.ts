import { PassThrough } from 'node:stream';
import { dropRest } from './forwarded-call';

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
