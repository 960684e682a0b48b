import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { BodyError, readBody } from './body-reader';

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
  return new Promise((resolve, reject) => readBody(incoming(headers, chunks), limit, (error, body) => (error ? reject(error) : resolve(body!))));
}

describe(readBody.name, () => {
  it('fills one buffer of the announced length from the chunks', async () => {
    const body = await read({ 'content-length': '11' }, ['hello', ' ', 'world']);
    expect(body.toString()).toBe('hello world');
  });

  it('completes at the announced length, without waiting for the stream to end', async () => {
    const stream = new PassThrough();
    Object.assign(stream, { headers: { 'content-length': '5' } });
    const body = new Promise<Buffer>((resolve, reject) => readBody(stream as unknown as IncomingMessage, 100, (error, read) => (error ? reject(error) : resolve(read!))));
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
});
