import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { ShutdownState } from './shutdown-state';

/**
 * SIGTERM / SIGINT: readiness answers 503 at once; for `delayMs` the server still accepts and
 * serves calls, so that a load balancer following readiness stops sending first; then it stops
 * accepting, lets calls and streams in flight finish (up to `drainMs`, then their connections
 * are closed), runs the application's shutdown hooks (usage flush, pools, database) and exits 0.
 * A second signal during the delay starts the drain at once: an operator who repeats it wants
 * the process gone sooner.
 *
 * Nest's own shutdown hooks close the HTTP server only after the other hooks ran, which would
 * let in-flight calls end after the usage writer's last flush; hence this order.
 */
export function installGracefulShutdown(app: INestApplication, drainMs: number, delayMs = 0): void {
  const logger = new Logger('Shutdown');
  const state = app.get(ShutdownState);
  const server = app.getHttpServer() as Server;
  const closeUnused = trackConnections(server);
  let phase: 'serving' | 'delaying' | 'draining' = 'serving';
  let endDelay = () => {};
  const drain = (signal: NodeJS.Signals) => {
    phase = 'draining';
    // From here the signal that started the shutdown has its default action again: repeated
    // during the drain, it ends the process at once.
    process.removeListener(signal, onSignal);
    void drainAndExit(app, signal, { server, drainMs, closeUnused, logger });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (phase === 'draining') return;
    if (phase === 'delaying') {
      logger.log(`${signal} during the readiness delay: draining now`);
      return endDelay();
    }
    state.begin(signal);
    if (delayMs <= 0) return drain(signal);
    phase = 'delaying';
    logger.log(`${signal}: readiness 503 for ${delayMs} ms before draining`);
    const timer = setTimeout(() => endDelay(), delayMs);
    endDelay = () => {
      clearTimeout(timer);
      drain(signal);
    };
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, onSignal);
}

/** While draining, how often connections whose calls have ended are closed. */
const IDLE_SWEEP_MS = 100;
/**
 * A connection that has received nothing for this long is a client's spare one (load balancers
 * and HTTP clients open them ahead of need): closed while draining. Node's closeIdleConnections
 * leaves a connection that never carried a request, and one of them kept the drain going until
 * its deadline.
 */
const UNUSED_AFTER_MS = 1_000;

/** Notes when each connection was made (per connection, not per request); returns a sweep that closes the unused ones. */
function trackConnections(server: Server): () => void {
  const connectedAt = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    connectedAt.set(socket, Date.now());
    socket.once('close', () => connectedAt.delete(socket));
  });
  return () => {
    const before = Date.now() - UNUSED_AFTER_MS;
    for (const [socket, at] of connectedAt) if (socket.bytesRead === 0 && at <= before) socket.destroy();
  };
}

interface Drain {
  server: Server;
  drainMs: number;
  closeUnused: () => void;
  logger: Logger;
}

async function drainAndExit(app: INestApplication, signal: NodeJS.Signals, { server, drainMs, closeUnused, logger }: Drain): Promise<void> {
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
}
