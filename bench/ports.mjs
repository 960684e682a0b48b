// Ports for the bench scripts' own processes, on 127.0.0.1, those processes' early exits, and
// their JSON answers.
import fs from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

/**
 * The JSON answer of one of the bench's own processes (the gateway's control port, the
 * simulator's stats, an admin read), without a time limit: `/usage` writes and audits every
 * record of the run first, minutes on the embedded database after millions of calls, past
 * undici's default 300 s for the headers. Anything but 200 throws.
 */
export async function getJson(url, { method = 'GET', headers = {} } = {}) {
  const response = await request(url, { method, headers, headersTimeout: 0, bodyTimeout: 0 });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`${method} ${url}: ${response.statusCode} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

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

/**
 * When this script exits, however it exits (an error it did not catch, SIGINT or SIGTERM
 * included), kills the processes it started that still run and removes `folder`: a failed or
 * stopped run leaves no gateway behind to load the machine.
 */
export function killOnExit(children, folder) {
  // A signal's default action ends the process without 'exit'; exiting from its handler emits it.
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  process.once('exit', () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });
}
