import { GatewayError, GatewayErrorCode, statusOf, unreachable } from './gateway-error';

/** Which wire family an error body must follow. */
export type ErrorDialect = 'openai' | 'messages' | 'generate_content' | 'speech';

/** `error.type` of the chat-completions shape. */
function openaiType(code: GatewayErrorCode): string {
  switch (code) {
    case 'invalid_request':
    case 'request_too_large':
    case 'conflict':
      return 'invalid_request_error';
    case 'invalid_api_key':
      return 'authentication_error';
    case 'insufficient_quota':
      return 'insufficient_quota';
    case 'model_not_allowed':
    case 'forbidden':
      return 'permission_error';
    case 'model_not_found':
    case 'not_found':
      return 'not_found_error';
    case 'rate_limit_exceeded':
      return 'rate_limit_error';
    case 'upstream_failed':
    case 'service_unavailable':
    case 'upstream_timeout':
      return 'upstream_error';
    case 'internal_error':
      return 'server_error';
    default:
      return unreachable(code);
  }
}

/**
 * `error.type` of the messages shape: the values the messages protocol documents, so its
 * SDK maps them to the same error classes it uses for the vendor.
 * @see https://docs.anthropic.com/en/api/errors
 */
function messagesType(code: GatewayErrorCode): string {
  switch (code) {
    case 'invalid_request':
    case 'conflict':
      return 'invalid_request_error';
    case 'invalid_api_key':
      return 'authentication_error';
    case 'insufficient_quota':
      return 'billing_error';
    case 'model_not_allowed':
    case 'forbidden':
      return 'permission_error';
    case 'model_not_found':
    case 'not_found':
      return 'not_found_error';
    case 'request_too_large':
      return 'request_too_large';
    case 'rate_limit_exceeded':
      return 'rate_limit_error';
    case 'service_unavailable':
      return 'overloaded_error';
    case 'upstream_failed':
    case 'upstream_timeout':
    case 'internal_error':
      return 'api_error';
    default:
      return unreachable(code);
  }
}

/**
 * `error.status` of the generateContent (format C) shape: the canonical status names that
 * family's errors carry. @see https://cloud.google.com/apis/design/errors#handling_errors
 */
function generateContentStatus(code: GatewayErrorCode): string {
  switch (code) {
    case 'invalid_request':
    case 'request_too_large':
      return 'INVALID_ARGUMENT';
    case 'invalid_api_key':
      return 'UNAUTHENTICATED';
    case 'insufficient_quota':
    case 'rate_limit_exceeded':
      return 'RESOURCE_EXHAUSTED';
    case 'model_not_allowed':
    case 'forbidden':
      return 'PERMISSION_DENIED';
    case 'model_not_found':
    case 'not_found':
      return 'NOT_FOUND';
    case 'conflict':
      return 'ALREADY_EXISTS';
    case 'upstream_failed':
    case 'service_unavailable':
      return 'UNAVAILABLE';
    case 'upstream_timeout':
      return 'DEADLINE_EXCEEDED';
    case 'internal_error':
      return 'INTERNAL';
    default:
      return unreachable(code);
  }
}

/**
 * `base_resp.status_code` of the speech (vendor-c t2a_v2) shape: that family's clients check it
 * rather than the HTTP status. 1000 unknown, 1001 timeout, 1002 rate limit, 1004 authentication,
 * 1008 insufficient balance, 1013 internal, 2013 invalid parameters.
 */
function speechStatusCode(code: GatewayErrorCode): number {
  switch (code) {
    case 'invalid_request':
    case 'request_too_large':
    case 'model_not_found':
    case 'not_found':
    case 'conflict':
      return 2013;
    case 'invalid_api_key':
    case 'model_not_allowed':
    case 'forbidden':
      return 1004;
    case 'insufficient_quota':
      return 1008;
    case 'rate_limit_exceeded':
      return 1002;
    case 'upstream_timeout':
      return 1001;
    case 'upstream_failed':
    case 'service_unavailable':
      return 1000;
    case 'internal_error':
      return 1013;
    default:
      return unreachable(code);
  }
}

/** SPEC.md: a 400 on chat-completions carries `code: null`; every other error names its code. */
function wireCode(code: GatewayErrorCode): string | null {
  return code === 'invalid_request' ? null : code;
}

export function errorBody(error: GatewayError, dialect: ErrorDialect): string {
  if (dialect === 'generate_content') {
    // The gateway's own code travels as the reason of an ErrorInfo detail, the family's way.
    return JSON.stringify({
      error: {
        code: statusOf(error.code),
        message: error.message,
        status: generateContentStatus(error.code),
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: error.code.toUpperCase(), domain: 'gateway' }],
      },
    });
  }
  if (dialect === 'speech') {
    return JSON.stringify({
      error: { message: error.message, type: openaiType(error.code), code: wireCode(error.code) },
      base_resp: { status_code: speechStatusCode(error.code), status_msg: error.message },
    });
  }
  if (dialect === 'messages') {
    return JSON.stringify({
      type: 'error',
      error: { type: messagesType(error.code), message: error.message, code: wireCode(error.code) },
    });
  }
  return JSON.stringify({
    error: { message: error.message, type: openaiType(error.code), code: wireCode(error.code) },
  });
}

/**
 * The messages entry (and its count_tokens) answers in the messages shape, format C in the
 * generateContent shape, speech in the chat shape with the `base_resp` its clients check;
 * everything else in the chat shape.
 */
export function dialectOfPath(url: string): ErrorDialect {
  if (url.startsWith('/v1/messages')) return 'messages';
  if (url.startsWith('/v1beta/')) return 'generate_content';
  if (url.startsWith('/vendor-c/v1/t2a_v2')) return 'speech';
  return 'openai';
}
