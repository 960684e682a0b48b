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

/** Statuses after which the next line is tried (before the first byte reached the client). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Upstream credential problems become 502, so they never look like the caller's. */
export function isCredentialStatus(status: number): boolean {
  return status === 401 || status === 402 || status === 403;
}
