import { randomUUID } from 'node:crypto';
import { type IncomingMessage, maxHeaderSize, type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from './gateway-error';
import { dialectOfPath, errorBody, type ErrorDialect } from './error-body';

const HEADER_LIMIT = `${Math.round(maxHeaderSize / 1024)} KiB`;

/** What Node's parser reports with a refused request (https://nodejs.org/api/http.html#event-clienterror). */
export interface ClientError extends NodeJS.ErrnoException {
  /** Node's words for the fault, e.g. "Invalid header token". */
  reason?: string;
  /** The chunk being parsed (a Buffer), and the offset of the fault in it. */
  rawPacket?: unknown;
  bytesParsed?: number;
}

/** A whole answer written straight to a socket, for requests no route will see. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** The status line and the headers, as written to a socket. */
  head: string;
  body: string;
}

/**
 * Answers for requests Node's HTTP parser refuses before any route sees them: a request not
 * received within REQUEST_TIMEOUT_MS (408), a request line and headers over Node's header limit
 * (431), bytes that are not HTTP (400). Fastify's own answer is a JSON of its own shape without
 * a request id; this one is the gateway's error shape with an `X-Request-Id`, and the connection
 * is closed as Node does. The shape is the path's when the path is known (clientErrorPath), else
 * the chat shape.
 */
export function clientErrorAnswer(error: ClientError, path?: string, requestId?: string): RawAnswer {
  const [status, message] = refusalOf(error);
  return rawAnswer(status, new GatewayError('invalid_request', message), path, requestId);
}

function refusalOf(error: ClientError): [number, string] {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'The request was not received in time (REQUEST_TIMEOUT_MS); send the whole request without pausing.'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, `The request line (the URL included) and headers are larger than ${HEADER_LIMIT}.`];
    case 'HPE_INVALID_METHOD':
      return [400, 'The request method is not an HTTP method.'];
    default:
      return [400, error.reason ? `The request is not valid HTTP/1.1 (${error.reason}).` : 'The request is not valid HTTP/1.1.'];
  }
}

/** A request line: method, an origin-form path, version. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ (\/[^ ]*) HTTP\/\d\.\d$/;

/**
 * The path of the request Node's parser refused, when the packet it was parsing starts with that
 * request's line and the fault lies within that request's head; undefined otherwise (a pipelined
 * request, a head split across packets, a URL too long to end in the packet).
 */
export function clientErrorPath(error: ClientError): string | undefined {
  const packet = error.rawPacket;
  if (!Buffer.isBuffer(packet)) return undefined;
  const lineEnd = packet.indexOf('\r\n');
  if (lineEnd === -1) return undefined;
  const headEnd = packet.indexOf('\r\n\r\n');
  if (headEnd !== -1 && (error.bytesParsed ?? 0) >= headEnd + 4) return undefined;
  return REQUEST_LINE.exec(packet.toString('latin1', 0, lineEnd))?.[1];
}

/**
 * A whole answer with `connection: close`. The generateContent shape carries the HTTP status in
 * its body: it is set to the one written, which some of these answers have outside the gateway's
 * own codes (408, 417, 431).
 */
function rawAnswer(status: number, error: GatewayError, path: string | undefined, requestId: string = randomUUID()): RawAnswer {
  const dialect: ErrorDialect = path === undefined ? 'openai' : dialectOfPath(path);
  let body = errorBody(error, dialect);
  if (dialect === 'generate_content') {
    const parsed = JSON.parse(body) as { error: { code: number } };
    parsed.error.code = status;
    body = JSON.stringify(parsed);
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    ...(dialect === 'messages' ? { 'request-id': requestId } : {}),
    connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return { status, headers, head: `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n`, body };
}

/** The response in flight on a socket (Node's own record of it, which its default clientError handling reads too). */
function responseInFlight(socket: Socket): (ServerResponse & { requestId?: string }) | undefined {
  const response = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  return response instanceof ServerResponse ? response : undefined;
}

/** Fastify's `clientErrorHandler`: writes clientErrorAnswer when the socket can still take it. */
export function answerClientError(error: ClientError, socket: Socket): void {
  // A reset connection has nobody to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = responseInFlight(socket);
  // Bytes of an answer already on their way: another answer would corrupt it (Node's own rule).
  if (socket.writable && !inFlight?.headersSent) {
    // A request timed out while its body was coming: the path and request id of that call.
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && inFlight?.req && !inFlight.req.complete ? inFlight : undefined;
    const answer = clientErrorAnswer(error, timedOut ? timedOut.req.url : clientErrorPath(error), timedOut?.requestId);
    socket.write(answer.head + answer.body);
  }
  socket.destroy(error);
}

/**
 * The answer to a request Node would answer itself with an empty body and no request id:
 * CONNECT (Node closes the connection without a word) gets the 404 of a method no route takes;
 * an `Expect` other than `100-continue` gets 417.
 */
export function connectAnswer(request: IncomingMessage): RawAnswer {
  return rawAnswer(404, new GatewayError('not_found', 'No such endpoint.'), request.url?.startsWith('/') ? request.url : undefined);
}

export function expectationAnswer(request: IncomingMessage): RawAnswer {
  return rawAnswer(417, new GatewayError('invalid_request', 'The only expectation the gateway meets is "Expect: 100-continue".'), request.url);
}

/** Installs the answers above on the gateway's HTTP server. */
export function answerServerRefusals(server: Server): void {
  server.on('connect', (request: IncomingMessage, socket: Socket) => {
    const answer = connectAnswer(request);
    socket.on('error', () => undefined);
    socket.end(answer.head + answer.body);
  });
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const answer = expectationAnswer(request);
    // Through the response, so Node keeps its account of the connection; the socket closes after it.
    response.shouldKeepAlive = false;
    response.writeHead(answer.status, answer.headers).end(answer.body);
  });
}

/**
 * HTTP/1.1 requests carry a Host header (RFC 9112 section 3.2). Node refuses one without it with
 * an empty 400 before any route sees it; the gateway turns that check off (`requireHostHeader`)
 * and refuses here, in an onRequest hook, so the answer has the path's shape and a request id.
 */
export function missingHostRefusal(request: IncomingMessage): GatewayError | undefined {
  if (request.headers.host !== undefined || request.httpVersionMajor !== 1 || request.httpVersionMinor !== 1) return undefined;
  return new GatewayError('invalid_request', 'An HTTP/1.1 request must carry a Host header.');
}
