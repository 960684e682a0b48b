import type { InterfaceName } from '../config/gateway-config';

/** How an attempt on a line went wrong, as far as failover cares. */
export type AttemptFailure = 'refused' | 'timeout' | 'reset' | 'aborted';

const REFUSED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export function classifyFailure(error: unknown, clientGone: boolean): AttemptFailure {
  if (clientGone) return 'aborted';
  const code = (error as { code?: string } | null)?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return 'timeout';
  if (code && REFUSED_CODES.has(code)) return 'refused';
  return 'reset';
}

/**
 * The answer's body went quiet for the line's `timeout_ms` (undici's `bodyTimeout`): the line
 * cools down as for missing headers, and the call ends as a timeout.
 */
export function isBodyTimeout(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === 'UND_ERR_BODY_TIMEOUT';
}

/** Statuses after which the next line is tried (before the first byte reached the client). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Upstream credential problems become 502, so they never look like the caller's. */
export function isCredentialStatus(status: number): boolean {
  return status === 401 || status === 402 || status === 403;
}

const API_KEY_INVALID = Buffer.from('"API_KEY_INVALID"');

/**
 * Whether an answer of this status needs its body read to tell a credential refusal: the
 * generateContent family answers a wrong key with 400 and `ErrorInfo.reason` API_KEY_INVALID.
 */
export function mayRefuseCredentialsInBody(entry: InterfaceName, status: number): boolean {
  return entry === 'images_c' && status === 400;
}

/** A body (read because of `mayRefuseCredentialsInBody`) that refuses the line's key. */
export function refusesCredentialsInBody(body: Buffer | undefined): boolean {
  return body !== undefined && body.includes(API_KEY_INVALID);
}
