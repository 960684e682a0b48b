import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import { GatewayError, statusOf } from '../common/gateway-error';
import { dialectOfPath, errorBody } from '../common/error-body';
import { ForwardFailure, ForwardService, OpenedResponse } from '../upstream/forward.service';
import { returnedResponseHeaders } from '../upstream/header-policy';
import { SseEventSplitter } from '../translation/sse/decode-sse';
import { UsageWriter } from '../metering/usage-writer.service';
import { CallOutcome, usageDraftOf } from './call-recorder';
import type { NativeRoute } from './native-route';
import type { ResponseMeter } from './response-meter';
import { inStreamError } from './stream-errors';

/** Status recorded when the client went away before the answer was complete. */
const CLIENT_CLOSED = 499;

/**
 * Native forwarding: the client's bytes go upstream with only `model` changed, and the
 * upstream's bytes come back unchanged, metered on the way (DESIGN.md section 6).
 */
@Injectable()
export class NativeCallService {
  constructor(
    private readonly forwarder: ForwardService,
    private readonly usage: UsageWriter,
  ) {}

  async forward(request: FastifyRequest, reply: FastifyReply, route: NativeRoute): Promise<void> {
    const call = request.call!;
    const abort = new AbortController();
    const response = reply.raw;
    const onClose = () => {
      if (!response.writableFinished) abort.abort();
    };
    response.once('close', onClose);
    let opened: OpenedResponse;
    try {
      opened = await this.forwarder.open({
        entry: call.entry,
        model: call.model,
        path: route.upstreamPath,
        body: route.upstreamBody(call),
        incomingHeaders: request.headers,
        signal: abort.signal,
      });
    } catch (error) {
      response.off('close', onClose);
      if (error instanceof ForwardFailure) this.record(request, route, this.failureOutcome(error, abort.signal.aborted));
      throw error;
    }
    reply.hijack();
    const meter = route.meter(call);
    let outcome: CallOutcome;
    try {
      outcome = isEventStream(opened) && opened.statusCode < 300
        ? await this.pipeStream(opened, response, meter, call.entry)
        : await this.sendWhole(opened, response, meter);
    } catch {
      outcome = this.brokenOutcome(request, response, opened, meter);
    } finally {
      opened.done();
      response.off('close', onClose);
    }
    if (abort.signal.aborted && outcome.status !== CLIENT_CLOSED) outcome = { ...outcome, status: CLIENT_CLOSED, errorCode: 'client_closed' };
    this.record(request, route, outcome);
  }

  private async sendWhole(opened: OpenedResponse, response: ServerResponse, meter: ResponseMeter): Promise<CallOutcome> {
    const chunks: Buffer[] = [];
    for await (const chunk of opened.body) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const ok = opened.statusCode >= 200 && opened.statusCode < 300;
    if (ok) meter.readJson(body);
    response.writeHead(opened.statusCode, {
      ...returnedResponseHeaders(opened.headers),
      'content-type': (opened.headers['content-type'] as string | undefined) ?? 'application/json',
      'content-length': body.length,
    });
    response.end(body);
    return {
      status: opened.statusCode,
      line: opened.line.id,
      errorCode: ok ? null : `upstream_${opened.statusCode}`,
      figures: meter.figures(),
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
    entry: OpenedResponseEntry,
  ): Promise<CallOutcome> {
    const splitter = new SseEventSplitter();
    const outcome: CallOutcome = { status: opened.statusCode, line: opened.line.id, errorCode: null, figures: undefined, upstreamHeadersMs: opened.headersMs };
    const writeHead = () => {
      if (response.headersSent) return;
      response.writeHead(opened.statusCode, {
        ...returnedResponseHeaders(opened.headers),
        'content-type': opened.headers['content-type'] as string,
        'cache-control': 'no-cache',
      });
    };
    const forwardEvents = async (events: Buffer[]) => {
      const kept = events.filter((event) => meter.readEvent(event));
      if (kept.length === 0) return;
      writeHead();
      if (!response.write(kept.length === 1 ? kept[0] : Buffer.concat(kept))) await drained(response);
    };
    try {
      for await (const chunk of opened.body) await forwardEvents(splitter.push(chunk as Buffer));
      await forwardEvents(splitter.flush());
    } catch (error) {
      if (response.destroyed) throw error;
      const failure = new GatewayError('upstream_failed', 'The upstream stream broke off before it was complete.');
      outcome.errorCode = 'upstream_stream_broken';
      if (!response.headersSent) {
        outcome.status = statusOf(failure.code);
        response.writeHead(outcome.status, { 'content-type': 'application/json' });
        response.end(errorBody(failure, entry === 'messages' ? 'messages' : 'openai'));
        outcome.figures = meter.figures();
        return outcome;
      }
      response.write(inStreamError(entry, failure.message));
    }
    writeHead();
    response.end();
    outcome.figures = meter.figures();
    return outcome;
  }

  /**
   * The answer could not be completed: the client left (499), or the upstream broke off
   * before the gateway had sent anything (502 to the client), or after (the client's
   * connection is closed, so it sees a truncated answer).
   */
  private brokenOutcome(request: FastifyRequest, response: ServerResponse, opened: OpenedResponse, meter: ResponseMeter): CallOutcome {
    const base = { line: opened.line.id, figures: meter.figures(), upstreamHeadersMs: opened.headersMs };
    if (response.destroyed) return { ...base, status: CLIENT_CLOSED, errorCode: 'client_closed' };
    if (response.headersSent) {
      response.destroy();
      return { ...base, status: opened.statusCode, errorCode: 'upstream_stream_broken' };
    }
    const failure = new GatewayError('upstream_failed', 'The upstream broke off its answer before it was complete.');
    const body = errorBody(failure, dialectOfPath(request.url));
    response.writeHead(statusOf(failure.code), { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
    return { ...base, status: statusOf(failure.code), errorCode: failure.code };
  }

  private failureOutcome(error: ForwardFailure, clientGone: boolean): CallOutcome {
    return {
      status: clientGone ? CLIENT_CLOSED : statusOf(error.code),
      line: error.line.id,
      errorCode: clientGone ? 'client_closed' : error.code,
      figures: undefined,
      upstreamHeadersMs: null,
    };
  }

  private record(request: FastifyRequest, route: NativeRoute, outcome: CallOutcome): void {
    this.usage.enqueue(usageDraftOf(request, route.name, outcome));
  }
}

type OpenedResponseEntry = Parameters<typeof inStreamError>[0];

function isEventStream(opened: OpenedResponse): boolean {
  const type = opened.headers['content-type'];
  return typeof type === 'string' && type.startsWith('text/event-stream');
}

function drained(response: ServerResponse): Promise<void> {
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

