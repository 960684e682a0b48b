import type { CanonicalError } from '../canonical/response';
import { asRecord, isRecord, parseJsonObject, stringOf } from './messages-values';

type ErrorKind = CanonicalError['kind'];

/** Longest piece of a non-JSON error body (an HTML page of a proxy, say) quoted in the message. */
const QUOTED_BODY_LENGTH = 500;

/**
 * A messages upstream's error answer → the canonical error. The body's `error.type` names the
 * kind; when it is missing or unknown, the status does.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function decodeMessagesError(status: number, bodyText: string): CanonicalError {
  const body = parseJsonObject(bodyText);
  const error = asRecord(body?.error);
  const type = stringOf(error.type);
  const message = stringOf(error.message) ?? fallbackMessage(status, bodyText, isRecord(body));
  return { status, kind: messagesErrorKind(type) ?? kindOfStatus(status), message, ...(type !== undefined && { code: type }) };
}

function fallbackMessage(status: number, bodyText: string, isJson: boolean): string {
  const text = bodyText.trim();
  if (text === '' || isJson) return `The upstream answered with status ${status}.`;
  return `The upstream answered with status ${status}: ${text.slice(0, QUOTED_BODY_LENGTH)}`;
}

/**
 * The kind an `error.type` names, or undefined for a type this code does not know.
 * @see https://docs.anthropic.com/en/api/errors#error-shapes
 */
export function messagesErrorKind(type: string | undefined): ErrorKind | undefined {
  switch (type) {
    case 'invalid_request_error':
    case 'request_too_large':
      return 'invalid_request';
    case 'authentication_error':
      return 'authentication';
    // Billing trouble is the upstream account's, refused like a permission.
    case 'billing_error':
    case 'permission_error':
      return 'permission';
    case 'not_found_error':
      return 'not_found';
    case 'rate_limit_error':
      return 'rate_limit';
    case 'overloaded_error':
      return 'overloaded';
    case 'timeout_error':
      return 'timeout';
    case 'api_error':
      return 'server';
    default:
      return undefined;
  }
}

function kindOfStatus(status: number): ErrorKind {
  switch (status) {
    case 401:
      return 'authentication';
    case 402:
    case 403:
      return 'permission';
    case 404:
      return 'not_found';
    case 408:
    case 504:
      return 'timeout';
    case 429:
      return 'rate_limit';
    case 529:
      return 'overloaded';
    default:
      return status >= 500 ? 'server' : 'invalid_request';
  }
}
