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
  /** `performance.now()` when the answer's end was written (`end`); 0 until then. */
  endedAt = 0;
  /** The request id every answer carries as `x-request-id` (and `request-id`, see below), added to the head. */
  requestId: string | undefined = undefined;
  /** Also as `request-id`: the messages SDK reads its request id from there. */
  requestIdForMessages = false;

  // Node's overloads are (status, reason?, headers?) and (status, headers?): passed on as given.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override writeHead(statusCode: number, reasonOrHeaders?: any, headers?: any): this {
    if (this.headWrittenAt === 0) this.headWrittenAt = performance.now();
    if (this.requestId !== undefined) this.addRequestId(typeof reasonOrHeaders === 'string' ? headers : reasonOrHeaders);
    return super.writeHead(statusCode, reasonOrHeaders, headers);
  }

  /** A call lasts until here, not until its record and log line: those may wait for the loop's check phase (nextCheckPhase). */
  override end(...args: unknown[]): this {
    if (this.endedAt === 0) this.endedAt = performance.now();
    return (super.end as (...given: unknown[]) => this).apply(this, args);
  }

  /**
   * Into the headers object the head is written with, when there is one: a header set earlier
   * with `setHeader` puts node's `writeHead` on its slow path, every header of the answer
   * going through `setHeader` again (a measurable share of a call's instructions). Every
   * `writeHead` of the gateway (and Fastify's) passes an object of its own, which is why it may
   * be written to.
   */
  private addRequestId(given: unknown): void {
    // Kept after this: a head that failed (an invalid header) leaves the next try its id too.
    const id = this.requestId!;
    if (given !== null && typeof given === 'object' && !Array.isArray(given)) {
      const headers = given as Record<string, unknown>;
      headers['x-request-id'] = id;
      if (this.requestIdForMessages) headers['request-id'] = id;
      return;
    }
    this.setHeader('x-request-id', id);
    if (this.requestIdForMessages) this.setHeader('request-id', id);
  }
}

/**
 * Makes every answer on `response` carry the request id as `x-request-id` (and as `request-id`,
 * `forMessages`). A TimedServerResponse adds them as its head is written; any other response
 * gets them with `setHeader` now.
 */
export function carryRequestId(response: ServerResponse, id: string, forMessages: boolean): void {
  if (response instanceof TimedServerResponse) {
    response.requestId = id;
    response.requestIdForMessages = forMessages;
    return;
  }
  response.setHeader('x-request-id', id);
  if (forMessages) response.setHeader('request-id', id);
}

/** When the response head was written (`performance.now()`), or 0: not yet, or not a TimedServerResponse. */
export function headWrittenAt(response: ServerResponse): number {
  return (response as Partial<TimedServerResponse>).headWrittenAt ?? 0;
}

/** When the answer's end was written (`performance.now()`), or else `now`: a call lasts until then. */
export function endedAt(response: ServerResponse, now: number): number {
  return (response as Partial<TimedServerResponse>).endedAt || now;
}
