import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { performance } from 'node:perf_hooks';
import pino, { DestinationStream, Logger } from 'pino';
import '../forwarding/request-state';
import { type CallFacts, callFactsOf, isProbe } from './call-facts';
import { callLogLevel, callLogLine, callLogText, GATEWAY_LOG } from './call-log';
import { GatewayMetrics } from './gateway-metrics';
import { endedAt } from '../common/timed-response';
import type { CallTrace } from './trace-ids';
import { ReplicaLimits } from '../governance/replica-limits';

/** What CallTelemetry asks of traces (tracing.ts makes it when an OTLP endpoint is set). */
export interface CallTracer {
  /** At arrival (not for probes): the ids of the call's server span. */
  begin(request: FastifyRequest): CallTrace;
  /** When the call is reported: its spans, made at once with the times the request noted. */
  record(request: FastifyRequest, facts: CallFacts): void;
  /** Sends what waits and stops. */
  shutdown(): Promise<void>;
}

/**
 * Reports every request once, when it is over, to the metrics and as one log line. A request
 * is over when its response closed and, for a call that went upstream, when the call ended as
 * well: a client that leaves closes the response while the call still runs (an image call
 * even completes and is billed), and the report waits for the call's record.
 *
 * On the request path this costs a `close` listener per request and a few field writes;
 * the report itself reads fields the request already carries. The same listener ends a
 * streaming call's count among the replica's streams (ReplicaLimits), which needs none of its
 * own. With tracing off (no `tracer`) tracing costs an undefined check at arrival, at the
 * upstream end and at the report.
 */
@Injectable()
export class CallTelemetry {
  /** Where the log writes, and its fixed members (pid, hostname): call lines are built here (callLogText). */
  private readonly destination: DestinationStream;
  private readonly chindings: string;
  /** Set when traces are on (tracing.ts): the call's ids at arrival, its spans when it is reported. */
  private tracer: CallTracer | undefined;

  constructor(
    private readonly metrics: GatewayMetrics,
    @Inject(GATEWAY_LOG) private readonly log: Logger,
    private readonly replica: ReplicaLimits,
  ) {
    const internals = log as unknown as Record<symbol, unknown>;
    this.destination = internals[pino.symbols.streamSym] as DestinationStream;
    this.chindings = internals[pino.symbols.chindingsSym] as string;
  }

  /** Turns traces on; from start-up, before the first request. */
  traceWith(tracer: CallTracer): void {
    this.tracer = tracer;
  }

  /** Sends the spans that wait (at shutdown). */
  async stopTracing(): Promise<void> {
    await this.tracer?.shutdown();
  }

  /** From the `onRequest` hook. */
  requestStarted(request: FastifyRequest, reply: FastifyReply): void {
    if (!isProbe(request.url)) {
      this.metrics.callStarted();
      if (this.tracer !== undefined) request.trace = this.tracer.begin(request);
    }
    reply.raw.once('close', () => this.responseClosed(request, reply));
  }

  /** ForwardedCall is about to send the call to its first line. */
  upstreamStarted(request: FastifyRequest): void {
    request.forwarded = { upstreamStartedAt: performance.now(), attempts: [], responseClosed: false };
  }

  /** ForwardedCall is done (answered, failed, or the client left), its record (if any) kept on the request. */
  upstreamEnded(request: FastifyRequest, reply: FastifyReply): void {
    const forwarded = request.forwarded!;
    const now = performance.now();
    forwarded.upstreamEndedAt = endedAt(reply.raw, now);
    if (this.tracer !== undefined) forwarded.settledAt = now;
    if (forwarded.responseClosed) this.report(request, reply);
  }

  private responseClosed(request: FastifyRequest, reply: FastifyReply): void {
    // The stream is over for the client (answered, or it left) even while its upstream exchange ends.
    if (request.streamOpen) this.replica.streamEnded(request);
    const forwarded = request.forwarded;
    if (forwarded !== undefined && forwarded.upstreamEndedAt === undefined) {
      forwarded.responseClosed = true;
      return;
    }
    this.report(request, reply);
  }

  /** Never throws: it runs in a `close` listener and in ForwardedCall's `finally`. */
  private report(request: FastifyRequest, reply: FastifyReply): void {
    try {
      this.reportFacts(request, reply);
    } catch (error) {
      this.log.error({ request_id: request.id, trace_id: request.trace?.traceId, err: error }, 'call not reported');
    }
  }

  private reportFacts(request: FastifyRequest, reply: FastifyReply): void {
    const facts = callFactsOf(request, reply.raw, performance.now());
    if (isProbe(request.url)) {
      if (this.log.isLevelEnabled('debug')) this.log.debug(callLogLine(facts), 'probe');
      return;
    }
    this.metrics.callEnded(facts);
    const level = callLogLevel(facts);
    if (this.log.isLevelEnabled(level)) this.destination.write(callLogText(facts, level, this.chindings, Date.now(), request.trace));
    if (this.tracer !== undefined) this.trace(this.tracer, request, facts);
  }

  /** After the line and the metrics, which a failure here must not cost. */
  private trace(tracer: CallTracer, request: FastifyRequest, facts: CallFacts): void {
    try {
      tracer.record(request, facts);
    } catch (error) {
      this.log.error({ request_id: request.id, trace_id: request.trace?.traceId, err: error }, 'call not traced');
    }
  }
}
