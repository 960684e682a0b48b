import type { FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { clientRequestIdOf } from '../metering/call-recorder';
import type { UsageFigures } from '../metering/usage-figures';
import '../forwarding/request-state';
import { endedAt, headWrittenAt } from '../common/timed-response';
import { linesTriedOf } from '../upstream/line-order';

/** Status of a call whose client left before its answer was complete (as in the usage records). */
const CLIENT_CLOSED = 499;

/** Label value for what a request never got to know (its model, its entry). */
export const UNKNOWN = 'none';

/** Everything one request's log line and metrics say, read once when the request is over. */
export interface CallFacts {
  requestId: string;
  clientRequestId: string | null;
  keyPrefix: string | null;
  owner: string | null;
  method: string;
  /** The route's path template (`/v1/chat/completions`, `/admin/owners/:id`); null for an unknown path. */
  route: string | null;
  /** The interface of the call (as in its usage record), else the route template, else `none`. */
  entry: string;
  model: string | null;
  line: string | null;
  /** Attempts on upstream lines (failovers and retries each count one); 0 when none was tried. */
  attempts: number;
  /** The line of each attempt, when there were several; null otherwise. */
  linesTried: readonly string[] | null;
  translatedTo: string | null;
  stream: boolean | null;
  status: number;
  errorCode: string | null;
  durationMs: number;
  upstreamHeadersMs: number | null;
  /** From the first upstream attempt to the end of the upstream answer; null when no line was tried. */
  upstreamMs: number | null;
  /** Until the response head (status and headers, the first bytes the client gets) was written. */
  firstByteMs: number | null;
  usage: UsageFigures | undefined;
  costNano: bigint;
}

/**
 * The facts of a request that is over, at `now` (`performance.now()`): from the guards
 * (principal, admitted call), the forwarded call's record, the exception filter's error code
 * and the raw response. Only reads fields; nothing is parsed. The duration ends when the
 * answer's end was written (else at `now`), not when the call is reported.
 */
export function callFactsOf(request: FastifyRequest, response: ServerResponse, now: number): CallFacts {
  const call = request.call;
  const principal = request.principal;
  const forwarded = request.forwarded;
  const record = forwarded?.record;
  const route = request.routeOptions.url ?? null;
  // A response that closed before it was complete: the client left (or its connection broke).
  const clientLeft = !response.writableFinished && record === undefined;
  const headAt = headWrittenAt(response);
  const attempts = forwarded?.attempts;
  const upstreamMs = record !== undefined && forwarded!.upstreamEndedAt !== undefined ? forwarded!.upstreamEndedAt - forwarded!.upstreamStartedAt : null;
  return {
    requestId: request.id,
    clientRequestId: clientRequestIdOf(request),
    keyPrefix: principal?.displayPrefix ?? null,
    owner: principal?.ownerId ?? null,
    method: request.method,
    route,
    entry: record?.interface ?? call?.entry ?? route ?? UNKNOWN,
    model: call?.model.id ?? null,
    line: record?.line ?? null,
    attempts: attempts?.length ?? 0,
    linesTried: linesTriedOf(attempts),
    translatedTo: record ? record.translatedTo : (call?.translateTo ?? null),
    stream: call ? call.stream : null,
    status: record?.status ?? (clientLeft ? CLIENT_CLOSED : response.statusCode),
    errorCode: record ? record.errorCode : clientLeft ? 'client_closed' : (request.errorCode ?? null),
    durationMs: endedAt(response, now) - request.startedAt,
    upstreamHeadersMs: record?.upstreamHeadersMs ?? null,
    upstreamMs,
    firstByteMs: headAt > 0 ? headAt - request.startedAt : null,
    usage: record?.usage,
    costNano: record?.costNano ?? 0n,
  };
}

/**
 * Health probes and the metrics scrape, by the request's URL (its path before any query):
 * counted nowhere, logged at `debug` only. The URL, not the route template, so the request
 * path never builds Fastify's `routeOptions` object for it.
 */
export function isProbe(url: string): boolean {
  const end = url.indexOf('?');
  const path = end < 0 ? url : url.slice(0, end);
  return path === '/metrics' || path.startsWith('/health/');
}
