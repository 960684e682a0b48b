import { dialectOfPath, type ErrorDialect, errorBody } from './error-body';
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
  forbidden: 403,
  model_not_found: 404,
  not_found: 404,
  conflict: 409,
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

function parsed(code: GatewayErrorCode, dialect: ErrorDialect): Record<string, any> {
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
    ['forbidden', 'permission_error'],
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

/**
 * The canonical status of every code in the generateContent shape
 * (https://cloud.google.com/apis/design/errors#handling_errors).
 */
const GENERATE_CONTENT_STATUS: Record<GatewayErrorCode, string> = {
  invalid_request: 'INVALID_ARGUMENT',
  invalid_api_key: 'UNAUTHENTICATED',
  insufficient_quota: 'RESOURCE_EXHAUSTED',
  model_not_allowed: 'PERMISSION_DENIED',
  forbidden: 'PERMISSION_DENIED',
  model_not_found: 'NOT_FOUND',
  not_found: 'NOT_FOUND',
  conflict: 'ALREADY_EXISTS',
  request_too_large: 'INVALID_ARGUMENT',
  rate_limit_exceeded: 'RESOURCE_EXHAUSTED',
  internal_error: 'INTERNAL',
  upstream_failed: 'UNAVAILABLE',
  service_unavailable: 'UNAVAILABLE',
  upstream_timeout: 'DEADLINE_EXCEEDED',
};

/** HTTP statuses whose canonical status name the family documents. */
const CANONICAL_HTTP: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** `base_resp.status_code` of every code in the speech shape (vendor-c error code table). */
const SPEECH_STATUS_CODE: Record<GatewayErrorCode, number> = {
  invalid_request: 2013,
  invalid_api_key: 1004,
  insufficient_quota: 1008,
  model_not_allowed: 1004,
  forbidden: 1004,
  model_not_found: 2013,
  not_found: 2013,
  conflict: 2013,
  request_too_large: 2013,
  rate_limit_exceeded: 1002,
  internal_error: 1013,
  upstream_failed: 1000,
  service_unavailable: 1000,
  upstream_timeout: 1001,
};

describe('generateContent error bodies', () => {
  it.each(CODES)('renders %s as {"error":{"code","message","status","details"}}', (code) => {
    const body = parsed(code, 'generate_content');

    expect(Object.keys(body)).toEqual(['error']);
    expect(Object.keys(body.error).sort()).toEqual(['code', 'details', 'message', 'status']);
    expect(body.error.code).toBe(STATUS_OF[code]);
    expect(body.error.message).toBe(`message for ${code}`);
    expect(body.error.status).toBe(GENERATE_CONTENT_STATUS[code]);
  });

  it.each(CODES)('names the gateway code %s in an ErrorInfo detail', (code) => {
    expect(parsed(code, 'generate_content').error.details).toEqual([
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: code.toUpperCase(), domain: 'gateway' },
    ]);
  });

  it.each(CODES.filter((code) => CANONICAL_HTTP[STATUS_OF[code]] !== undefined))('gives %s the canonical status of its HTTP status', (code) => {
    expect(parsed(code, 'generate_content').error.status).toBe(CANONICAL_HTTP[STATUS_OF[code]]);
  });

  it('keeps quotes and line breaks of a message as valid JSON', () => {
    const text = errorBody(new GatewayError('invalid_request', 'only "generateContent"\nis served'), 'generate_content');
    expect(JSON.parse(text).error.message).toBe('only "generateContent"\nis served');
  });
});

describe('speech error bodies', () => {
  it.each(CODES)('renders %s in the chat shape plus base_resp', (code) => {
    const body = parsed(code, 'speech');

    expect(Object.keys(body).sort()).toEqual(['base_resp', 'error']);
    expect(body.error).toEqual(parsed(code, 'openai').error);
    expect(body.base_resp).toEqual({ status_code: SPEECH_STATUS_CODE[code], status_msg: `message for ${code}` });
  });

  it.each(CODES)('gives %s a non-zero status_code, so clients that check only base_resp see the failure', (code) => {
    const statusCode = parsed(code, 'speech').base_resp.status_code;
    expect(Number.isInteger(statusCode)).toBe(true);
    expect(statusCode).not.toBe(0);
  });

  it('gives a 400 the code null, like the chat shape', () => {
    expect(parsed('invalid_request', 'speech').error).toHaveProperty('code', null);
    expect(parsed('upstream_timeout', 'speech').error.code).toBe('upstream_timeout');
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
    ['/v1beta/models/gemini-image:generateContent', 'generate_content'],
    ['/v1beta/models/gemini-image:streamGenerateContent?alt=sse', 'generate_content'],
    ['/v1beta/models/gemini-image', 'generate_content'],
    ['/v1betax/models/m:generateContent', 'openai'],
    ['/vendor-c/v1/t2a_v2', 'speech'],
    ['/vendor-c/v1/t2a_v2?GroupId=123', 'speech'],
    ['/vendor-c/v2/video_generation', 'openai'],
    ['/v1/images/generations', 'openai'],
    ['/v1/images/edits', 'openai'],
    ['/vendor-b/api/v3/images/generations', 'openai'],
  ])('answers %s in the %s shape', (path, dialect) => {
    expect(dialectOfPath(path)).toBe(dialect);
  });
});
