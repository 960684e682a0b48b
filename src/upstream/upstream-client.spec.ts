import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Pool } from 'undici';
import { CallAbort } from './call-abort';
import { Line } from './line-registry';
import { UpstreamClient, UpstreamRequest } from './upstream-client';

/** A real HTTP server on a free port, its handler swapped per test; it counts requests and sockets. */
describe(UpstreamClient.name, () => {
  let server: Server;
  let handle: (request: IncomingMessage, response: ServerResponse) => void;
  let line: Line;
  const seen = { requests: 0, sockets: new Set<Socket>(), closedEarly: 0 };
  const client = new UpstreamClient();

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.requests += 1;
      seen.sockets.add(request.socket);
      response.once('close', () => {
        if (!response.writableFinished) seen.closedEarly += 1;
      });
      handle(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  beforeEach(() => {
    seen.requests = 0;
    seen.sockets.clear();
    seen.closedEarly = 0;
    const { port } = server.address() as AddressInfo;
    line = new Line(
      { id: 'line-1', baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k', timeoutMs: 300 },
      new Pool(`http://127.0.0.1:${port}`, { pipelining: 1 }),
    );
  });

  afterEach(() => line.pool.destroy());
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const request = (overrides: Partial<UpstreamRequest> = {}): UpstreamRequest => ({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: Buffer.from('{"model":"m"}'),
    signal: new CallAbort(),
    ...overrides,
  });

  const until = async (condition: () => boolean) => {
    for (let tries = 0; tries < 200 && !condition(); tries++) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('answers with the status, the headers and the whole body, and keeps the connection for the next call', async () => {
    handle = (incoming, response) => {
      const parts: Buffer[] = [];
      incoming.on('data', (part: Buffer) => parts.push(part));
      incoming.on('end', () => {
        response.writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'yes' });
        response.end(JSON.stringify({ echoed: Buffer.concat(parts).toString(), length: incoming.headers['content-length'] }));
      });
    };

    const first = await client.send(line, request({ body: [Buffer.from('{"model"'), Buffer.from(':"m"}')] }));
    expect(first.statusCode).toBe(201);
    expect(first.headers['x-upstream']).toBe('yes');
    expect(JSON.parse((await first.body.whole()).toString())).toEqual({ echoed: '{"model":"m"}', length: '13' });
    // The body is whole at its last byte, before undici frees the connection (a microtask later):
    // a next call comes with another request, after a turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    await (await client.send(line, request())).body.whole();

    expect(seen.requests).toBe(2);
    expect(seen.sockets.size).toBe(1);
  });

  it('skips informational heads (103 Early Hints) and answers with the final one', async () => {
    handle = (incoming, response) => {
      incoming.resume();
      response.writeEarlyHints({ link: '</style.css>; rel=preload' });
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('final');
    };

    const answer = await client.send(line, request());

    expect(answer.statusCode).toBe(200);
    expect((await answer.body.whole()).toString()).toBe('final');
  });

  it('gives the request up when the call is aborted before the head, and rejects as aborted', async () => {
    handle = (incoming) => incoming.resume(); // never answers
    const signal = new CallAbort();
    const sent = client.send(line, request({ signal }));
    await until(() => seen.requests === 1);
    signal.abort();

    await expect(sent).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    await until(() => seen.closedEarly === 1);
    expect(seen.closedEarly).toBe(1);
  });

  it('sends nothing for a call aborted before it was sent', async () => {
    handle = (incoming, response) => response.end();
    const signal = new CallAbort();
    signal.abort();

    await expect(client.send(line, request({ signal }))).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    expect(seen.requests).toBe(0);
  });

  it('fails the body when the call is aborted after the head, and lets the connection go', async () => {
    handle = (incoming, response) => {
      incoming.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: first\n\n');
    };
    const signal = new CallAbort();
    const failures: Error[] = [];
    const answer = await client.send(line, request({ signal, onBodyFailure: (error) => failures.push(error) }));
    const whole = answer.body.whole();
    signal.abort();

    await expect(whole).rejects.toMatchObject({ code: 'UND_ERR_ABORTED' });
    expect(failures.map((error) => (error as Error & { code?: string }).code)).toEqual(['UND_ERR_ABORTED']);
    await until(() => seen.closedEarly === 1);
    expect(seen.closedEarly).toBe(1);
  });

  it('tells about a body that stalls past the timeout, and fails it', async () => {
    handle = (incoming, response) => {
      incoming.resume();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"partial":');
    };
    const failures: Error[] = [];
    const answer = await client.send(line, request({ onBodyFailure: (error) => failures.push(error) }));

    await expect(answer.body.whole()).rejects.toMatchObject({ code: 'UND_ERR_BODY_TIMEOUT' });
    expect(failures).toHaveLength(1);
  });

  it('rejects with the head timeout when no head comes in time', async () => {
    handle = (incoming) => incoming.resume();

    await expect(client.send(line, request())).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
  });

  it('does not leave its abort listener on the call after the answer', async () => {
    handle = (incoming, response) => {
      incoming.resume();
      response.end('{}');
    };
    const signal = new CallAbort();

    await (await client.send(line, request({ signal }))).body.whole();

    expect(signal.listenerCount('abort')).toBe(0);
  });
});
