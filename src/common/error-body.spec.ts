import { dialectOfPath, errorBody } from './error-body';
import { GatewayError, GatewayErrorCode, statusOf } from './gateway-error';

/**
 * The status of every code. Typed as a complete record, so adding a code to GatewayErrorCode
 * without deciding its status here fails the typecheck.
 */
const STATUS_OF: Record<GatewayErrorCode, number> = {
  invalid_request: 400,
  invalid_api_key: 401,
  insufficient_quota: 402,
  model_not_allowed: 403,
  model_not_found: 404,
  not_found: 404,
  request_too_large: 413,
  rate_limit_exceeded: 429,
  internal_error: 500,
  upstream_failed: 502,
  service_unavailable: 503,
  upstream_timeout: 504,
};
const CODES = Object.keys(STATUS_OF) as GatewayErrorCode[];

/** `error.type` values the messages protocol documents (https://docs.anthropic.com/en/api/errors). */
const MESSAGES_ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'overloaded_error',
];

function parsed(code: GatewayErrorCode, dialect: 'openai' | 'messages'): Record<string, any> {
  return JSON.parse(errorBody(new GatewayError(code, `message for ${code}`), dialect));
}

describe('gateway error bodies', () => {
  it.each(CODES.map((code) => [code, STATUS_OF[code]]))('maps %s to HTTP %i', (code, status) => {
    expect(statusOf(code as GatewayErrorCode)).toBe(status);
  });

  it.each(CODES)('renders %s in the chat shape {"error":{"message","type","code"}}', (code) => {
    const body = parsed(code, 'openai');

    expect(Object.keys(body)).toEqual(['error']);
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'type']);
    expect(body.error.message).toBe(`message for ${code}`);
    expect(typeof body.error.type).toBe('string');
    expect(body.error.type).not.toBe('');
  });

  it.each(CODES)('renders %s in the messages shape {"type":"error","error":{"type","message","code"}}', (code) => {
    const body = parsed(code, 'messages');

    expect(Object.keys(body).sort()).toEqual(['error', 'type']);
    expect(body.type).toBe('error');
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'type']);
    expect(body.error.message).toBe(`message for ${code}`);
    expect(MESSAGES_ERROR_TYPES).toContain(body.error.type);
  });

  it.each(CODES.filter((code) => STATUS_OF[code] !== 400))('names the code %s in both shapes', (code) => {
    expect(parsed(code, 'openai').error.code).toBe(code);
    expect(parsed(code, 'messages').error.code).toBe(code);
  });

  it('gives a 400 the code null in both shapes (SPEC.md Errors)', () => {
    const codes400 = CODES.filter((code) => STATUS_OF[code] === 400);

    expect(codes400).toEqual(['invalid_request']);
    for (const code of codes400) {
      expect(parsed(code, 'openai').error).toHaveProperty('code', null);
      expect(parsed(code, 'messages').error).toHaveProperty('code', null);
    }
  });

  it.each([
    ['invalid_api_key', 'authentication_error'],
    ['insufficient_quota', 'billing_error'],
    ['model_not_allowed', 'permission_error'],
    ['model_not_found', 'not_found_error'],
    ['rate_limit_exceeded', 'rate_limit_error'],
    ['invalid_request', 'invalid_request_error'],
  ] as const)('gives %s the messages error type %s, so messages SDKs raise the matching class', (code, type) => {
    expect(parsed(code, 'messages').error.type).toBe(type);
  });

  it('keeps quotes and line breaks of a message as valid JSON', () => {
    const text = errorBody(new GatewayError('invalid_request', 'field "model"\nis missing'), 'openai');

    expect(JSON.parse(text).error.message).toBe('field "model"\nis missing');
  });
});

describe(dialectOfPath.name, () => {
  it.each([
    ['/v1/messages', 'messages'],
    ['/v1/messages?beta=true', 'messages'],
    ['/v1/messages/count_tokens', 'messages'],
    ['/v1/chat/completions', 'openai'],
    ['/v1/responses', 'openai'],
    ['/v1/embeddings', 'openai'],
    ['/v1/models', 'openai'],
    ['/admin/owners/team-a', 'openai'],
  ])('answers %s in the %s shape', (path, dialect) => {
    expect(dialectOfPath(path)).toBe(dialect);
  });
});
