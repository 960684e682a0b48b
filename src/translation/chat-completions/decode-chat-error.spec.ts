import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalError } from '../canonical/response';
import { chatErrorKind, chatStreamErrorKind, decodeChatError } from './decode-chat-error';

function fixture(name: string): string {
  return readFileSync(join(__dirname, '__fixtures__', name), 'utf8');
}

describe(decodeChatError.name, () => {
  it('decodes an OpenAI error body, taking the code (chat-error-429.json)', () => {
    expect(decodeChatError(429, fixture('chat-error-429.json'))).toEqual({
      status: 429,
      kind: 'rate_limit',
      message: 'Simulated upstream failure (429)',
      code: 'rate_limit_exceeded',
    });
  });

  it('falls back to the error type when the code is null (chat-error-400.json)', () => {
    expect(decodeChatError(400, fixture('chat-error-400.json'))).toEqual({
      status: 400,
      kind: 'invalid_request',
      message: "Missing required parameter: 'messages'.",
      code: 'invalid_request_error',
    });
  });

  it('keeps a non-JSON body as a trimmed text message', () => {
    expect(decodeChatError(502, '\n  <html><body>Bad gateway</body></html>\n')).toEqual({
      status: 502,
      kind: 'server',
      message: '<html><body>Bad gateway</body></html>',
    });
  });

  it('shortens a very long text body', () => {
    const message = decodeChatError(500, 'x'.repeat(5000)).message;
    expect(message).toBe(`${'x'.repeat(1000)}…`);
  });

  it('says so when the body is empty', () => {
    expect(decodeChatError(503, '  ').message).toBe('The upstream answered with status 503 and no body.');
  });

  it('reads the looser shapes of compatible upstreams', () => {
    expect(decodeChatError(400, '{"error":"model is required"}')).toEqual({ status: 400, kind: 'invalid_request', message: 'model is required' });
    expect(decodeChatError(404, '{"message":"no such model","code":"model_not_found"}')).toEqual({
      status: 404,
      kind: 'not_found',
      message: 'no such model',
      code: 'model_not_found',
    });
  });

  it('keeps a JSON body without a message as text', () => {
    expect(decodeChatError(500, '{"detail":"boom"}').message).toBe('{"detail":"boom"}');
  });
});

describe(chatErrorKind.name, () => {
  it.each<[number, CanonicalError['kind']]>([
    [400, 'invalid_request'],
    [422, 'invalid_request'],
    [401, 'authentication'],
    [403, 'permission'],
    [404, 'not_found'],
    [429, 'rate_limit'],
    [503, 'overloaded'],
    [529, 'overloaded'],
    [504, 'timeout'],
    [500, 'server'],
    [502, 'server'],
    [413, 'invalid_request'],
  ])('maps status %i to %s', (status, kind) => {
    expect(chatErrorKind(status)).toBe(kind);
  });
});

describe(chatStreamErrorKind.name, () => {
  it.each<[unknown, CanonicalError['kind']]>([
    ['invalid_request_error', 'invalid_request'],
    ['requests', 'rate_limit'],
    ['tokens', 'rate_limit'],
    ['server_error', 'server'],
    [undefined, 'server'],
  ])('maps in-stream error type %s to %s', (type, kind) => {
    expect(chatStreamErrorKind(type)).toBe(kind);
  });
});
