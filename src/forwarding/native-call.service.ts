import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { GatewayError, statusOf } from '../common/gateway-error';
import type { InterfaceName } from '../config/gateway-config';
import { dialectOfPath, errorBody, ErrorDialect } from '../common/error-body';
import type { OpenedResponse } from '../upstream/forward.service';
import { returnedResponseHeaders } from '../upstream/header-policy';
import type { CallOutcome } from '../metering/call-recorder';
import { bodyFailureOf, drained, ForwardedCall, isEventStream } from './forwarded-call';
import { MeteredEvents } from './metered-events';
import { NativeRoute, onLineModel, upstreamPathOf } from './native-route';
import type { ResponseMeter } from '../metering/response-meter';
import { inStreamError } from './stream-errors';
import { nextCheckPhase } from '../common/next-check-phase';

/**
 * Native forwarding: the client's bytes go upstream with only `model` changed, and the
 * upstream's bytes come back unchanged, metered on the way (DESIGN.md section 6).
 */
@Injectable()
export class NativeCallService {
  constructor(private readonly calls: ForwardedCall) {}

  forward(request: FastifyRequest, reply: FastifyReply, route: NativeRoute): Promise<void> {
    const call = request.call!;
    const refusal = route.refusal?.(call);
    if (refusal) return Promise.reject(new GatewayError('invalid_request', refusal));
    const meter = route.meter(call);
    return this.calls.run(request, reply, {
      recordAs: route.name,
      upstreamInterface: call.entry,
      path: upstreamPathOf(route, call),
      body: route.upstreamBody(call),
      // Only a model whose lines rename it needs a body per line: no closure on every call.
      forModel: call.model.lineModels
        ? (upstreamModel) => {
            const lineCall = onLineModel(call, upstreamModel);
            return { path: upstreamPathOf(route, lineCall), body: route.upstreamBody(lineCall) };
          }
        : undefined,
      incomingHeaders: request.headers,
      outlivesClient: route.outlivesClient,
      answer: (opened, response) =>
        isEventStream(opened) && opened.statusCode < 300
          ? this.pipeStream(opened, response, meter, call.entry, dialectOfPath(request.url))
          : this.sendWhole(opened, response, meter),
      figures: () => meter.figures(),
    });
  }

  private async sendWhole(opened: OpenedResponse, response: ServerResponse, meter: ResponseMeter): Promise<CallOutcome> {
    const body = await opened.body.whole();
    // The body is read: the line's slot is free before the wait below (ForwardedCall calls `done` again; it is idempotent).
    opened.done();
    const headers = returnedResponseHeaders(opened.headers);
    headers['content-type'] = (opened.headers['content-type'] as string | undefined) ?? 'application/json';
    headers['content-length'] = body.length;
    response.writeHead(opened.statusCode, headers);
    response.end(body);
    // Metered and recorded once the client has its answer, after the loop's other answers of this turn.
    await nextCheckPhase();
    const ok = opened.statusCode >= 200 && opened.statusCode < 300;
    if (ok) meter.readJson(body);
    return {
      status: opened.statusCode,
      line: opened.line.id,
      errorCode: ok ? (meter.errorCode?.() ?? null) : `upstream_${opened.statusCode}`,
      figures: meter.figures(),
      priceBasis: meter.priceBasis?.(),
      upstreamHeadersMs: opened.headersMs,
    };
  }

  /**
   * Pipes SSE event by event with backpressure. Headers wait for the first event, so an
   * upstream that fails before it still gets a proper error status; after that, failures
   * travel as the protocol's in-stream error event.
   */
  private async pipeStream(
    opened: OpenedResponse,
    response: ServerResponse,
    meter: ResponseMeter,
    entry: InterfaceName,
    dialect: ErrorDialect,
  ): Promise<CallOutcome> {
    const events = new MeteredEvents(meter);
    const outcome: CallOutcome = { status: opened.statusCode, line: opened.line.id, errorCode: null, figures: undefined, upstreamHeadersMs: opened.headersMs };
    const writeHead = () => {
      if (response.headersSent) return;
      const headers = returnedResponseHeaders(opened.headers);
      headers['content-type'] = opened.headers['content-type'];
      headers['cache-control'] = 'no-cache';
      response.writeHead(opened.statusCode, headers);
    };
    // Synchronous per chunk (no promise unless the client must drain): it runs for every chunk of every stream.
    const pass = (bytes: Buffer | undefined): boolean => {
      if (bytes === undefined) return true;
      writeHead();
      return response.write(bytes);
    };
    try {
      await opened.body.pipe(
        (chunk) => pass(events.push(chunk)),
        () => drained(response),
      );
      if (!pass(events.flush())) await drained(response);
    } catch (error) {
      if (response.destroyed) throw error;
      const failure = bodyFailureOf(error, opened);
      outcome.errorCode = failure.code === 'upstream_timeout' ? failure.code : 'upstream_stream_broken';
      if (!response.headersSent) {
        outcome.status = statusOf(failure.code);
        response.writeHead(outcome.status, { 'content-type': 'application/json' });
        response.end(errorBody(failure, dialect));
        outcome.figures = meter.figures();
        return outcome;
      }
      response.write(inStreamError(entry, failure));
    }
    writeHead();
    response.end();
    outcome.figures = meter.figures();
    outcome.errorCode ??= meter.errorCode?.() ?? null;
    return outcome;
  }
}
