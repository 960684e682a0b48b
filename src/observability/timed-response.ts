import { ServerResponse } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * The server's response class: notes when the response head was written. Every way of
 * answering goes through `writeHead` (Fastify's send, streamed answers on the raw response,
 * and a first `write` without it, through Node's implicit head), so this is the time to first
 * byte of every call without a listener or a wrapper per request.
 */
export class TimedServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /** `performance.now()` when the head was written; 0 until then. */
  headWrittenAt = 0;

  // Node's overloads are (status, reason?, headers?) and (status, headers?): passed on as given.
  override writeHead(statusCode: number, reasonOrHeaders?: any, headers?: any): this {
    if (this.headWrittenAt === 0) this.headWrittenAt = performance.now();
    return super.writeHead(statusCode, reasonOrHeaders, headers);
  }
}

/** When the response head was written (`performance.now()`), or 0: not yet, or not a TimedServerResponse. */
export function headWrittenAt(response: ServerResponse): number {
  return (response as Partial<TimedServerResponse>).headWrittenAt ?? 0;
}
