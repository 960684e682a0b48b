import type { Vendor } from './simulator-types';

/**
 * Error bodies in each vendor's own shape, so the gateway's pass-through and re-expression of
 * upstream errors is tested against what the real services send.
 * @see https://platform.openai.com/docs/guides/error-codes
 * @see https://docs.anthropic.com/en/api/errors
 * @see https://ai.google.dev/gemini-api/docs/troubleshooting
 */

export function vendorError(vendor: Vendor, status: number, message: string): unknown {
  return vendor === 'anthropic' ? anthropicError(status, message) : openAiError(status, message);
}

export function openAiError(status: number, message: string, code: string | null = openAiCode(status), param: string | null = null): unknown {
  return { error: { message, type: openAiType(status), param, code } };
}

/** Google APIs: `{ error: { code, message, status, details? } }`, `status` the canonical gRPC name. */
export function googleError(status: number, message: string, details?: unknown[]): unknown {
  return { error: { code: status, message, status: googleStatus(status), ...(details ? { details } : {}) } };
}

export function anthropicError(status: number, message: string): unknown {
  return { type: 'error', error: { type: anthropicType(status), message } };
}

function openAiType(status: number): string {
  if (status === 429) return 'requests';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

function openAiCode(status: number): string | null {
  switch (status) {
    case 401:
      return 'invalid_api_key';
    case 429:
      return 'rate_limit_exceeded';
    default:
      return null;
  }
}

function googleStatus(status: number): string {
  switch (status) {
    case 400:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
  }
}

function anthropicType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}
