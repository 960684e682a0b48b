import pino, { DestinationStream, Logger } from 'pino';
import type { LogLevelName } from '../gateway-options';
import type { CallFacts } from './call-facts';

/** Token of the application's pino logger (call lines and Nest's own messages). */
export const GATEWAY_LOG = Symbol('GATEWAY_LOG');

/** Standard output is written in chunks of at least this many bytes, or every second (pino's `minLength`, `periodicFlush`). */
const STDOUT_CHUNK_BYTES = 4096;
const STDOUT_FLUSH_MS = 1_000;

/**
 * The gateway's JSON logger at `level`, writing to `destination` (tests) or to standard
 * output. Standard output is written asynchronously and in chunks, so a call never waits for
 * a write and a busy gateway makes one write per dozen lines; a line waits at most a second,
 * and pino flushes what is left when the process exits. `time` is pino's epoch milliseconds.
 */
export function createGatewayLog(level: LogLevelName, destination?: DestinationStream): Logger {
  const stream =
    destination ??
    (level === 'silent'
      ? { write: () => undefined }
      : pino.destination({ dest: 1, sync: false, minLength: STDOUT_CHUNK_BYTES, periodicFlush: STDOUT_FLUSH_MS }));
  return pino({ level }, stream);
}

function milliseconds(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

/**
 * The one log line of a call: who (request ids, key prefix, owner), what (entry, model, line,
 * translation), how it ended (status, error code) and how long it took. Never a key, a header
 * value or a body: the fields are named one by one, nothing is copied from the request.
 */
export function callLogLine(facts: CallFacts): Record<string, unknown> {
  return {
    request_id: facts.requestId,
    client_request_id: facts.clientRequestId,
    key_prefix: facts.keyPrefix,
    owner: facts.owner,
    method: facts.method,
    route: facts.route,
    entry: facts.entry,
    model: facts.model,
    line: facts.line,
    translated_to: facts.translatedTo,
    stream: facts.stream,
    status: facts.status,
    error_code: facts.errorCode,
    duration_ms: milliseconds(facts.durationMs),
    upstream_headers_ms: milliseconds(facts.upstreamHeadersMs),
    upstream_ms: milliseconds(facts.upstreamMs),
    first_byte_ms: milliseconds(facts.firstByteMs),
  };
}

/** Server errors are worth a look even when the log is set to `warn`. */
export function callLogLevel(facts: CallFacts): 'info' | 'warn' {
  return facts.status >= 500 ? 'warn' : 'info';
}
