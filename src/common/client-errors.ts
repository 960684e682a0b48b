import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from './gateway-error';
import { errorBody } from './error-body';

/**
 * Answers for requests Node's HTTP parser refuses before any route sees them: a request not
 * received within REQUEST_TIMEOUT_MS (408), headers over Node's 16 KiB limit (431), bytes that
 * are not HTTP (400). Fastify's own answer is a JSON of its own shape without a request id;
 * this one is the gateway's error shape (the chat shape: the parser may not have read the
 * path, so the entry's own shape cannot be known) with an `X-Request-Id`, and the connection
 * is closed as Node does.
 */
export function clientErrorAnswer(error: NodeJS.ErrnoException): { status: number; head: string; body: string } {
  const [status, message] = refusalOf(error.code);
  const body = errorBody(new GatewayError('invalid_request', message), 'openai');
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${randomUUID()}\r\nconnection: close\r\n\r\n`;
  return { status, head, body };
}

function refusalOf(code: string | undefined): [number, string] {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'The request was not received in time (REQUEST_TIMEOUT_MS); send the whole request without pausing.'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'The request headers are larger than 16 KiB.'];
    default:
      return [400, 'The request is not valid HTTP/1.1.'];
  }
}

/** Fastify's `clientErrorHandler`: writes clientErrorAnswer when the socket can still take it. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has nobody to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const answer = clientErrorAnswer(error);
    socket.write(answer.head + answer.body);
  }
  socket.destroy(error);
}
