import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { LingerBounds, lingerAfterRefusal } from './lingering-close';

const KIB = 1024;
const MIB = 1024 * KIB;
/** Bounds no test meets but the one it names. */
const FAR: LingerBounds = { totalMs: 20_000, idleMs: 20_000, maxBytes: 1024 * MIB };
const ANSWER = '{"error":"too large"}';

/** One call as the server saw it. */
interface Seen {
  request: IncomingMessage;
  /** Milliseconds from the handler's start to the socket's close. */
  closedAfter: Promise<number>;
}

/** Answers 413 at once without reading the body, lingering within `bounds`. */
function refuse(bounds: LingerBounds) {
  return (request: IncomingMessage, response: ServerResponse) => {
    lingerAfterRefusal(request, bounds);
    response.writeHead(413, { 'content-type': 'application/json', 'content-length': ANSWER.length, connection: 'close' });
    response.end(ANSWER);
  };
}

/** A client on a bare socket that keeps its side open until told (as a client still sending does). */
class RawClient {
  readonly socket: Socket;
  received = '';
  serverEnded = false;
  error: Error | undefined;

  constructor(port: number, declaredLength: number) {
    this.socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    this.socket.on('data', (chunk: Buffer) => (this.received += chunk.toString('latin1')));
    this.socket.on('end', () => (this.serverEnded = true));
    this.socket.on('error', (error) => (this.error = error));
    this.socket.write(`POST /refused HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${declaredLength}\r\n\r\n`);
  }

  answered(): Promise<void> {
    return until(() => this.received.endsWith(ANSWER));
  }

  send(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (error) => (error ? reject(error) : resolve())));
  }
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe(lingerAfterRefusal.name, () => {
  let server: Server | undefined;
  const seen: Seen[] = [];
  const clients: RawClient[] = [];

  async function serve(handle: (request: IncomingMessage, response: ServerResponse) => void): Promise<number> {
    server = createServer((request, response) => {
      const startedAt = performance.now();
      const closedAfter = new Promise<number>((resolve) => request.socket.once('close', () => resolve(performance.now() - startedAt)));
      seen.push({ request, closedAfter });
      handle(request, response);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  function client(port: number, declaredLength: number): RawClient {
    const raw = new RawClient(port, declaredLength);
    clients.push(raw);
    return raw;
  }

  afterEach(async () => {
    for (const raw of clients.splice(0)) raw.socket.destroy();
    seen.length = 0;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });

  it('ends its side once the answer is out, reads the rest of the body and closes when the body has ended', async () => {
    const port = await serve(refuse(FAR));
    const body = Buffer.alloc(4 * MIB, 'a');
    const caller = client(port, body.length);
    await caller.answered();
    await until(() => caller.serverEnded);

    // Node would have destroyed the socket by now; here it still takes all the client sends.
    await caller.send(body);
    await seen[0].closedAfter;

    expect(caller.error).toBeUndefined();
    expect(caller.received).toMatch(/^HTTP\/1\.1 413 /);
    expect(seen[0].request.complete).toBe(true);
    expect(seen[0].request.socket.bytesRead).toBeGreaterThan(body.length);
  });

  it('closes once no byte has come for the idle bound', async () => {
    const port = await serve(refuse({ ...FAR, idleMs: 200 }));
    const caller = client(port, MIB);
    await caller.send(Buffer.alloc(10 * KIB, 'a'));
    await caller.answered();

    const closedAfter = await seen[0].closedAfter;

    expect(closedAfter).toBeGreaterThanOrEqual(190);
    expect(closedAfter).toBeLessThan(FAR.totalMs);
    expect(seen[0].request.complete).toBe(false);
  });

  it('closes at the total bound even while the client keeps sending', async () => {
    const port = await serve(refuse({ ...FAR, totalMs: 600, idleMs: 400 }));
    const caller = client(port, 1024 * MIB);
    const trickle = setInterval(() => caller.socket.write(Buffer.alloc(KIB, 'a')), 50);
    try {
      await caller.answered();
      const closedAfter = await seen[0].closedAfter;

      expect(closedAfter).toBeGreaterThanOrEqual(590);
      expect(closedAfter).toBeLessThan(FAR.idleMs);
      expect(seen[0].request.complete).toBe(false);
    } finally {
      clearInterval(trickle);
    }
  });

  it('closes once more than the byte bound has been dropped', async () => {
    const port = await serve(refuse({ ...FAR, maxBytes: 256 * KIB }));
    const caller = client(port, 64 * MIB);
    await caller.answered();
    caller.send(Buffer.alloc(8 * MIB, 'a')).catch(() => undefined);

    const closedAfter = await seen[0].closedAfter;

    expect(closedAfter).toBeLessThan(FAR.idleMs);
    expect(seen[0].request.complete).toBe(false);
    expect(seen[0].request.socket.bytesRead).toBeLessThan(8 * MIB);
  });

  it('reads on when the body reader had paused the request', async () => {
    // As the spooling reader does: it has read a first chunk, then paused the request for the disk.
    const port = await serve((request, response) => {
      const onData = () => {
        request.pause();
        request.off('data', onData);
        refuse(FAR)(request, response);
      };
      request.on('data', onData);
    });
    const body = Buffer.alloc(2 * MIB, 'a');
    const caller = client(port, body.length);
    await caller.send(body);
    await caller.answered();

    await seen[0].closedAfter;

    expect(seen[0].request.complete).toBe(true);
    expect(caller.error).toBeUndefined();
  });

  it('stops lingering when the client goes first', async () => {
    const port = await serve(refuse(FAR));
    const caller = client(port, MIB);
    await caller.answered();
    const socket = seen[0].request.socket;
    expect(Object.hasOwn(socket, 'destroySoon')).toBe(true);

    caller.socket.destroy();
    const closedAfter = await seen[0].closedAfter;

    expect(closedAfter).toBeLessThan(FAR.idleMs);
    expect(Object.hasOwn(socket, 'destroySoon')).toBe(false);
  });

  it('leaves a request whose body was wholly received to close as Node does', async () => {
    let lingered: boolean | undefined;
    const port = await serve((request, response) => {
      request.resume();
      request.on('end', () => {
        lingerAfterRefusal(request, FAR);
        lingered = Object.hasOwn(request.socket, 'destroySoon');
        response.writeHead(413, { 'content-length': ANSWER.length, connection: 'close' });
        response.end(ANSWER);
      });
    });
    const caller = client(port, 5);
    await caller.send(Buffer.from('hello'));
    await caller.answered();

    await seen[0].closedAfter;

    expect(lingered).toBe(false);
  });
});
