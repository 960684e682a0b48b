import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './gateway-process';

/**
 * A TCP relay between the gateway and PostgreSQL that can lose the answer to a COMMIT: the
 * server has committed, the client never hears so and sees its connection drop. That is the
 * one fault after which a retried usage batch meets rows it already stored, and it cannot be
 * timed from outside with a real server stop, so the relay provokes it on demand.
 *
 * It reads the protocol's framing only (a type byte and a length, after the client's untyped
 * startup message; no TLS): a connection is marked when the client sends a statement that
 * contains `marker`, and a marked connection's `CommandComplete` carrying the tag `COMMIT` is
 * swallowed while cuts are armed, and both sockets closed.
 */
export class PgProxy {
  /** COMMITs whose answer was swallowed. */
  cuts = 0;
  private armed = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly marker: string,
  ) {}

  static async start(targetPort: number, marker: string): Promise<PgProxy> {
    const port = await freePort();
    const server: Server = createServer((client) => proxy.relay(client, targetPort));
    const proxy = new PgProxy(server, port, marker);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return proxy;
  }

  /** `database` on the cluster behind the relay. */
  urlOf(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** The next `times` COMMITs of marked transactions lose their answer. */
  cutNextCommits(times: number): void {
    this.armed += times;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket, targetPort: number): void {
    const server = createConnection({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, server]) {
      // As the driver does: without it every relayed message waits for a delayed ACK.
      socket.setNoDelay(true);
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    const close = () => {
      client.destroy();
      server.destroy();
    };
    client.on('close', close);
    server.on('close', close);

    let marked = false;
    const fromClient = new Framer(false);
    client.on('data', (chunk: Buffer) => {
      for (const message of fromClient.push(chunk)) {
        if ((message.type === 'Q' || message.type === 'P') && message.body.includes(this.marker)) marked = true;
      }
      server.write(chunk);
    });
    const fromServer = new Framer(true);
    server.on('data', (chunk: Buffer) => {
      const passed: Buffer[] = [];
      for (const message of fromServer.push(chunk)) {
        if (message.type === 'C') {
          const tag = message.body.subarray(0, message.body.indexOf(0)).toString('latin1');
          if (tag === 'COMMIT' || tag === 'ROLLBACK') {
            const cut = marked && tag === 'COMMIT' && this.armed > 0;
            marked = false;
            if (cut) {
              this.armed -= 1;
              this.cuts += 1;
              // What came before the COMMIT's answer goes through; the answer and the rest never do.
              if (passed.length > 0) client.write(Buffer.concat(passed));
              return close();
            }
          }
        }
        passed.push(message.bytes);
      }
      if (passed.length > 0) client.write(passed.length === 1 ? passed[0] : Buffer.concat(passed));
    });
  }
}

interface Message {
  /** The type byte as a character; '' for the client's untyped first message. */
  type: string;
  body: Buffer;
  /** The whole message as it came, to pass on. */
  bytes: Buffer;
}

/** Splits one direction of a connection into whole protocol messages. */
class Framer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private typed: boolean) {}

  push(chunk: Buffer): Message[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const messages: Message[] = [];
    for (;;) {
      const header = this.typed ? 5 : 4;
      if (this.pending.length < header) break;
      const length = this.pending.readUInt32BE(this.typed ? 1 : 0);
      const total = (this.typed ? 1 : 0) + length;
      if (this.pending.length < total) break;
      const bytes = this.pending.subarray(0, total);
      messages.push({ type: this.typed ? String.fromCharCode(bytes[0]) : '', body: bytes.subarray(header), bytes });
      this.pending = this.pending.subarray(total);
      // After the startup message every message of the client is typed as well.
      this.typed = true;
    }
    return messages;
  }
}
