import pino, { DestinationStream, Logger } from 'pino';
import type { LogLevelName } from '../config/gateway-options';
import type { CallFacts } from './call-facts';
import type { TraceIds } from './trace-ids';
import { BatchedDestination, ChunkWriter } from './batched-destination';

/** Token of the application's pino logger (call lines and Nest's own messages). */
export const GATEWAY_LOG = Symbol('GATEWAY_LOG');

/**
 * The gateway's JSON logger at `level`, writing to `destination` (tests) or to standard
 * output. Standard output is written in 64 KiB chunks (BatchedDestination), so a call rarely
 * meets a write; a line waits at most a second, and what is left is written when the process
 * exits. `time` is pino's epoch milliseconds.
 */
export function createGatewayLog(level: LogLevelName, destination?: DestinationStream): Logger {
  return pino({ level }, destination ?? (level === 'silent' ? { write: () => undefined } : new BatchedDestination(standardOutput())));
}

/** pino's synchronous writer on standard output, taking bytes (its typings only know strings). */
function standardOutput(): ChunkWriter {
  return pino.destination({ dest: 1, sync: true, contentMode: 'buffer' }) as unknown as ChunkWriter;
}

function milliseconds(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

/**
 * `String(milliseconds(value))`, from whole tenths: two integers to write instead of a fraction
 * to format (V8's shortest-decimal conversion of a double, four times per call line).
 */
export function millisecondsText(value: number | null): string {
  if (value === null) return 'null';
  const tenths = Math.round(value * 10);
  if (!(tenths >= 0 && tenths <= Number.MAX_SAFE_INTEGER)) return String(tenths / 10);
  const whole = Math.floor(tenths / 10);
  const tenth = tenths - whole * 10;
  return tenth === 0 ? String(whole) : `${whole}.${tenth}`;
}

/**
 * The one log line of a call: who (request ids, key prefix, owner), what (entry, model, line,
 * the attempts on lines when there were several, translation), how it ended (status, error code) and how long it took; with tracing on, the
 * ids of its server span (`trace`). Never a key, a header value or a body: the fields are named
 * one by one, nothing is copied from the request.
 */
export function callLogLine(facts: CallFacts, trace?: TraceIds): Record<string, unknown> {
  const line: Record<string, unknown> = {
    request_id: facts.requestId,
    client_request_id: facts.clientRequestId,
    key_prefix: facts.keyPrefix,
    owner: facts.owner,
    method: facts.method,
    route: facts.route,
    entry: facts.entry,
    model: facts.model,
    line: facts.line,
    attempts: facts.attempts,
    ...(facts.linesTried !== null ? { lines_tried: facts.linesTried } : {}),
    translated_to: facts.translatedTo,
    stream: facts.stream,
    status: facts.status,
    error_code: facts.errorCode,
    duration_ms: milliseconds(facts.durationMs),
    upstream_headers_ms: milliseconds(facts.upstreamHeadersMs),
    upstream_ms: milliseconds(facts.upstreamMs),
    first_byte_ms: milliseconds(facts.firstByteMs),
  };
  if (trace !== undefined) {
    line.trace_id = trace.traceId;
    line.span_id = trace.spanId;
  }
  return line;
}

/** What JSON.stringify escapes in a string: quote, backslash, control characters, and surrogates (lone ones are escaped). */
// eslint-disable-next-line no-control-regex -- control characters are exactly what it looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON text of a value of the line: a string, a number or boolean, or null. Most strings of a
 * line (ids, model, route) need no escaping: quoted as they are, which costs half of
 * JSON.stringify's call for each.
 */
function json(value: string | number | boolean | null): string {
  if (typeof value !== 'string') return String(value);
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/** pino's numbers for the levels of call lines. */
const LEVEL_NUMBERS = { info: 30, warn: 40 } as const;

/**
 * The call line exactly as `log[level](callLogLine(facts, trace), 'call')` writes it (same members in
 * the same order, pino's `chindings` (pid, hostname) and `time`), built as one template: pino's
 * generic serializer (a check per member, a string escaper of its own) and the intermediate
 * object take noticeable CPU per call, and a busy gateway writes thousands of these a
 * second. call-log.spec.ts holds the two outputs equal; they differ only for lone surrogates,
 * which the line escapes as JSON.stringify does and pino writes raw (its UTF-8 output then
 * holds U+FFFD instead).
 */
export function callLogText(facts: CallFacts, level: keyof typeof LEVEL_NUMBERS, chindings: string, time: number, trace?: TraceIds): string {
  return (
    `{"level":${LEVEL_NUMBERS[level]},"time":${time}${chindings}` +
    `,"request_id":${json(facts.requestId)},"client_request_id":${json(facts.clientRequestId)}` +
    `,"key_prefix":${json(facts.keyPrefix)},"owner":${json(facts.owner)},"method":${json(facts.method)}` +
    `,"route":${json(facts.route)},"entry":${json(facts.entry)},"model":${json(facts.model)},"line":${json(facts.line)}` +
    `,"attempts":${facts.attempts}${facts.linesTried === null ? '' : `,"lines_tried":${JSON.stringify(facts.linesTried)}`}` +
    `,"translated_to":${json(facts.translatedTo)},"stream":${json(facts.stream)},"status":${facts.status}` +
    `,"error_code":${json(facts.errorCode)},"duration_ms":${millisecondsText(facts.durationMs)}` +
    `,"upstream_headers_ms":${millisecondsText(facts.upstreamHeadersMs)},"upstream_ms":${millisecondsText(facts.upstreamMs)}` +
    `,"first_byte_ms":${millisecondsText(facts.firstByteMs)}${trace === undefined ? '' : traceMembers(trace)},"msg":"call"}\n`
  );
}

/** The trace members of a traced call's line: hex digits, nothing to escape. */
function traceMembers(trace: TraceIds): string {
  return `,"trace_id":"${trace.traceId}","span_id":"${trace.spanId}"`;
}

/** Server errors are worth a look even when the log is set to `warn`. */
export function callLogLevel(facts: CallFacts): 'info' | 'warn' {
  return facts.status >= 500 ? 'warn' : 'info';
}
