import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BodyError, readBody, SpoolPolicy } from './body-reader';
import { BodySpool } from './body-spool';

function incoming(headers: Record<string, string>, chunks: string[]): IncomingMessage {
  const stream = new PassThrough();
  Object.assign(stream, { headers });
  setImmediate(() => {
    for (const chunk of chunks) stream.write(Buffer.from(chunk));
    stream.end();
  });
  return stream as unknown as IncomingMessage;
}

function read(headers: Record<string, string>, chunks: string[], limit = 100): Promise<Buffer> {
  return new Promise((resolve, reject) => readBody(incoming(headers, chunks), limit, (error, body) => (error ? reject(error) : resolve(body as Buffer))));
}

describe(readBody.name, () => {
  it('fills one buffer of the announced length from the chunks', async () => {
    const body = await read({ 'content-length': '11' }, ['hello', ' ', 'world']);
    expect(body.toString()).toBe('hello world');
  });

  it('completes at the announced length, without waiting for the stream to end', async () => {
    const stream = new PassThrough();
    Object.assign(stream, { headers: { 'content-length': '5' } });
    const body = new Promise<Buffer>((resolve, reject) =>
      readBody(stream as unknown as IncomingMessage, 100, (error, read) => (error ? reject(error) : resolve(read as Buffer))),
    );
    stream.write('hel');
    stream.write('lo');

    expect((await body).toString()).toBe('hello');
    expect(stream.readableEnded).toBe(false);
  });

  it('joins the chunks of a body that announces no length', async () => {
    const body = await read({}, ['{"a":', '1}']);
    expect(body.toString()).toBe('{"a":1}');
  });

  it('refuses a body announced over the limit with 413 without reading it', async () => {
    await expect(read({ 'content-length': '101' }, [])).rejects.toMatchObject({ statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
  });

  it('refuses a body without a length once it passes the limit with 413', async () => {
    await expect(read({}, ['x'.repeat(60), 'x'.repeat(60)])).rejects.toMatchObject({ statusCode: 413 });
  });

  it.each([
    ['shorter than announced', '10', ['12345']],
    ['longer than announced', '3', ['12345']],
  ])('refuses a body %s with 400', async (_case, length, chunks) => {
    await expect(read({ 'content-length': length }, chunks)).rejects.toMatchObject({ statusCode: 400, code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' });
  });

  it('refuses a malformed content-length with 400', async () => {
    const refusal = read({ 'content-length': 'ten' }, []);
    await expect(refusal).rejects.toBeInstanceOf(BodyError);
    await expect(refusal).rejects.toMatchObject({ statusCode: 400, code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' });
  });

  describe('over the spool threshold', () => {
    const directory = mkdtempSync(join(tmpdir(), 'body-reader-spec-'));
    const policy: SpoolPolicy = { aboveBytes: 64, directory };
    afterAll(() => rmSync(directory, { recursive: true, force: true }));

    /** Open descriptors of spool files in the spec's folder (they are unlinked: "(deleted)"). */
    function openSpoolFiles(): number {
      return readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(directory);
        } catch {
          return false;
        }
      }).length;
    }

    function spooled(headers: Record<string, string>, chunks: string[], limit = 10_000): Promise<Buffer | BodySpool> {
      return new Promise((resolve, reject) => readBody(incoming(headers, chunks), limit, (error, body) => (error ? reject(error) : resolve(body!)), policy));
    }

    const text = JSON.stringify({ model: 'm', image: 'A'.repeat(9000) });
    const pieces = [text.slice(0, 10), text.slice(10, 5000), text.slice(5000)];

    it.each([
      ['with a content-length', { 'content-length': String(text.length) }],
      ['chunked, once past the threshold', {}],
    ])('writes a body %s to an unlinked file and gives its skeleton', async (_, headers) => {
      const body = await spooled(headers, pieces);
      expect(body).toBeInstanceOf(BodySpool);
      const spool = body as BodySpool;
      expect(spool.length).toBe(text.length);
      expect(await spool.text()).toBe(text);
      expect(spool.skeleton.bytes.length).toBeLessThan(5000);
      expect(JSON.parse(spool.skeleton.bytes.toString()).model).toBe('m');
      expect(readdirSync(directory)).toEqual([]);
      expect(openSpoolFiles()).toBe(1);
      await spool.release();
      expect(openSpoolFiles()).toBe(0);
      await expect(spool.text()).rejects.toThrow('already released');
    });

    it('keeps a body at the threshold in memory', async () => {
      const body = await spooled({ 'content-length': '64' }, ['x'.repeat(64)]);
      expect(Buffer.isBuffer(body)).toBe(true);
    });

    it.each([
      ['passes the limit', { 'content-length': String(text.length) }, 100, 413],
      ['passes the limit without a length', {}, 100, 413],
      ['ends before its announced length', { 'content-length': String(text.length + 10) }, 10_000, 400],
    ])('closes the file of a body that %s', async (_, headers, limit, status) => {
      await expect(spooled(headers, pieces, limit)).rejects.toMatchObject({ statusCode: status });
      expect(openSpoolFiles()).toBe(0);
    });

    it('closes the file of a body whose socket fails before the file is open', async () => {
      const stream = new PassThrough();
      Object.assign(stream, { headers: { 'content-length': String(text.length) } });
      const refused = new Promise((resolve, reject) =>
        readBody(stream as unknown as IncomingMessage, 10_000, (error, body) => (error ? reject(error) : resolve(body)), policy),
      );
      stream.destroy(new Error('socket gone')); // 'error' comes on the next tick, before the file is opened

      await expect(refused).rejects.toThrow('socket gone');
      expect(openSpoolFiles()).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(openSpoolFiles()).toBe(0);
    });

    it('keeps the file open while a user holds it, and closes it with the last', async () => {
      const spool = (await spooled({}, pieces)) as BodySpool;
      spool.retain();
      await spool.release();
      expect(await spool.text()).toBe(text);
      await spool.release();
      expect(spool.isOpen).toBe(false);
      expect(openSpoolFiles()).toBe(0);
    });

    it('refuses a folder it cannot write to', async () => {
      await expect(
        new Promise((resolve, reject) =>
          readBody(incoming({ 'content-length': String(text.length) }, pieces), 10_000, (error, body) => (error ? reject(error) : resolve(body)), {
            aboveBytes: 64,
            directory: join(directory, 'missing'),
          }),
        ),
      ).rejects.toMatchObject({ code: 'ENOENT' });
    });
  });
});
