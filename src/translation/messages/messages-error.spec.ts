import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalError } from '../canonical/response';
import { decodeMessagesError } from './decode-messages-error';
import { encodeMessagesError } from './encode-messages-error';

describe(decodeMessagesError.name, () => {
  it('decodes the captured overloaded error', () => {
    const body = readFileSync(join(__dirname, '__fixtures__', 'messages-error-overloaded.json'), 'utf8');
    expect(decodeMessagesError(529, body)).toEqual({ status: 529, kind: 'overloaded', message: 'Simulated upstream failure (529)', code: 'overloaded_error' });
  });

  it.each<[string, CanonicalError['kind']]>([
    ['invalid_request_error', 'invalid_request'],
    ['request_too_large', 'invalid_request'],
    ['authentication_error', 'authentication'],
    ['billing_error', 'permission'],
    ['permission_error', 'permission'],
    ['not_found_error', 'not_found'],
    ['rate_limit_error', 'rate_limit'],
    ['overloaded_error', 'overloaded'],
    ['timeout_error', 'timeout'],
    ['api_error', 'server'],
  ])('reads the type %s as the kind %s', (type, kind) => {
    expect(decodeMessagesError(400, JSON.stringify({ type: 'error', error: { type, message: 'm' } })).kind).toBe(kind);
  });

  it.each<[number, CanonicalError['kind']]>([
    [400, 'invalid_request'],
    [401, 'authentication'],
    [403, 'permission'],
    [404, 'not_found'],
    [429, 'rate_limit'],
    [500, 'server'],
    [504, 'timeout'],
    [529, 'overloaded'],
  ])('falls back to the status %i for a body without a known type', (status, kind) => {
    expect(decodeMessagesError(status, '{"type":"error","error":{"type":"brand_new_error","message":"m"}}').kind).toBe(kind);
  });

  it('quotes a body that is not JSON, cut to a readable length', () => {
    const error = decodeMessagesError(502, `<html>${'x'.repeat(1000)}</html>`);
    expect(error).toMatchObject({ status: 502, kind: 'server' });
    expect(error.message).toMatch(/^The upstream answered with status 502: <html>x+$/);
    expect(error.message.length).toBeLessThan(600);
    expect(error).not.toHaveProperty('code');
  });

  it('names the status when the body is empty', () => {
    expect(decodeMessagesError(503, '')).toEqual({ status: 503, kind: 'server', message: 'The upstream answered with status 503.' });
  });
});

describe(encodeMessagesError.name, () => {
  it.each<[CanonicalError['kind'], string]>([
    ['invalid_request', 'invalid_request_error'],
    ['authentication', 'authentication_error'],
    ['permission', 'permission_error'],
    ['not_found', 'not_found_error'],
    ['rate_limit', 'rate_limit_error'],
    ['overloaded', 'overloaded_error'],
    ['server', 'api_error'],
    ['timeout', 'timeout_error'],
  ])('writes the kind %s as a messages %s body', (kind, type) => {
    expect(encodeMessagesError({ status: 400, kind, message: 'Nope', code: 'x' })).toEqual({ type: 'error', error: { type, message: 'Nope' } });
  });
});
