import type { CanonicalError } from '../canonical/response';

/** @see https://docs.anthropic.com/en/api/errors#error-shapes */
export type MessagesErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'overloaded_error'
  | 'api_error'
  | 'timeout_error';

/** The canonical error as a messages error body, with the upstream's status kept by the caller. */
export function encodeMessagesError(error: CanonicalError): Record<string, unknown> {
  return { type: 'error', error: { type: messagesErrorType(error.kind), message: error.message } };
}

/** @see https://docs.anthropic.com/en/api/errors#error-shapes */
export function messagesErrorType(kind: CanonicalError['kind']): MessagesErrorType {
  switch (kind) {
    case 'invalid_request':
      return 'invalid_request_error';
    case 'authentication':
      return 'authentication_error';
    case 'permission':
      return 'permission_error';
    case 'not_found':
      return 'not_found_error';
    case 'rate_limit':
      return 'rate_limit_error';
    case 'overloaded':
      return 'overloaded_error';
    case 'server':
      return 'api_error';
    case 'timeout':
      return 'timeout_error';
    default: {
      const unreachable: never = kind;
      throw new Error(`Unhandled error kind: ${String(unreachable)}`);
    }
  }
}
