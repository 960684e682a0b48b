/**
 * One exception for every error the gateway itself produces, with a code from a closed set.
 * The code decides the HTTP status and each protocol's error shape at the edge
 * (see error-body.ts); services never build error bodies themselves.
 */
export type GatewayErrorCode =
  | 'invalid_request'
  | 'invalid_api_key'
  | 'insufficient_quota'
  | 'model_not_allowed'
  | 'forbidden'
  | 'model_not_found'
  | 'not_found'
  | 'conflict'
  | 'request_too_large'
  | 'rate_limit_exceeded'
  | 'upstream_failed'
  | 'service_unavailable'
  | 'upstream_timeout'
  | 'internal_error';

export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    /** Seconds for a `Retry-After` header (429 and 503). */
    readonly retryAfterSeconds?: number,
    /** More headers of the answer (a rate limit's `x-ratelimit-*`). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

export function statusOf(code: GatewayErrorCode): number {
  switch (code) {
    case 'invalid_request':
      return 400;
    case 'invalid_api_key':
      return 401;
    case 'insufficient_quota':
      return 402;
    case 'model_not_allowed':
    case 'forbidden':
      return 403;
    case 'model_not_found':
    case 'not_found':
      return 404;
    case 'conflict':
      return 409;
    case 'request_too_large':
      return 413;
    case 'rate_limit_exceeded':
      return 429;
    case 'upstream_failed':
      return 502;
    case 'service_unavailable':
      return 503;
    case 'upstream_timeout':
      return 504;
    case 'internal_error':
      return 500;
    default:
      return unreachable(code);
  }
}

export function unreachable(value: never): never {
  throw new Error(`unreachable: ${String(value)}`);
}
