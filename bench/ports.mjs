// Ports for the bench scripts' own processes, on 127.0.0.1, and those processes' early exits.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on `port`; gives up after a minute. */
export async function waitForPort(port) {
  for (let i = 0; i < 600; i++) {
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`nothing listens on ${port}`);
}

/**
 * Calls `handle(code or signal)` when `child` exits before the script stops it (it could not
 * start, or it crashed); the returned function says the script is stopping it now.
 */
export function onEarlyExit(child, handle) {
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) handle(code ?? signal);
  });
  return () => {
    stopping = true;
  };
}
