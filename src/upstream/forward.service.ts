import { Inject, Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import { GatewayError } from '../common/gateway-error';
import { Clock } from '../common/clock';
import type { CallAbort } from './call-abort';
import { AttemptOutcome, Line, LineRegistry } from './line-registry';
import { UpstreamBody, UpstreamClient, UpstreamResponse } from './upstream-client';
import { AnswerBody } from './answer-body';
import { drawnFirst, Retries, retryDelayMs } from './line-order';
import { LINE_SETTINGS, LineSettings } from '../config/settings/upstream.settings';
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
  /** The path and body for a line with its own name for the model (`lines[].upstream_model`); absent: `path` and `body` go to every line. */
  forModel?(upstreamModel: string): { path: string; body: UpstreamBody };
  /** False for a call that must reach the vendor at most once (a video submit): never retried. */
  mayRetry?: boolean;
  incomingHeaders: IncomingHttpHeaders;
  signal: CallAbort;
  /** Where each attempt is noted, in order (the call's record, log line and trace). */
  attempts?: AttemptNote[];
}

/** One attempt of a call on a line. */
export interface AttemptNote {
  line: string;
  outcome: AttemptOutcome;
  /** The upstream's status, when it answered. */
  status: number | null;
  /** `performance.now()` when the attempt was sent, and when its answer's headers came or it failed. */
  startedAt: number;
  endedAt: number;
}

/** An upstream answer whose headers arrived; the caller reads the body, then calls `done`. */
export interface OpenedResponse extends UpstreamResponse {
  line: Line;
  /** Set when the line has its own name for the model and the call went to it under that name. */
  upstreamModel?: string;
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

/** What a call has met so far, over its passes through its lines. */
interface CallSoFar {
  /** The last retryable answer, read whole, given to the client when nothing better comes. */
  answer?: OpenedResponse;
  failure?: ForwardFailure;
  /** The attempt the call went on from: its line counts a failover once the call goes on. */
  previous?: { line: Line; outcome: AttemptOutcome };
  /** The longest pause an answer of the last pass asked for (`Retry-After`). */
  retryAfterMs: number;
  /** The last pass met a failure a retry may get past: a refused connection, a reset, a 429 or a 5xx (not refused credentials). */
  transient: boolean;
  /** Lines that refused this call's connection: cooling for other calls, tried again by this call's retries. */
  refused?: Line[];
}

/**
 * Sends a call to the model's lines (DESIGN.md section 7): the first drawn by weight when the
 * model's lines have weights, then the others in order; cooling and full lines are skipped; a
 * refused connection or a timeout cools the line and moves on (a body that stalls for
 * `timeout_ms` later cools it as well); a reset, a 429 or a 5xx before the first byte moves on.
 * When every line failed, the call is sent again after a back-off as often as the model's
 * `retry` allows, a line that refused it included; then the client gets the last upstream
 * answer as it came. A timeout is not retried: the call may have reached the vendor, and it
 * has already waited the line's `timeout_ms`.
 */
@Injectable()
export class ForwardService {
  /** [0, 1): draws the first line by weight and each back-off. */
  random: () => number = Math.random;

  constructor(
    private readonly lines: LineRegistry,
    private readonly client: UpstreamClient,
    private readonly clock: Clock,
    @Inject(LINE_SETTINGS) private readonly settings: LineSettings,
  ) {}

  async open(request: ForwardRequest): Promise<OpenedResponse> {
    const retries = this.retriesOf(request);
    const soFar: CallSoFar = { retryAfterMs: 0, transient: false };
    for (let retry = 0; ; retry++) {
      const finalPass = retry >= retries.attempts;
      const answer = await this.pass(request, this.callOrder(request.model, retry > 0, soFar.refused), finalPass, soFar);
      if (answer) return answer;
      const delayMs = finalPass || !soFar.transient ? undefined : retryDelayMs(retries, retry, soFar.retryAfterMs, this.random());
      if (delayMs === undefined || !(await this.pause(delayMs, request.signal))) break;
      soFar.retryAfterMs = 0;
      soFar.transient = false;
    }
    if (soFar.answer) return soFar.answer;
    if (soFar.failure) throw soFar.failure;
    throw new GatewayError('rate_limit_exceeded', 'Every upstream line of this model is busy; retry later.', BUSY_RETRY_AFTER_SECONDS);
  }

  /**
   * One pass through `candidates`: the answer to relay, or undefined when each line failed or
   * answered retryably (kept in `soFar`). On the final pass the last line's answer is relayed
   * whatever it is.
   */
  private async pass(request: ForwardRequest, candidates: readonly Line[], finalPass: boolean, soFar: CallSoFar): Promise<OpenedResponse | undefined> {
    for (let index = 0; index < candidates.length; index++) {
      const line = candidates[index];
      if (line.isFull() || this.isCoolingFor(line, soFar.refused)) continue;
      if (soFar.previous) soFar.previous.line.failovers[soFar.previous.outcome] += 1;
      const started = performance.now();
      const outcome = await this.attempt(line, request, started);
      if ('failure' in outcome) {
        soFar.failure = outcome.failure;
        this.note(request, line, outcome.failure.failure, null, started);
        soFar.previous = { line, outcome: outcome.failure.failure };
        if (outcome.failure.failure === 'aborted') throw outcome.failure;
        if (outcome.failure.failure === 'reset') soFar.transient = true;
        if (outcome.failure.failure === 'refused') {
          soFar.transient = true;
          (soFar.refused ??= []).push(line);
        }
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
        this.note(request, line, 'credentials', answer.statusCode, started);
        soFar.previous = { line, outcome: 'credentials' };
        await discard(answer);
        soFar.failure = new ForwardFailure(
          new GatewayError('upstream_failed', `The upstream refused the gateway's credentials (HTTP ${answer.statusCode}).`),
          line,
          'credentials',
        );
        continue;
      }
      const answered: AttemptOutcome = answer.statusCode === 429 ? '429' : answer.statusCode >= 500 ? '5xx' : 'answered';
      this.note(request, line, answered, answer.statusCode, started);
      if (!isRetryableStatus(answer.statusCode) || (finalPass && index === candidates.length - 1)) {
        if (soFar.answer) await discard(soFar.answer);
        return answer;
      }
      soFar.previous = { line, outcome: answered };
      soFar.transient = true;
      soFar.retryAfterMs = Math.max(soFar.retryAfterMs, retryAfterMsOf(answer.headers, this.clock.now()));
      if (soFar.answer) await discard(soFar.answer);
      soFar.answer = await buffered(answer);
    }
    return undefined;
  }

  private note(request: ForwardRequest, line: Line, outcome: AttemptOutcome, status: number | null, startedAt: number): void {
    line.attempts[outcome] += 1;
    request.attempts?.push({ line: line.id, outcome, status, startedAt, endedAt: performance.now() });
  }

  /** The model's retries, the gateway's defaults filling what it leaves out; none for a call that must not be repeated. */
  private retriesOf(request: ForwardRequest): Retries {
    const defaults = this.settings.retry;
    const own = request.model.retry;
    if (request.mayRetry === false || (own === undefined && defaults.attempts === 0)) return NO_RETRIES;
    return {
      attempts: own?.attempts ?? defaults.attempts,
      backoffMs: own?.backoffMs ?? defaults.backoffMs,
      maxBackoffMs: own?.maxBackoffMs ?? defaults.maxBackoffMs,
    };
  }

  /** Waits `delayMs`; false when the client left meanwhile. */
  private pause(delayMs: number, signal: CallAbort): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        signal.off('abort', onAbort);
        resolve(true);
      }, delayMs);
      signal.once('abort', onAbort);
    });
  }

  /**
   * The model's lines in the order a call tries them: with weights, the first drawn among those
   * that can take it now; those whose vendor asked for a pause (a 429's `Retry-After`) after the
   * others: skipped while another line can take the call, never taken away from it. The first
   * pass answers 503 at once when every line is cooling down, 429 when every line is full; a
   * retry then ends with what the earlier passes met (an empty order). Lines that refused this
   * call (`refused`) count as not cooling for its retries.
   */
  private callOrder(model: ModelConfig, retry: boolean, refused?: readonly Line[]): readonly Line[] {
    // A line removed from the catalog since the call was admitted is skipped.
    let lines: readonly Line[] = model.lines.flatMap((id) => this.lines.find(id) ?? []);
    if (lines.every((line) => this.isCoolingFor(line, refused))) {
      if (retry) return [];
      throw new GatewayError('service_unavailable', `No upstream line is available for model ${model.id}.`, 1);
    }
    if (lines.every((line) => line.isFull() || this.isCoolingFor(line, refused))) {
      if (retry) return [];
      throw new GatewayError('rate_limit_exceeded', 'Every upstream line of this model is busy; retry later.', BUSY_RETRY_AFTER_SECONDS);
    }
    if (lines.length === 1) return lines;
    if (model.lineWeights) lines = drawnFirst(lines, this.weightsOf(model, lines), (line) => this.canTake(line), this.random());
    if (!lines.some((line) => this.lines.isRateLimited(line))) return lines;
    return [...lines.filter((line) => !this.lines.isRateLimited(line)), ...lines.filter((line) => this.lines.isRateLimited(line))];
  }

  /** Cooling for this call: a line cooling because it refused this very call is tried again by its retries. */
  private isCoolingFor(line: Line, refused: readonly Line[] | undefined): boolean {
    return this.lines.isCooling(line) && (refused === undefined || !refused.includes(line));
  }

  private canTake(line: Line): boolean {
    return !line.isFull() && !this.lines.isCooling(line) && !this.lines.isRateLimited(line);
  }

  /** The weights of `lines` (the model's lines the registry has, in the model's order). */
  private weightsOf(model: ModelConfig, lines: readonly Line[]): number[] {
    return lines.map((line) => model.lineWeights![model.lines.indexOf(line.id)] ?? 1);
  }

  /** A 429 that says how long to wait puts its line after the model's others for that long. */
  private noteRateLimit(line: Line, headers: IncomingHttpHeaders): void {
    const waitMs = retryAfterMsOf(headers, this.clock.now());
    if (waitMs > 0) this.lines.rateLimited(line, waitMs);
  }

  private async attempt(line: Line, request: ForwardRequest, started: number): Promise<{ answer: OpenedResponse } | { failure: ForwardFailure }> {
    const lineModel = request.forModel && request.model.lineModels?.[line.id];
    const target = lineModel ? request.forModel!(lineModel) : request;
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
        path: target.path,
        headers: upstreamRequestHeaders(request.incomingHeaders, request.entry, {
          style: line.config.auth ?? defaultAuthStyle(request.entry),
          apiKey: line.config.apiKey,
        }),
        body: target.body,
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
      if (lineModel) answer.upstreamModel = lineModel;
      return { answer };
    } catch (error) {
      done();
      const failure = classifyFailure(error, request.signal.aborted);
      if (failure === 'refused' || failure === 'timeout') this.lines.coolDown(line);
      return { failure: new ForwardFailure(gatewayErrorOf(failure, line), line, failure) };
    }
  }
}

const NO_RETRIES: Retries = { attempts: 0, backoffMs: 0, maxBackoffMs: 0 };

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
