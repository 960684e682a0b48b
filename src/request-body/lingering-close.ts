import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long and how much of a refused body is read and dropped before its connection is closed. */
export interface LingerBounds {
  /** From the refusal to the close, whatever the client does. */
  totalMs: number;
  /** Without a byte from the client. */
  idleMs: number;
  /** Bytes of the refused body dropped, at most. */
  maxBytes: number;
}

/** As nginx's lingering_time and lingering_timeout; the byte cap is twice the 32 MiB body limit. */
export const LINGER_BOUNDS: LingerBounds = { totalMs: 30_000, idleMs: 5_000, maxBytes: 64 * 1024 * 1024 };

/**
 * Called when a request is answered before its body was read (413, 400): reads and drops the
 * rest of the body, within `bounds`, before the connection closes. Node closes a `connection:
 * close` response's socket as soon as the answer is written; with body bytes still unread the
 * kernel then sends a reset, and the client's TCP stack throws away the answer it had not read
 * yet (EPIPE or ECONNRESET instead of the 413). Here the socket is only half-closed after the
 * answer (the client sees its end), and destroyed once the body has ended, the client has gone
 * or a bound is hit. A request whose body was wholly received is left as it is.
 */
export function lingerAfterRefusal(request: IncomingMessage, bounds: LingerBounds = LINGER_BOUNDS): void {
  const socket: Socket | null = request.socket;
  if (request.complete || !socket || socket.destroyed || Object.hasOwn(socket, 'destroySoon')) return;
  let dropped = 0;
  let answered = false;
  const stop = () => {
    clearTimeout(total);
    clearTimeout(idle);
    request.off('data', onData);
    request.off('end', onEnd);
    socket.off('close', stop);
    delete (socket as Partial<Pick<Socket, 'destroySoon'>>).destroySoon;
  };
  const cut = () => {
    stop();
    socket.destroy();
  };
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > bounds.maxBytes) cut();
    else idle.refresh();
  };
  const onEnd = () => {
    stop();
    // Nothing unread any more: Node's own close, now or once the answer is written.
    if (answered) socket.destroySoon();
  };
  const total = setTimeout(cut, bounds.totalMs).unref();
  const idle = setTimeout(cut, bounds.idleMs).unref();
  // Node's HTTP server calls this once the `connection: close` answer is written (resOnFinish).
  socket.destroySoon = () => {
    answered = true;
    socket.end();
  };
  request.on('data', onData);
  request.once('end', onEnd);
  socket.once('close', stop);
  // The body reader may have paused it (spooling waits for the disk); a paused request stops the socket.
  request.resume();
}
