import { decodeResponsesError, responsesErrorKind, responsesStreamErrorKind } from './decode-responses-error';
import { encodeResponsesError, responsesErrorType, responsesStreamErrorCode } from './encode-responses-error';
import { fixture } from './responses-test-kit';

describe(decodeResponsesError.name, () => {
  it('decodes the captured 429 body with its code', () => {
    expect(decodeResponsesError(429, fixture('responses-error-429.json').toString('utf8'))).toEqual({
      status: 429,
      kind: 'rate_limit',
      message: 'Simulated upstream failure (429)',
      code: 'rate_limit_exceeded',
    });
  });

  it('falls back to the type when code is null', () => {
    expect(decodeResponsesError(400, fixture('responses-error-400.json').toString('utf8'))).toEqual({
      status: 400,
      kind: 'invalid_request',
      message: "Missing required parameter: 'model'.",
      code: 'invalid_request_error',
    });
  });

  it('keeps the gist of a body that is not JSON, and says when there was none', () => {
    expect(decodeResponsesError(502, `<html>${'x'.repeat(2000)}</html>`)).toMatchObject({ kind: 'server', message: expect.stringMatching(/^<html>x+…$/) });
    expect(decodeResponsesError(504, '')).toEqual({ status: 504, kind: 'timeout', message: 'The upstream answered with status 504 and no body.' });
  });

  it.each([
    [400, 'invalid_request'],
    [401, 'authentication'],
    [403, 'permission'],
    [404, 'not_found'],
    [409, 'invalid_request'],
    [429, 'rate_limit'],
    [500, 'server'],
    [503, 'overloaded'],
    [504, 'timeout'],
  ] as const)('maps status %i to %s', (status, kind) => {
    expect(responsesErrorKind(status)).toBe(kind);
  });

  it.each([
    ['rate_limit_exceeded', 'rate_limit'],
    ['server_is_overloaded', 'overloaded'],
    ['invalid_prompt', 'invalid_request'],
    ['server_error', 'server'],
    [undefined, 'server'],
  ] as const)('maps the in-stream code %s to %s', (code, kind) => {
    expect(responsesStreamErrorKind(code)).toBe(kind);
  });
});

describe(encodeResponsesError.name, () => {
  it('encodes the OpenAI error body', () => {
    expect(encodeResponsesError({ status: 400, kind: 'invalid_request', message: 'Bad input.', code: 'invalid_value' })).toEqual({
      error: { message: 'Bad input.', type: 'invalid_request_error', code: 'invalid_value', param: null },
    });
    expect(encodeResponsesError({ status: 500, kind: 'server', message: 'Down.' })).toEqual({
      error: { message: 'Down.', type: 'server_error', code: null, param: null },
    });
  });

  it.each([
    ['invalid_request', 'invalid_request_error'],
    ['authentication', 'authentication_error'],
    ['permission', 'permission_error'],
    ['not_found', 'not_found_error'],
    ['rate_limit', 'rate_limit_error'],
    ['overloaded', 'server_error'],
    ['server', 'server_error'],
    ['timeout', 'server_error'],
  ] as const)('gives kind %s the type %s', (kind, type) => {
    expect(responsesErrorType(kind)).toBe(type);
  });

  it('names in-stream error codes, keeping a code that is not a canonical kind', () => {
    expect(responsesStreamErrorCode('rate_limit')).toBe('rate_limit_exceeded');
    expect(responsesStreamErrorCode(undefined)).toBe('server_error');
    expect(responsesStreamErrorCode('context_length_exceeded')).toBe('context_length_exceeded');
  });
});
