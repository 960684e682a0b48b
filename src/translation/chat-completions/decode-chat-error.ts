import type { CanonicalError } from '../canonical/response';
import { asRecord, nonEmptyString } from './decode-chat-response';

/**
 * OpenAI chat error bodies (`{"error":{message,type,code,param}}`) → canonical error.
 * @see https://platform.openai.com/docs/guides/error-codes
 */

type ErrorKind = CanonicalError['kind'];

/** A proxy's HTML page can be long; the client needs its gist, not the whole page. */
const MAXIMUM_TEXT_LENGTH = 1000;

export function decodeChatError(status: number, bodyText: string): CanonicalError {
  const fields = decodeErrorFields(parseJson(bodyText)) ?? { message: textMessage(status, bodyText) };
  const error: CanonicalError = { status, kind: chatErrorKind(status), message: fields.message };
  if (fields.code !== undefined) error.code = fields.code;
  return error;
}

/**
 * Message and code of an error payload: the OpenAI shape, or the looser ones chat-compatible
 * upstreams send (`{"error":"text"}`, a flat `{"message","code"}`). `code` falls back to `type`, which
 * OpenAI fills even when `code` is null. Undefined when the payload has no message at all.
 */
export function decodeErrorFields(payload: unknown): { message: string; code?: string } | undefined {
  const body = asRecord(payload);
  const error = errorObjectOf(body);
  const message = nonEmptyString(error.message) ?? nonEmptyString(body.message);
  if (message === undefined) return undefined;
  const code = nonEmptyString(error.code) ?? nonEmptyString(error.type);
  return code === undefined ? { message } : { message, code };
}

function errorObjectOf(body: Record<string, unknown>): Record<string, unknown> {
  if (typeof body.error === 'string') return { message: body.error };
  return body.error === undefined ? body : asRecord(body.error);
}

/**
 * The status decides the kind: it is what every protocol agrees on, whereas `type` and `code`
 * values differ between OpenAI and compatible upstreams.
 */
export function chatErrorKind(status: number): ErrorKind {
  switch (status) {
    case 400:
    case 422:
      return 'invalid_request';
    case 401:
      return 'authentication';
    case 403:
      return 'permission';
    case 404:
      return 'not_found';
    case 429:
      return 'rate_limit';
    case 503:
    case 529:
      return 'overloaded';
    case 504:
      return 'timeout';
    default:
      // Other 4xx (402, 409, 413, …) are still the request's problem; anything else is the upstream's.
      return status >= 400 && status < 500 ? 'invalid_request' : 'server';
  }
}

/**
 * Kind of an error reported inside a stream, where no status comes along: read from the OpenAI
 * `type` (429 errors carry `requests` or `tokens`). Anything unknown is an upstream failure.
 */
export function chatStreamErrorKind(type: unknown): ErrorKind {
  switch (type) {
    case 'invalid_request_error':
      return 'invalid_request';
    case 'authentication_error':
      return 'authentication';
    case 'permission_error':
      return 'permission';
    case 'not_found_error':
      return 'not_found';
    case 'rate_limit_error':
    case 'requests':
    case 'tokens':
      return 'rate_limit';
    case 'overloaded_error':
      return 'overloaded';
    default:
      return 'server';
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function textMessage(status: number, bodyText: string): string {
  const text = bodyText.trim();
  if (text === '') return `The upstream answered with status ${status} and no body.`;
  return text.length > MAXIMUM_TEXT_LENGTH ? `${text.slice(0, MAXIMUM_TEXT_LENGTH)}…` : text;
}
