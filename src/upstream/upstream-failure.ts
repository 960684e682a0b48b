import type { InterfaceName } from '../config/gateway-config';

/** How an attempt on a line went wrong, as far as failover cares. */
export type AttemptFailure = 'refused' | 'timeout' | 'reset' | 'aborted';

const REFUSED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

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
/** A speech refusal is a short JSON; an answer longer than this carries audio and is no refusal. */
const SPEECH_REFUSAL_MAX_BYTES = 64 * 1024;
/** The speech family's `base_resp.status_code` for a key it does not accept. */
const SPEECH_LOGIN_FAILED = 1004;

/**
 * Whether an answer needs its body read to tell a credential refusal: the generateContent
 * family answers a wrong key with 400 and `ErrorInfo.reason` API_KEY_INVALID; the speech family
 * (vendor-c t2a_v2) with HTTP 200 and a JSON body whose `base_resp.status_code` is 1004, in
 * streaming mode as well.
 */
export function mayRefuseCredentialsInBody(entry: InterfaceName, status: number, contentType?: string): boolean {
  if (entry === 'images_c') return status === 400;
  if (entry === 'speech_c') return status === 200 && (contentType ?? '').startsWith('application/json');
  return false;
}

/** A body (read because of `mayRefuseCredentialsInBody`) that refuses the line's key. */
export function refusesCredentialsInBody(entry: InterfaceName, body: Buffer | undefined): boolean {
  if (body === undefined) return false;
  if (entry !== 'speech_c') return body.includes(API_KEY_INVALID);
  if (body.length > SPEECH_REFUSAL_MAX_BYTES) return false;
  try {
    const answer = JSON.parse(body.toString('utf8')) as { base_resp?: { status_code?: unknown } } | null;
    return answer?.base_resp?.status_code === SPEECH_LOGIN_FAILED;
  } catch {
    return false;
  }
}
