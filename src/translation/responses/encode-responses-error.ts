import type { CanonicalError } from '../canonical/response';

/**
 * Canonical error → the OpenAI error body a responses client expects
 * (`{"error":{message,type,code,param}}`), and the codes of in-stream errors.
 * @see https://platform.openai.com/docs/guides/error-codes
 */

type ErrorKind = CanonicalError['kind'];

export function encodeResponsesError(error: CanonicalError): Record<string, unknown> {
  return { error: { message: error.message, type: responsesErrorType(error.kind), code: error.code ?? null, param: null } };
}

/** `error.type` values of OpenAI bodies, which the SDK shows but does not branch on. */
export function responsesErrorType(kind: ErrorKind): string {
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
    case 'server':
    case 'timeout':
      return 'server_error';
    default: {
      const unreachable: never = kind;
      throw new Error(`Unknown error kind: ${String(unreachable)}`);
    }
  }
}

/**
 * `code` of a streamed `error` event and of `response.error` for a canonical error kind; a
 * kind that is not a canonical one (a decoder passed the upstream's own) is kept as it is.
 * @see https://platform.openai.com/docs/api-reference/responses/object#responses/object-error
 */
export function responsesStreamErrorCode(kind: string | undefined): string {
  switch (kind as ErrorKind | undefined) {
    case 'rate_limit':
      return 'rate_limit_exceeded';
    case 'overloaded':
      return 'server_is_overloaded';
    case 'invalid_request':
      return 'invalid_prompt';
    case 'authentication':
    case 'permission':
    case 'not_found':
    case 'server':
    case 'timeout':
    case undefined:
      return 'server_error';
    default:
      return kind as string;
  }
}
