import type { CanonicalError } from '../canonical/response';
import { asRecord, nonEmptyString, parseJson } from './responses-values';

/**
 * OpenAI Responses error bodies (`{"error":{message,type,code,param}}`, the chat shape) →
 * canonical error, and the kind of an error reported inside a stream.
 * @see https://platform.openai.com/docs/guides/error-codes
 */

type ErrorKind = CanonicalError['kind'];

/** A proxy's HTML page can be long; the client needs its gist, not the whole page. */
const MAXIMUM_TEXT_LENGTH = 1000;

export function decodeResponsesError(status: number, bodyText: string): CanonicalError {
  const body = asRecord(parseJson(bodyText));
  const nested = asRecord(body.error);
  const message = nonEmptyString(nested.message) ?? nonEmptyString(body.message) ?? textMessage(status, bodyText);
  // OpenAI fills `type` even when `code` is null, so it is the fallback code.
  const code = nonEmptyString(nested.code) ?? nonEmptyString(nested.type);
  const error: CanonicalError = { status, kind: responsesErrorKind(status), message };
  if (code !== undefined) error.code = code;
  return error;
}

/** The status decides the kind: it is what every protocol agrees on. */
export function responsesErrorKind(status: number): ErrorKind {
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
      return 'overloaded';
    case 504:
      return 'timeout';
    default:
      // Other 4xx (402, 409, 413, …) are still the request's problem; anything else is the upstream's.
      return status >= 400 && status < 500 ? 'invalid_request' : 'server';
  }
}

/**
 * Kind of an error inside a stream (`error` event or `response.failed`), where no status comes
 * along: read from the code. Anything unknown is an upstream failure.
 * @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-error
 */
export function responsesStreamErrorKind(code: unknown): ErrorKind {
  switch (code) {
    case 'rate_limit_exceeded':
    case 'insufficient_quota':
      return 'rate_limit';
    case 'server_is_overloaded':
    case 'slow_down':
      return 'overloaded';
    case 'invalid_prompt':
    case 'invalid_request_error':
    case 'context_length_exceeded':
      return 'invalid_request';
    default:
      return 'server';
  }
}

function textMessage(status: number, bodyText: string): string {
  const text = bodyText.trim();
  if (text === '') return `The upstream answered with status ${status} and no body.`;
  return text.length > MAXIMUM_TEXT_LENGTH ? `${text.slice(0, MAXIMUM_TEXT_LENGTH)}…` : text;
}
