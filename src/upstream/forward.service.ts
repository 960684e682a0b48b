import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import { GatewayError } from '../common/gateway-error';
import { Clock } from '../common/clock';
import type { CallAbort } from './call-abort';
import { AttemptOutcome, Line, LineRegistry } from './line-registry';
import { UpstreamBody, UpstreamClient, UpstreamResponse } from './upstream-client';
import { AnswerBody } from './answer-body';
import { defaultAuthStyle, upstreamRequestHeaders } from './header-policy';
import {
  AttemptFailure,
  classifyFailure,
  isBodyTimeout,
  isCredentialStatus,
  isRetryableStatus,
  mayRefuseCredentialsInBody,
  refusesCredentialsInBody,
} from './upstream-failure';

export interface ForwardRequest {
  entry: InterfaceName;
  model: ModelConfig;
  path: string;
  body: UpstreamBody;
  incomingHeaders: IncomingHttpHeaders;
  signal: CallAbort;
}

/** An upstream answer whose headers arrived; the caller reads the body, then calls `done`. */
export interface OpenedResponse extends UpstreamResponse {
  line: Line;
  headersMs: number;
  /** Frees the line's concurrency slot; call once, when the body is consumed or abandoned. */
  done(): void;
  /** The whole body, when it was read before the answer was chosen (error answers); `body` then gives the same bytes. */
  bufferedBody?: Buffer;
}

/** A call that was sent upstream but produced no usable answer (for the usage record). */
export class ForwardFailure extends GatewayError {
  constructor(
    error: GatewayError,
    readonly line: Line,
    readonly failure: AttemptFailure | 'credentials',
  ) {
    super(error.code, error.message, error.retryAfterSeconds);
  }
}

const BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * Sends a call to the model's lines in order (DESIGN.md section 7): cooling and full lines
 * are skipped; a refused connection or a timeout cools the line and moves on (a body that
 * stalls for `timeout_ms` later cools it as well); a reset, a 429
 * or a 5xx before the first byte moves on; when no line is left the client gets the last
 * upstream answer as it came.
 */
@Injectable()
export class ForwardService {
  constructor(
    private readonly lines: LineRegistry,
    private readonly client: UpstreamClient,
    private readonly clock: Clock,
  ) {}

  async open(request: ForwardRequest): Promise<OpenedResponse> {
    const candidates = this.usableLines(request.model);
    let lastAnswer: OpenedResponse | undefined;
    let lastFailure: ForwardFailure | undefined;
    // The attempt before this one, which the call went on from.
    let previous: { line: Line; outcome: AttemptOutcome } | undefined;
    for (let index = 0; index < candidates.length; index++) {
      const line = candidates[index];
      if (line.isFull() || this.lines.isCooling(line)) continue;
      if (previous) previous.line.failovers[previous.outcome] += 1;
      const isLast = index === candidates.length - 1;
      const outcome = await this.attempt(line, request);
      if ('failure' in outcome) {
        lastFailure = outcome.failure;
        line.attempts[outcome.failure.failure] += 1;
        previous = { line, outcome: outcome.failure.failure };
        if (outcome.failure.failure === 'aborted') throw outcome.failure;
        continue;
      }
      let answer = outcome.answer;
      if (answer.statusCode === 429) this.noteRateLimit(line, answer.headers);
      let credentialsRefused = isCredentialStatus(answer.statusCode);
      if (mayRefuseCredentialsInBody(request.entry, answer.statusCode, answer.headers['content-type'] as string | undefined)) {
        // A 2xx may be the answer itself: read whole, never cut at the error-body limit.
        answer = await buffered(answer, answer.statusCode < 300 ? Infinity : MAX_BUFFERED_ERROR_BYTES);
        credentialsRefused = refusesCredentialsInBody(request.entry, answer.bufferedBody);
      }
      if (credentialsRefused) {
        line.attempts.credentials += 1;
        previous = { line, outcome: 'credentials' };
        await discard(answer);
        lastFailure = new ForwardFailure(
          new GatewayError('upstream_failed', `The upstream refused the gateway's credentials (HTTP ${answer.statusCode}).`),
          line,
          'credentials',
        );
        continue;
      }
      const answered: AttemptOutcome = answer.statusCode === 429 ? '429' : answer.statusCode >= 500 ? '5xx' : 'answered';
      line.attempts[answered] += 1;
      if (!isRetryableStatus(answer.statusCode) || isLast) {
        if (lastAnswer) await discard(lastAnswer);
        return answer;
      }
      previous = { line, outcome: answered };
      if (lastAnswer) await discard(lastAnswer);
      lastAnswer = await buffered(answer);
    }
    if (lastAnswer) return lastAnswer;
    if (lastFailure) throw lastFailure;
    throw new GatewayError('rate_limit_exceeded', 'Every upstream line of this model is busy; retry later.', BUSY_RETRY_AFTER_SECONDS);
  }

  /**
   * The model's lines in order, those whose vendor asked for a pause (a 429's `Retry-After`)
   * after the others: skipped while another line can take the call, never taken away from it.
   * 503 at once when every line is cooling down.
   */
  private usableLines(model: ModelConfig): Line[] {
    // A line removed from the catalog since the call was admitted is skipped.
    const lines = model.lines.flatMap((id) => this.lines.find(id) ?? []);
    if (lines.every((line) => this.lines.isCooling(line))) {
      throw new GatewayError('service_unavailable', `No upstream line is available for model ${model.id}.`, 1);
    }
    if (lines.every((line) => line.isFull() || this.lines.isCooling(line))) {
      throw new GatewayError('rate_limit_exceeded', 'Every upstream line of this model is busy; retry later.', BUSY_RETRY_AFTER_SECONDS);
    }
    if (lines.length === 1 || !lines.some((line) => this.lines.isRateLimited(line))) return lines;
    return [...lines.filter((line) => !this.lines.isRateLimited(line)), ...lines.filter((line) => this.lines.isRateLimited(line))];
  }

  /** A 429 that says how long to wait puts its line after the model's others for that long. */
  private noteRateLimit(line: Line, headers: IncomingHttpHeaders): void {
    const waitMs = retryAfterMsOf(headers, this.clock.now());
    if (waitMs > 0) this.lines.rateLimited(line, waitMs);
  }

  private async attempt(line: Line, request: ForwardRequest): Promise<{ answer: OpenedResponse } | { failure: ForwardFailure }> {
    const started = performance.now();
    line.inFlight += 1;
    let released = false;
    const done = (): void => {
      if (released) return;
      released = true;
      line.inFlight -= 1;
    };
    try {
      const response = await this.client.send(line, {
        method: 'POST',
        path: request.path,
        headers: upstreamRequestHeaders(request.incomingHeaders, request.entry, {
          style: line.config.auth ?? defaultAuthStyle(request.entry),
          apiKey: line.config.apiKey,
        }),
        body: request.body,
        signal: request.signal,
        // docs/configuration.md `timeout_ms`: a body that stalls cools the line down too, whoever reads it.
        onBodyFailure: (error) => {
          if (isBodyTimeout(error)) this.lines.coolDown(line);
        },
      });
      // Fields named one by one: an object spread of `response` here shows up in the CPU profile.
      const answer: OpenedResponse = {
        statusCode: response.statusCode,
        headers: response.headers,
        body: response.body,
        line,
        headersMs: performance.now() - started,
        done,
      };
      return { answer };
    } catch (error) {
      done();
      const failure = classifyFailure(error, request.signal.aborted);
      if (failure === 'refused' || failure === 'timeout') this.lines.coolDown(line);
      return { failure: new ForwardFailure(gatewayErrorOf(failure, line), line, failure) };
    }
  }
}

function gatewayErrorOf(failure: AttemptFailure, line: Line): GatewayError {
  switch (failure) {
    case 'timeout':
      return new GatewayError('upstream_timeout', `The upstream did not answer within ${line.config.timeoutMs} ms.`);
    case 'refused':
      return new GatewayError('upstream_failed', 'The upstream could not be reached.');
    case 'reset':
      return new GatewayError('upstream_failed', 'The upstream closed the connection before answering.');
    case 'aborted':
      return new GatewayError('upstream_failed', 'The client closed the request.');
  }
}

/**
 * How long an answer asks the client to wait: `Retry-After-Ms`, else `Retry-After` in seconds
 * or as an HTTP date; 0 when it says nothing readable.
 */
export function retryAfterMsOf(headers: IncomingHttpHeaders, now: number): number {
  const milliseconds = Number(headers['retry-after-ms']);
  if (Number.isFinite(milliseconds) && milliseconds > 0) return milliseconds;
  const value = headers['retry-after'];
  if (typeof value !== 'string' || value.trim() === '') return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - now);
}

const MAX_BUFFERED_ERROR_BYTES = 1 << 20;

/** Reads and drops an answer that will not be used, so its keep-alive socket is reused. */
async function discard(answer: OpenedResponse): Promise<void> {
  await answer.body.drop(MAX_BUFFERED_ERROR_BYTES);
  answer.done();
}

/**
 * Reads an answer completely, so its line is freed while the next line is tried; of a failed
 * answer only the first `limit` bytes are kept.
 */
async function buffered(answer: OpenedResponse, limit = MAX_BUFFERED_ERROR_BYTES): Promise<OpenedResponse> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of answer.body.chunks()) {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    }
  } catch {
    // A broken error body still counts as that line's answer.
  } finally {
    answer.done();
  }
  const body = Buffer.concat(chunks);
  return { ...answer, body: AnswerBody.of(body), bufferedBody: body, done: () => undefined };
}
