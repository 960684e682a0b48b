import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';

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

export function installGracefulShutdown(app: INestApplication, drainMs: number): void {
  const logger = new Logger('Shutdown');
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: draining requests in flight (up to ${drainMs} ms)`);
    const server = app.getHttpServer() as Server;
    const deadline = setTimeout(() => {
      logger.warn(`drain deadline of ${drainMs} ms reached: closing the connections of calls still in flight`);
      server.closeAllConnections();
    }, drainMs);
    deadline.unref();
    // A keep-alive connection whose call ended stays open until its client closes it; closing
    // idle ones as calls end lets the drain finish with the last call, not at the deadline.
    const idle = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
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
