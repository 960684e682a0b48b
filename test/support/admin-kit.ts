import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ADMIN_TOKEN_FOR_TESTS } from './gateway-harness';

/** Helpers of the admin suites: admin API calls, data-plane calls, and the stored key rows. */

export const ADMIN_AUTH = { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` } as const;

export interface Answer {
  status: number;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  body: any;
  text: string;
  headers: Headers;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * One HTTP call. A body that is a string goes as it is (for bodies that are not JSON), any
 * other value as JSON; `headers` replaces the admin token (pass `{}` for none).
 */
export async function httpCall(baseUrl: string, method: Method, path: string, body?: unknown, headers: Record<string, string> = ADMIN_AUTH): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text, headers: response.headers };
}

/** A chat call with `key`; the answer carries the request id of its usage record. */
export async function chatCall(baseUrl: string, key: string, model = 'chat-model'): Promise<Answer & { requestId: string }> {
  const answer = await httpCall(
    baseUrl,
    'POST',
    '/v1/chat/completions',
    { model, messages: [{ role: 'user', content: 'Tally the ledger' }] },
    { authorization: `Bearer ${key}` },
  );
  return { ...answer, requestId: answer.headers.get('x-request-id') ?? '' };
}

export function sha256Of(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The id of the stored key whose plaintext is `key`. */
export async function keyIdOf(dataSource: DataSource, key: string): Promise<string> {
  const [row] = await dataSource.query('SELECT id FROM api_key WHERE key_sha256 = $1', [sha256Of(key)]);
  if (!row) throw new Error(`no stored key for ${key.slice(0, 8)}…`);
  return row.id;
}

export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
