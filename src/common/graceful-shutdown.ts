import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * SIGTERM / SIGINT: stop accepting, let calls and streams in flight finish (up to
 * `drainMs`, then their connections are closed), then run the application's shutdown hooks
 * (usage flush, pools, database) and exit 0.
 *
 * Nest's own shutdown hooks close the HTTP server only after the other hooks ran, which would
 * let in-flight calls end after the usage writer's last flush; hence this order.
 */
/** While draining, how often connections whose calls have ended are closed. */
const IDLE_SWEEP_MS = 100;
/**
 * A connection that has received nothing for this long is a client's spare one (load balancers
 * and HTTP clients open them ahead of need): closed while draining. Node's closeIdleConnections
 * leaves a connection that never carried a request, and one of them kept the drain going until
 * its deadline.
 */
const UNUSED_AFTER_MS = 1_000;

export function installGracefulShutdown(app: INestApplication, drainMs: number): void {
  const logger = new Logger('Shutdown');
  const server = app.getHttpServer() as Server;
  // When each open connection was made (per connection, not per request).
  const connectedAt = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    connectedAt.set(socket, Date.now());
    socket.once('close', () => connectedAt.delete(socket));
  });
  const closeUnused = () => {
    const before = Date.now() - UNUSED_AFTER_MS;
    for (const [socket, at] of connectedAt) if (socket.bytesRead === 0 && at <= before) socket.destroy();
  };
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: draining requests in flight (up to ${drainMs} ms)`);
    const deadline = setTimeout(() => {
      logger.warn(`drain deadline of ${drainMs} ms reached: closing the connections of calls still in flight`);
      server.closeAllConnections();
    }, drainMs);
    deadline.unref();
    // A keep-alive connection whose call ended stays open until its client closes it; closing
    // idle ones as calls end lets the drain finish with the last call, not at the deadline.
    const idle = setInterval(() => {
      server.closeIdleConnections();
      closeUnused();
    }, IDLE_SWEEP_MS);
    idle.unref();
    try {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    } finally {
      clearTimeout(deadline);
      clearInterval(idle);
    }
    try {
      await app.close();
      process.exit(0);
    } catch (error) {
      logger.error(`shutdown failed: ${error instanceof Error ? error.stack : String(error)}`);
      process.exit(1);
    }
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, (received) => void stop(received));
}
