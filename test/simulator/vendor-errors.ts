import type { Vendor } from './simulator-types';

/**
 * Error bodies in each vendor's own shape, so the gateway's pass-through and re-expression of
 * upstream errors is tested against what the real services send.
 * @see https://platform.openai.com/docs/guides/error-codes
 * @see https://docs.anthropic.com/en/api/errors
 */

export function vendorError(vendor: Vendor, status: number, message: string): unknown {
  return vendor === 'anthropic' ? anthropicError(status, message) : openAiError(status, message);
}

export function openAiError(status: number, message: string, code: string | null = openAiCode(status)): unknown {
  return { error: { message, type: openAiType(status), param: null, code } };
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
