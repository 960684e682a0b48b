import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { GatewayError } from '../common/gateway-error';
import { canonicalUsageFigures } from '../metering/usage-figures';
import type { DroppedRest } from '../upstream/answer-body';
import type { OpenedResponse } from '../upstream/forward.service';
import { returnedResponseHeaders } from '../upstream/header-policy';
import { isBodyTimeout } from '../upstream/upstream-failure';
import type { CanonicalUsage } from '../translation/canonical/response';
import { TranslationRejection } from '../translation/canonical/request';
import { SseDecoder, type SseEvent } from '../translation/sse/decode-sse';
import { encodeSseEvent } from '../translation/sse/encode-sse';
import { messagesPingEvent } from '../translation/messages/encode-messages-stream';
import { planTranslation, StreamTranslation, translateAnswer, translateError, TranslationPlan } from '../translation/translate';
import type { TranslatableEntry } from '../translation/translation-routes';
import type { CallOutcome } from '../metering/call-recorder';
import { drained, ForwardedCall, isEventStream } from '../forwarding/forwarded-call';
import { KeepAlive } from '../forwarding/keep-alive';
import { TranslationContextProvider } from './translation-context.provider';
import { nextCheckPhase } from '../common/next-check-phase';
import { TRANSLATION_SETTINGS, TranslationSettings } from '../config/settings/translation.settings';

/**
 * What may still follow a translated stream's last event before the connection is given up
 * instead: the rest is read (its end, as a rule) so that the connection serves the next call.
 */
const REST_LIMIT_BYTES = 1 << 20;
const REST_PATIENCE_MS = 5_000;

/** A translated messages stream's keep-alive event (SPEC.md: after 15 s without upstream output). */
const PING = encodeSseEvent(messagesPingEvent());

/** Headers a translated call sends upstream besides the line credential: none of the client's protocol headers. */
const TRANSLATED_REQUEST_HEADERS = ['user-agent'] as const;

/**
 * A call on a model that lacks the called protocol (SPEC.md "Translation"): the request is
 * mapped to the model's upstream protocol, and the answer, its stream events and its errors
 * back into the called protocol. Auth, lines, failover and metering are the native path's.
 */
@Injectable()
export class TranslatedCallService {
  constructor(
    private readonly calls: ForwardedCall,
    private readonly context: TranslationContextProvider,
    @Inject(TRANSLATION_SETTINGS) private readonly settings: TranslationSettings,
  ) {}

  forward(request: FastifyRequest, reply: FastifyReply, entry: TranslatableEntry): Promise<void> {
    const call = request.call!;
    // A translation needs the whole request: a spooled body is read back from its file.
    if (call.spool) {
      // A client that left before this took its spooled body with it; nothing was sent upstream.
      if (!call.spool.isOpen) return Promise.resolve();
      return call.spool.text().then((text) => this.translate(request, reply, entry, text));
    }
    return this.translate(request, reply, entry, call.body.toString('utf8'));
  }

  private translate(request: FastifyRequest, reply: FastifyReply, entry: TranslatableEntry, text: string): Promise<void> {
    const call = request.call!;
    const basePlan = this.plan(request, entry, text, call.model.upstreamModel);
    // A line with its own name for the model gets a request planned for that name, and its answer is read with that plan.
    const linePlans = new Map<string, TranslationPlan>();
    const planFor = (upstreamModel: string): TranslationPlan => {
      let linePlan = linePlans.get(upstreamModel);
      if (!linePlan) linePlans.set(upstreamModel, (linePlan = this.plan(request, entry, text, upstreamModel)));
      return linePlan;
    };
    let usage: CanonicalUsage = {};
    const headers: Record<string, string> = {};
    for (const name of TRANSLATED_REQUEST_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return this.calls.run(request, reply, {
      recordAs: entry,
      upstreamInterface: basePlan.upstream,
      path: basePlan.upstreamPath,
      body: Buffer.from(JSON.stringify(basePlan.upstreamBody)),
      forModel: (upstreamModel) => {
        const linePlan = planFor(upstreamModel);
        return { path: linePlan.upstreamPath, body: Buffer.from(JSON.stringify(linePlan.upstreamBody)) };
      },
      incomingHeaders: headers,
      translatedTo: basePlan.upstream,
      answer: (opened, response) => {
        const plan = opened.upstreamModel ? planFor(opened.upstreamModel) : basePlan;
        const ok = opened.statusCode >= 200 && opened.statusCode < 300;
        if (ok && isEventStream(opened)) {
          return this.pipeStream(plan, opened, response, (known) => (usage = known));
        }
        return ok ? this.sendAnswer(plan, opened, response, (known) => (usage = known)) : this.sendError(plan, opened, response);
      },
      figures: () => canonicalUsageFigures(usage),
    });
  }

  private plan(request: FastifyRequest, entry: TranslatableEntry, text: string, upstreamModel: string): TranslationPlan {
    const call = request.call!;
    const body = JSON.parse(text) as Record<string, unknown>;
    try {
      return planTranslation(entry, call.translateTo!, body, { upstreamModel, maxTokens: call.model.maxTokens });
    } catch (error) {
      if (error instanceof TranslationRejection) throw new GatewayError('invalid_request', error.message);
      throw error;
    }
  }

  /** A translated answer's head: the upstream's returned headers, the translation's own, the body's type and length (a stream: none, and no caching). */
  private head(plan: TranslationPlan, opened: OpenedResponse, type: string, length: number | 'stream'): OutgoingHttpHeaders {
    const headers = returnedResponseHeaders(opened.headers);
    headers['x-gateway-translated'] = plan.upstream;
    if (plan.dropped.length > 0) headers['x-gateway-dropped'] = droppedHeader(plan.dropped);
    headers['content-type'] = type;
    if (length === 'stream') headers['cache-control'] = 'no-cache';
    else headers['content-length'] = length;
    return headers;
  }

  private async sendAnswer(
    plan: TranslationPlan,
    opened: OpenedResponse,
    response: ServerResponse,
    onUsage: (usage: CanonicalUsage) => void,
  ): Promise<CallOutcome> {
    const raw = await opened.body.whole();
    // The body is read: the line's slot is free before the wait below (ForwardedCall calls `done` again; it is idempotent).
    opened.done();
    let answer: ReturnType<typeof translateAnswer>;
    try {
      answer = translateAnswer(plan, JSON.parse(raw.toString('utf8')), this.context);
    } catch {
      // Not JSON, or not an answer of the upstream protocol (an error body sent with HTTP 200):
      // answered as 502 in the called protocol's shape by ForwardedCall; nothing is retried.
      throw new GatewayError('upstream_failed', `The upstream answered HTTP ${opened.statusCode} with a body that is not a ${plan.upstream} answer.`);
    }
    onUsage(answer.usage);
    const body = JSON.stringify(answer.body);
    response.writeHead(opened.statusCode, this.head(plan, opened, 'application/json', Buffer.byteLength(body)));
    response.end(body);
    // Recorded after the loop's other answers of this turn (nextCheckPhase).
    await nextCheckPhase();
    return {
      status: opened.statusCode,
      line: opened.line.id,
      errorCode: null,
      figures: canonicalUsageFigures(answer.usage),
      upstreamHeadersMs: opened.headersMs,
    };
  }

  private async sendError(plan: TranslationPlan, opened: OpenedResponse, response: ServerResponse): Promise<CallOutcome> {
    const raw = await opened.body.whole();
    const { error, body } = translateError(plan, opened.statusCode, raw.toString('utf8'));
    const text = JSON.stringify(body);
    response.writeHead(opened.statusCode, this.head(plan, opened, 'application/json', Buffer.byteLength(text)));
    response.end(text);
    return {
      status: opened.statusCode,
      line: opened.line.id,
      errorCode: error.code ?? `upstream_${opened.statusCode}`,
      figures: undefined,
      upstreamHeadersMs: opened.headersMs,
    };
  }

  /**
   * Translates the stream as undici hands its chunks over, with backpressure (`AnswerBody.pipe`):
   * the events a chunk completes are decoded, translated, encoded and written in that same call,
   * with no promise per chunk or event. Messages clients get pings in long silences.
   */
  private async pipeStream(
    plan: TranslationPlan,
    opened: OpenedResponse,
    response: ServerResponse,
    onUsage: (usage: CanonicalUsage) => void,
  ): Promise<CallOutcome> {
    let usage: CanonicalUsage = {};
    let failed = false;
    let broken: unknown;
    /** The reader's own failure (the client gone, a translation that threw), not the upstream body's. */
    let readerFailed = false;
    /** After the client's stream is complete: the upstream's rest, read and dropped (AnswerBody.drop's rules). */
    let rest: DroppedRest | undefined;
    const translation = new StreamTranslation(plan, this.context, (known) => {
      usage = known;
      onUsage(known);
    });
    const decoder = new SseDecoder();
    const sendHead = () => response.writeHead(opened.statusCode, this.head(plan, opened, 'text/event-stream; charset=utf-8', 'stream'));
    /** Writes the events; false when the client's socket is full. Throws when the client left. */
    const send = (events: SseEvent[]): boolean => {
      if (events.length === 0) return true;
      if (response.destroyed) throw new Error('client closed');
      let more = true;
      for (const event of events) {
        if (event.event === 'error') failed = true;
        more = response.write(encodeSseEvent(event));
      }
      return more;
    };
    // The head waits for the upstream's first bytes, as a native stream's does: an upstream that
    // breaks off or stalls before them gets a proper status (ForwardedCall answers what is
    // thrown here in the called protocol's shape), not a 200 with an error event. A messages
    // client waits at most one ping interval: then the head and a ping go out.
    const keepAlive =
      plan.entry === 'messages'
        ? new KeepAlive(this.settings.pingIntervalMs, () => {
            // A client that does not read is not pinged: the silence is its own.
            if (response.destroyed || response.writableNeedDrain) return;
            if (!response.headersSent) sendHead();
            response.write(PING);
          })
        : undefined;
    /**
     * The client's stream is complete. The rest of a good upstream stream (its end, as a rule)
     * is read and dropped, so the connection serves the next call, unless it goes on too long;
     * a stream that went wrong is cut off at once.
     */
    const finish = () => {
      keepAlive?.stop();
      send(translation.end());
      if (failed) opened.body.destroy();
      else rest = opened.body.dropping(REST_LIMIT_BYTES, REST_PATIENCE_MS);
    };
    const pass = (chunk: Buffer): boolean => {
      if (translation.finished) {
        rest?.take(chunk);
        return true;
      }
      try {
        if (!response.headersSent) sendHead();
        keepAlive?.heard();
        let more = true;
        for (const event of decoder.push(chunk)) {
          if (!send(translation.read(event))) more = false;
          if (translation.finished) {
            finish();
            break;
          }
        }
        return more;
      } catch (error) {
        readerFailed = true;
        throw error;
      }
    };
    // The upstream was not read while the client's socket was full: that silence was the
    // client's, so the ping interval starts again once the client has taken what waited.
    const clientDrained = () =>
      drained(response).then(
        () => keepAlive?.heard(),
        (error: unknown) => {
          readerFailed = true;
          throw error;
        },
      );
    try {
      try {
        await opened.body.pipe(pass, clientDrained);
      } catch (error) {
        // A body given up after the client's stream was complete (past the rest's limit or
        // patience, or after an error event) was the gateway's choice: nothing is lost.
        if (readerFailed || !response.headersSent) throw error;
        if (!translation.finished) broken = error;
      } finally {
        rest?.stop();
        keepAlive?.stop();
      }
      if (!response.headersSent) throw new GatewayError('upstream_failed', 'The upstream ended its stream before its first event.');
      // The upstream's events ended before its final one (ended or broken off): the decoders say
      // so in the client's protocol.
      if (!translation.finished) {
        for (const event of decoder.end()) {
          send(translation.read(event));
          if (translation.finished) break;
        }
        send(translation.end());
      }
    } catch (error) {
      opened.body.destroy();
      throw error;
    }
    response.end();
    return {
      status: opened.statusCode,
      line: opened.line.id,
      errorCode: broken !== undefined && isBodyTimeout(broken) ? 'upstream_timeout' : failed ? 'upstream_stream_error' : null,
      figures: canonicalUsageFigures(usage),
      upstreamHeadersMs: opened.headersMs,
    };
  }
}

/** Longest `X-Gateway-Dropped` value: client libraries refuse answer heads over 16 KiB. */
const DROPPED_HEADER_LIMIT = 2048;

/**
 * The dropped field names as a header value: each name URI-encoded (a client's key may hold any
 * character, and header values may not), and past the limit the rest counted as `+N more`.
 */
export function droppedHeader(names: string[]): string {
  let value = '';
  for (let index = 0; index < names.length; index++) {
    const name = encodeURIComponent(names[index]);
    if (value.length + name.length + 1 > DROPPED_HEADER_LIMIT) return `${value},+${names.length - index} more`;
    value = value ? `${value},${name}` : name;
  }
  return value;
}
