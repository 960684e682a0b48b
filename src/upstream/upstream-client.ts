import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Dispatcher, errors } from 'undici';
import type { Line } from './line-registry';
import type { CallAbort } from './call-abort';
import { BodySpool, SpooledUpstreamBody } from '../request-body/body-spool';
import { AnswerBody } from './answer-body';

/** A request body: one buffer, consecutive pieces of one (a large body is not joined), or pieces of a spooled body. */
export type UpstreamBody = Buffer | readonly Buffer[] | SpooledUpstreamBody;

/** Pieces smaller than this together are joined: one write beats an iterable for small bodies. */
const JOIN_BELOW_BYTES = 1 << 20;

/**
 * The body to send for these pieces: joined when small, left in pieces when large. Pieces cut
 * from a spooled body's skeleton (`spool` given) stand for the file's bytes.
 */
export function upstreamBodyOf(parts: readonly Buffer[], spool?: BodySpool): UpstreamBody {
  if (spool) return spool.upstreamBody(parts);
  let length = 0;
  for (const part of parts) length += part.length;
  return length < JOIN_BELOW_BYTES ? Buffer.concat(parts as Buffer[], length) : parts;
}

export interface UpstreamRequest {
  method: 'POST' | 'GET' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: UpstreamBody;
  signal: CallAbort;
  /** Told when the answer's body fails after its head arrived (a body timeout, a reset, an abort). */
  onBodyFailure?(error: Error): void;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: AnswerBody;
}

/** The upstream HTTP boundary: one request on one line's keep-alive pool. */
@Injectable()
export class UpstreamClient {
  send(line: Line, request: UpstreamRequest): Promise<UpstreamResponse> {
    if (request.signal.aborted) return Promise.reject(new errors.RequestAbortedError());
    const body = request.body;
    const spooled = body instanceof SpooledUpstreamBody ? body : undefined;
    const pieces = Array.isArray(body) ? (body as readonly Buffer[]) : undefined;
    // undici cannot know the length of pieces; the upstream gets it as for a single buffer.
    const length = spooled ? spooled.length : pieces ? pieces.reduce((sum, piece) => sum + piece.length, 0) : undefined;
    return new Promise((resolve, reject) => {
      const handler = new AnswerHandler(request, resolve, reject);
      line.pool.dispatch(
        {
          method: request.method,
          path: request.path,
          headers: length === undefined ? request.headers : { ...request.headers, 'content-length': String(length) },
          // undici writes any (async) iterable of chunks (its type declarations list single values only).
          body: (spooled ? spooled.chunks() : (pieces ?? body)) as Buffer | undefined,
          headersTimeout: line.config.timeoutMs,
          bodyTimeout: line.config.timeoutMs,
        },
        handler,
      );
    });
  }
}

/**
 * One upstream request's dispatch handler: settles `send` when the head arrives (or the request
 * fails before it), then feeds the answer's body. The call's abort gives the request up at
 * any point. 1xx heads are informational and skipped.
 *
 * What the handler holds of the call (the request, the promise's settlers, which reach the whole
 * call through the awaiting functions) is let go of as soon as it is used: undici may keep a
 * finished handler a while, and a call kept alive by it would outlive young-generation
 * collections (with neither this nor AnswerBody's release, several times the bytes are promoted
 * per chat call).
 */
class AnswerHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private body: AnswerBody | undefined;
  private readonly onAbort = () => this.controller?.abort(new errors.RequestAbortedError());

  constructor(
    private request: UpstreamRequest | undefined,
    private resolve: ((response: UpstreamResponse) => void) | undefined,
    private reject: ((error: Error) => void) | undefined,
  ) {
    request!.signal.once('abort', this.onAbort);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.request?.signal.aborted) controller.abort(new errors.RequestAbortedError());
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200 || this.resolve === undefined) return;
    const resolve = this.resolve;
    this.resolve = this.reject = undefined;
    this.body = new AnswerBody(controller);
    resolve({ statusCode, headers, body: this.body });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.body?.push(chunk);
  }

  onResponseEnd(): void {
    this.finish();
    this.body?.end();
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    const reject = this.reject;
    const request = this.finish();
    if (reject !== undefined) return reject(error);
    request?.onBodyFailure?.(error);
    this.body?.fail(error);
  }

  /** The request is over: its abort is not listened for any more, and the handler lets go of the call. */
  private finish(): UpstreamRequest | undefined {
    const request = this.request;
    request?.signal.off('abort', this.onAbort);
    this.request = this.resolve = this.reject = undefined;
    this.controller = undefined;
    return request;
  }
}
