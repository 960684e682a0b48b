import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { GatewayError, statusOf } from '../common/gateway-error';
import { dialectOfPath, errorBody } from '../common/error-body';
import type { InterfaceName } from '../config/gateway-config';
import { ForwardFailure, ForwardService, OpenedResponse } from '../upstream/forward.service';
import { UsageWriter } from '../metering/usage-writer.service';
import { isBodyTimeout } from '../upstream/upstream-failure';
import { CallAbort } from '../upstream/call-abort';
import type { UpstreamBody } from '../upstream/upstream-client';
import { BodySpool, SpooledUpstreamBody } from '../request-body/body-spool';
import type { UsageFigures } from '../metering/usage-figures';
import { CallOutcome, usageDraftOf } from '../metering/call-recorder';
import { CallTelemetry } from '../observability/call-telemetry';
import { endedAt } from '../common/timed-response';

/** Status recorded when the client went away before the answer was complete. */
export const CLIENT_CLOSED = 499;

/** How one call is sent and answered; the rest (abort, failures, the record) is shared. */
export interface CallSpec {
  /** The interface name in the usage record. */
  recordAs: string;
  /** Interface whose header policy and credential style the upstream request follows. */
  upstreamInterface: InterfaceName;
  path: string;
  body: UpstreamBody;
  /** The path and body for a line with its own name for the model (ForwardRequest.forModel). */
  forModel?(upstreamModel: string): { path: string; body: UpstreamBody };
  /** False for a call that must reach the vendor at most once (a video submit): never retried. */
  mayRetry?: boolean;
  incomingHeaders: IncomingHttpHeaders;
  translatedTo?: string;
  /** The upstream call is not aborted when the client leaves: it completes and is billed (images). */
  outlivesClient?: boolean;
  /** Writes the answer to the client; throws when the upstream body breaks off. */
  answer(opened: OpenedResponse, response: ServerResponse): Promise<CallOutcome>;
  /** Usage known so far, for calls that end early. */
  figures(): UsageFigures | undefined;
}

/**
 * The life of one forwarded call: a client that disconnects aborts the upstream request,
 * upstream failures before the answer become the gateway's errors, failures during it are
 * closed off properly, and every call that went upstream leaves exactly one usage record.
 */
@Injectable()
export class ForwardedCall {
  constructor(
    private readonly forwarder: ForwardService,
    private readonly usage: UsageWriter,
    private readonly telemetry: CallTelemetry,
  ) {}

  async run(request: FastifyRequest, reply: FastifyReply, spec: CallSpec): Promise<void> {
    const spool = request.call!.spool;
    // The client left before the call went upstream (while it was admitted, or with its spooled
    // body): nothing is sent, so there is nothing to record.
    if (reply.raw.closed || (spool && !spool.isOpen)) return;
    this.telemetry.upstreamStarted(request);
    if (spool) assertNotSkeleton(spec.body, spool);
    // A spooled body's file stays open for every line tried, even after the client has left.
    spool?.retain();
    try {
      await this.forward(request, reply, spec);
    } finally {
      void spool?.release();
      this.telemetry.upstreamEnded(request, reply);
    }
  }

  private async forward(request: FastifyRequest, reply: FastifyReply, spec: CallSpec): Promise<void> {
    const call = request.call!;
    const abort = new CallAbort();
    const response = reply.raw;
    let clientLeft = false;
    const onClose = () => {
      if (response.writableFinished) return;
      clientLeft = true;
      if (!spec.outlivesClient) abort.abort();
    };
    response.once('close', onClose);
    let opened: OpenedResponse;
    try {
      opened = await this.forwarder.open({
        entry: spec.upstreamInterface,
        model: call.model,
        path: spec.path,
        body: spec.body,
        forModel: spec.forModel,
        mayRetry: spec.mayRetry,
        incomingHeaders: spec.incomingHeaders,
        signal: abort,
        attempts: request.forwarded!.attempts,
      });
    } catch (error) {
      response.off('close', onClose);
      if (error instanceof ForwardFailure) this.record(request, response, spec, failureOutcome(error, clientLeft));
      throw error;
    }
    reply.hijack();
    let outcome: CallOutcome;
    try {
      outcome = await spec.answer(opened, response);
    } catch (error) {
      outcome = brokenOutcome(request, response, opened, spec.figures(), error);
    } finally {
      opened.done();
      response.off('close', onClose);
    }
    if (outcome.deferred) {
      // No record yet; the log line and metrics still see how the call went.
      const { status, line, errorCode, upstreamHeadersMs } = outcome;
      request.forwarded!.record = {
        interface: spec.recordAs,
        translatedTo: spec.translatedTo ?? null,
        status,
        line,
        errorCode,
        upstreamHeadersMs,
        usage: undefined,
        costNano: 0n,
      };
      return;
    }
    // The figures stay: what the upstream reported is billed even when the client did not see it.
    if (clientLeft && outcome.status !== CLIENT_CLOSED) outcome = { ...outcome, status: CLIENT_CLOSED, errorCode: 'client_closed' };
    this.record(request, response, spec, outcome);
  }

  private record(request: FastifyRequest, response: ServerResponse, spec: CallSpec, outcome: CallOutcome): void {
    const draft = usageDraftOf(request, spec.recordAs, outcome, spec.translatedTo ?? null, endedAt(response, performance.now()));
    request.forwarded!.record = draft;
    this.usage.enqueue(draft);
  }
}

/**
 * Why an upstream answer could not be read to its end: its body stalled for the line's
 * `timeout_ms` (504 `upstream_timeout`), or it broke off or could not be understood (502
 * `upstream_failed`; a GatewayError thrown by the answer says which).
 */
export function bodyFailureOf(error: unknown, opened: OpenedResponse): GatewayError {
  if (isBodyTimeout(error)) return new GatewayError('upstream_timeout', `The upstream sent nothing for ${opened.line.config.timeoutMs} ms.`);
  if (error instanceof GatewayError) return error;
  return new GatewayError('upstream_failed', 'The upstream broke off its answer before it was complete.');
}

/**
 * The answer could not be completed: the client left (499), or the upstream failed before
 * the gateway had sent anything (502 or 504 to the client, see bodyFailureOf), or after
 * (the client's connection is closed, so it sees a truncated answer).
 */
function brokenOutcome(
  request: FastifyRequest,
  response: ServerResponse,
  opened: OpenedResponse,
  figures: UsageFigures | undefined,
  error: unknown,
): CallOutcome {
  const base = { line: opened.line.id, figures, upstreamHeadersMs: opened.headersMs };
  if (response.destroyed) return { ...base, status: CLIENT_CLOSED, errorCode: 'client_closed' };
  const failure = bodyFailureOf(error, opened);
  if (response.headersSent) {
    response.destroy();
    return { ...base, status: opened.statusCode, errorCode: failure.code === 'upstream_timeout' ? failure.code : 'upstream_stream_broken' };
  }
  const body = errorBody(failure, dialectOfPath(request.url));
  response.writeHead(statusOf(failure.code), { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  response.end(body);
  return { ...base, status: statusOf(failure.code), errorCode: failure.code };
}

function failureOutcome(error: ForwardFailure, clientGone: boolean): CallOutcome {
  return {
    status: clientGone ? CLIENT_CLOSED : statusOf(error.code),
    line: error.line.id,
    errorCode: clientGone ? 'client_closed' : error.code,
    figures: undefined,
    upstreamHeadersMs: null,
  };
}

/** A route that cut its body from a spooled body's skeleton but forgot the spool would send the skeleton: refused, never sent. */
function assertNotSkeleton(body: UpstreamBody, spool: BodySpool): void {
  if (body instanceof SpooledUpstreamBody) return;
  const skeleton = spool.skeleton.bytes.buffer;
  const pieces = Array.isArray(body) ? (body as readonly Buffer[]) : [body as Buffer];
  if (pieces.some((piece) => piece.buffer === skeleton))
    throw new Error('A spooled body was about to go upstream as its skeleton (upstreamBodyOf without the spool).');
}

export function isEventStream(opened: OpenedResponse): boolean {
  const type = opened.headers['content-type'];
  return typeof type === 'string' && type.startsWith('text/event-stream');
}

/** Resolves when the client can take more bytes; rejects when it went away. */
export function drained(response: ServerResponse): Promise<void> {
  if (response.destroyed) return Promise.reject(new Error('client closed'));
  return new Promise((resolve, reject) => {
    const onDrain = () => {
      response.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      response.off('drain', onDrain);
      reject(new Error('client closed'));
    };
    response.once('drain', onDrain);
    response.once('close', onClose);
  });
}
