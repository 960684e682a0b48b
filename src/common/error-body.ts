import { GatewayError, GatewayErrorCode, unreachable } from './gateway-error';

/** Which wire family an error body must follow. */
export type ErrorDialect = 'openai' | 'messages';

/** `error.type` of the chat-completions shape. */
function openaiType(code: GatewayErrorCode): string {
  switch (code) {
    case 'invalid_request':
    case 'request_too_large':
      return 'invalid_request_error';
    case 'invalid_api_key':
      return 'authentication_error';
    case 'insufficient_quota':
      return 'insufficient_quota';
    case 'model_not_allowed':
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
      return 'invalid_request_error';
    case 'invalid_api_key':
      return 'authentication_error';
    case 'insufficient_quota':
      return 'billing_error';
    case 'model_not_allowed':
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

/** SPEC.md: a 400 on chat-completions carries `code: null`; every other error names its code. */
function wireCode(code: GatewayErrorCode): string | null {
  return code === 'invalid_request' ? null : code;
}

export function errorBody(error: GatewayError, dialect: ErrorDialect): string {
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

/** The messages entry (and its count_tokens) answers in the messages shape; everything else in the chat shape. */
export function dialectOfPath(url: string): ErrorDialect {
  return url.startsWith('/v1/messages') ? 'messages' : 'openai';
}
