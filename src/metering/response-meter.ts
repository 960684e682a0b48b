import { parseSseEvent } from '../translation/sse/decode-sse';
import type { PriceBasis } from './pricing';
import { chatUsageFigures, embeddingsUsageFigures, messagesUsageFigures, responsesUsageFigures, UsageFigures } from './usage-figures';

/**
 * Reads the usage out of a native answer while it passes through. Only events that can carry
 * usage are parsed; every other event is passed on without being decoded.
 */
export interface ResponseMeter {
  /** A complete JSON answer with status 2xx. */
  readJson(body: Buffer): void;
  /** One complete SSE event as received; returns false to keep it from the client. */
  readEvent(raw: Buffer): boolean;
  /**
   * What every event the meter looks at contains, matched against the event read as latin1:
   * `readEvent` passes an event without a match unread. A chunk of whole events with no match
   * therefore goes to the client uncut (`MeteredEvents`).
   */
  readonly eventWords: RegExp;
  figures(): UsageFigures | undefined;
  /** What the call's price depends on beyond its figures (format B: each image's pixels); undefined: nothing. */
  priceBasis?(): PriceBasis | undefined;
  /** An error the upstream reported inside a successful HTTP answer (speech `base_resp`). */
  errorCode?(): string | null;
}

/** In every protocol an error event's data names `error` (a member, or `"type":"error"`). */
const ERROR_WORD = Buffer.from('"error"');

/**
 * Whether a raw event contains any of a meter's words: one regular expression over the bytes
 * read as latin1 (1:1, so ASCII words match exactly) costs a third of two `Buffer.indexOf`
 * calls, and almost every event contains none of them.
 */
export function mentions(raw: Buffer, words: RegExp): boolean {
  return words.test(raw.toString('latin1'));
}

/** The words of a meter that reads no event. */
export const NO_WORDS = /(?!)/;

/** The JSON value of a text, or undefined when it is not JSON (upstream answers are not trusted). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function field(value: unknown, key: string): unknown {
  return value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}

/** The JSON `data` of one raw SSE event, or undefined. */
export function eventData(raw: Buffer): unknown {
  const event = parseSseEvent(raw);
  return event ? parseJson(event.data) : undefined;
}

/**
 * What a 2xx JSON answer that is passed on unchanged says about the call, for its record: a
 * body that is not a JSON object, or one that carries an `error` member (an error sent with
 * HTTP 200), is not an answer, whatever the status.
 */
export function answerProblem(answer: unknown): string | null {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return 'upstream_unreadable_answer';
  const error = (answer as Record<string, unknown>).error;
  return error === undefined || error === null ? null : 'upstream_error_in_answer';
}

/**
 * Whether one raw SSE event is the upstream reporting an error inside a stream it began with
 * 2xx: chat's `{"error": …}` chunk, the messages and responses `error` event (`"type":"error"`).
 * Most events are ruled out by one byte search.
 */
export function isErrorEvent(raw: Buffer): boolean {
  if (raw.indexOf(ERROR_WORD) === -1) return false;
  const data = eventData(raw);
  const error = field(data, 'error');
  return (error !== undefined && error !== null) || field(data, 'type') === 'error';
}

/** The record's code for a stream that carried the upstream's own error event. */
export const ERROR_IN_STREAM = 'upstream_error_in_stream';

/**
 * The meters' words skip members whose value is `null` (the lookahead `(?!\s*:\s*null)`): with
 * `include_usage`, which the gateway switches on, every chat chunk carries `"usage":null` and only
 * the last one's usage figures; a Responses stream's `response.created` and `response.in_progress`
 * carry the whole response object (instructions and tools echoed, often large) with
 * `"error":null`. Such events are passed on uncut and unparsed. On the raw JSON a quote right
 * after the word makes it a member name or a whole string value (inside a string it would be
 * escaped), and an event is read when any such member in it has a value.
 */
const USAGE_WITH_VALUE = /"usage"(?!\s*:\s*null)/;
const CHAT_WORDS = /"usage"(?!\s*:\s*null)|"error"(?!\s*:\s*null)/;

/**
 * Chat-completions: usage comes in the final chunk (`choices: []`) that the gateway asked for
 * with `stream_options.include_usage`; a client that did not ask for it does not get it.
 */
export class ChatMeter implements ResponseMeter {
  readonly eventWords = CHAT_WORDS;
  private usage: UsageFigures | undefined;
  private problem: string | null = null;

  constructor(private readonly clientWantsUsageChunk: boolean) {}

  readJson(body: Buffer): void {
    const answer = parseJson(body.toString('utf8'));
    this.problem = answerProblem(answer);
    this.usage = chatUsageFigures(field(answer, 'usage')) ?? this.usage;
  }

  errorCode(): string | null {
    return this.problem;
  }

  readEvent(raw: Buffer): boolean {
    if (!mentions(raw, CHAT_WORDS)) return true;
    if (isErrorEvent(raw)) this.problem = ERROR_IN_STREAM;
    if (!mentions(raw, USAGE_WITH_VALUE)) return true;
    const chunk = eventData(raw);
    const usage = field(chunk, 'usage');
    if (!usage || typeof usage !== 'object') return true;
    this.usage = chatUsageFigures(usage) ?? this.usage;
    const choices = field(chunk, 'choices');
    const isUsageChunk = Array.isArray(choices) && choices.length === 0;
    return this.clientWantsUsageChunk || !isUsageChunk;
  }

  figures(): UsageFigures | undefined {
    return this.usage;
  }
}

const RESPONSES_WORDS = /response\.(?:completed|incomplete|failed)|"error"(?!\s*:\s*null)/;
const RESPONSE_FINAL_EVENTS = [Buffer.from('response.completed'), Buffer.from('response.incomplete'), Buffer.from('response.failed')];

/** Responses: usage is on the response object of the final event. */
export class ResponsesMeter implements ResponseMeter {
  readonly eventWords = RESPONSES_WORDS;
  private usage: UsageFigures | undefined;
  private problem: string | null = null;

  readJson(body: Buffer): void {
    const answer = parseJson(body.toString('utf8'));
    this.problem = answerProblem(answer);
    this.usage = responsesUsageFigures(field(answer, 'usage')) ?? this.usage;
  }

  errorCode(): string | null {
    return this.problem;
  }

  readEvent(raw: Buffer): boolean {
    if (!mentions(raw, RESPONSES_WORDS)) return true;
    if (!RESPONSE_FINAL_EVENTS.some((name) => raw.indexOf(name) !== -1)) {
      if (isErrorEvent(raw)) this.problem = ERROR_IN_STREAM;
      return true;
    }
    const data = eventData(raw);
    if (field(data, 'type') === 'response.failed') this.problem = ERROR_IN_STREAM;
    const usage = field(field(data, 'response'), 'usage');
    this.usage = responsesUsageFigures(usage) ?? this.usage;
    return true;
  }

  figures(): UsageFigures | undefined {
    return this.usage;
  }
}

const MESSAGE_START = Buffer.from('message_start');
const MESSAGE_DELTA = Buffer.from('message_delta');
const MESSAGES_WORDS = /message_start|message_delta|"error"(?!\s*:\s*null)/;

/**
 * Messages: `message_start` carries the input usage, each `message_delta` cumulative totals
 * that overwrite the figures they name. A breakdown object (`cache_creation` with the cache
 * writes by duration, `output_tokens_details`) is merged member by member, so each figure in it
 * follows the same rule, as on the translated path (translate.ts merges canonical figures).
 */
export class MessagesMeter implements ResponseMeter {
  readonly eventWords = MESSAGES_WORDS;
  private usage: Record<string, unknown> | undefined;
  private problem: string | null = null;

  readJson(body: Buffer): void {
    const answer = parseJson(body.toString('utf8'));
    this.problem = answerProblem(answer);
    const usage = field(answer, 'usage');
    if (usage && typeof usage === 'object') this.usage = { ...(usage as Record<string, unknown>) };
  }

  errorCode(): string | null {
    return this.problem;
  }

  readEvent(raw: Buffer): boolean {
    if (!mentions(raw, MESSAGES_WORDS)) return true;
    if (isErrorEvent(raw)) this.problem = ERROR_IN_STREAM;
    const isStart = raw.indexOf(MESSAGE_START) !== -1;
    if (!isStart && raw.indexOf(MESSAGE_DELTA) === -1) return true;
    const data = eventData(raw);
    const usage = isStart ? field(field(data, 'message'), 'usage') : field(data, 'usage');
    if (usage && typeof usage === 'object') this.usage = mergeReported(this.usage ?? {}, usage as Record<string, unknown>);
    return true;
  }

  figures(): UsageFigures | undefined {
    return this.usage ? messagesUsageFigures(this.usage) : undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `known` with each reported (neither null nor absent) member of `update` written over it, objects member by member. */
function mergeReported(known: Record<string, unknown>, update: Record<string, unknown>): Record<string, unknown> {
  for (const [name, value] of Object.entries(update)) {
    if (value === null || value === undefined) continue;
    const before = known[name];
    known[name] = isObject(value) && isObject(before) ? mergeReported({ ...before }, value) : value;
  }
  return known;
}

export class EmbeddingsMeter implements ResponseMeter {
  readonly eventWords = NO_WORDS;
  private usage: UsageFigures | undefined;

  readJson(body: Buffer): void {
    this.usage = embeddingsUsageFigures(field(parseJson(body.toString('utf8')), 'usage'));
  }

  readEvent(): boolean {
    return true;
  }

  figures(): UsageFigures | undefined {
    return this.usage;
  }
}

/** count_tokens is forwarded and recorded, never billed. */
export class UnbilledMeter implements ResponseMeter {
  readonly eventWords = NO_WORDS;
  readJson(): void {}
  readEvent(): boolean {
    return true;
  }
  figures(): UsageFigures | undefined {
    return undefined;
  }
}
