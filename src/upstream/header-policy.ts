import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { InterfaceName, UpstreamAuthStyle } from '../config/gateway-config';

/**
 * Header names. SPEC.md writes vendor-named headers with neutral stand-ins; on the wire the
 * vendors' SDKs send the real names. The gateway accepts both spellings from clients and
 * forwards each under the name it arrived with.
 *
 * | SPEC.md name                 | wire name                    |
 * |------------------------------|------------------------------|
 * | Messages-Version             | anthropic-version            |
 * | Messages-Beta                | anthropic-beta               |
 * | Chat-Beta                    | openai-beta                  |
 * | messages-ratelimit-unified-* | anthropic-ratelimit-unified-* |
 * | x-alt-api-key                | x-goog-api-key               |
 */
const FORWARDED_REQUEST_HEADERS = new Set([
  'content-type',
  'accept',
  'user-agent',
  'messages-version',
  'messages-beta',
  'chat-beta',
  'anthropic-version',
  'anthropic-beta',
  'openai-beta',
]);

const MESSAGES_VERSION_HEADERS = ['anthropic-version', 'messages-version'] as const;
export const DEFAULT_MESSAGES_VERSION = '2023-06-01';

const RETURNED_RESPONSE_HEADERS = new Set(['retry-after', 'retry-after-ms', 'x-should-retry']);
const RETURNED_RESPONSE_PREFIXES = ['anthropic-ratelimit-unified-', 'messages-ratelimit-unified-'];

export function defaultAuthStyle(entry: InterfaceName): UpstreamAuthStyle {
  switch (entry) {
    case 'messages':
      return 'x-api-key';
    case 'images_c':
      return 'x-alt-api-key';
    default:
      return 'bearer';
  }
}

function credentialHeader(style: UpstreamAuthStyle, apiKey: string): [string, string] {
  switch (style) {
    case 'bearer':
      return ['authorization', `Bearer ${apiKey}`];
    case 'x-api-key':
      return ['x-api-key', apiKey];
    case 'x-alt-api-key':
      return ['x-goog-api-key', apiKey];
  }
}

/**
 * The headers sent upstream: the six forwardable ones as the client sent them, the line's own
 * credential (never the client's key), and for the messages protocol a version header when
 * the client gave none (under both spellings, so either reading of the header reaches the
 * upstream).
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  entry: InterfaceName,
  auth: { style: UpstreamAuthStyle; apiKey: string },
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in incoming) {
    if (!FORWARDED_REQUEST_HEADERS.has(name)) continue;
    const value = incoming[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  if (entry === 'messages' && !MESSAGES_VERSION_HEADERS.some((name) => name in headers)) {
    for (const name of MESSAGES_VERSION_HEADERS) headers[name] = DEFAULT_MESSAGES_VERSION;
  }
  if (!headers['content-type']) headers['content-type'] = 'application/json';
  const [name, value] = credentialHeader(auth.style, auth.apiKey);
  headers[name] = value;
  return headers;
}

/**
 * The upstream response headers a client gets back (retry hints and rate-limit state), in a new
 * object the caller may add its own headers to (rather than copying it into another: an object
 * spread per call is a measurable cost on the request path).
 */
export function returnedResponseHeaders(upstream: Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    if (RETURNED_RESPONSE_HEADERS.has(name) || RETURNED_RESPONSE_PREFIXES.some((prefix) => name.startsWith(prefix))) {
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
  }
  return headers;
}
