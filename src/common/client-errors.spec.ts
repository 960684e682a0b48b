import type { IncomingMessage } from 'node:http';
import { clientErrorAnswer, clientErrorPath, missingHostRefusal } from './client-errors';

function errorWithCode(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
}

describe('clientErrorAnswer', () => {
  it.each([
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'Request Timeout'],
    ['HPE_HEADER_OVERFLOW', 431, 'Request Header Fields Too Large'],
    ['HPE_INVALID_METHOD', 400, 'Bad Request'],
  ])('answers %s with %i in the chat error shape and a request id', (code, status, reason) => {
    const answer = clientErrorAnswer(errorWithCode(code));

    expect(answer.status).toBe(status);
    expect(answer.head.startsWith(`HTTP/1.1 ${status} ${reason}\r\n`)).toBe(true);
    expect(answer.head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
    expect(answer.head).toContain(`content-length: ${Buffer.byteLength(answer.body)}\r\n`);
    expect(answer.head.endsWith('connection: close\r\n\r\n')).toBe(true);
    expect(JSON.parse(answer.body)).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: null } });
  });

  it('gives every answer its own request id', () => {
    const ids = [1, 2].map(() => /x-request-id: (\S+)/.exec(clientErrorAnswer(errorWithCode('HPE_HEADER_OVERFLOW')).head)![1]);
    expect(ids[0]).not.toBe(ids[1]);
  });
});

describe('clientErrorPath', () => {
  const parseError = (packet: string, bytesParsed: number) =>
    Object.assign(errorWithCode('HPE_INVALID_HEADER_TOKEN'), { rawPacket: Buffer.from(packet, 'latin1'), bytesParsed });

  it('reads the path from the request line of the packet the fault is in', () => {
    expect(clientErrorPath(parseError('POST /v1/messages?beta=true HTTP/1.1\r\nhost: a\r\nbad header: x\r\n\r\n', 42))).toBe('/v1/messages?beta=true');
  });

  it('knows no path when the fault lies past the first head (a pipelined request) or the packet holds no whole request line', () => {
    expect(clientErrorPath(parseError('GET /v1/models HTTP/1.1\r\nhost: a\r\n\r\nPOST /v1/messages HTTP/1.1\r\nbad header: x\r\n\r\n', 60))).toBeUndefined();
    expect(clientErrorPath(parseError(`GET /v1/messages/${'x'.repeat(100)}`, 50))).toBeUndefined();
    expect(clientErrorPath(parseError('bad header: x\r\n\r\n', 3))).toBeUndefined();
    expect(clientErrorPath(errorWithCode('ERR_HTTP_REQUEST_TIMEOUT'))).toBeUndefined();
  });
});

describe('clientErrorAnswer on a known path', () => {
  it('answers in the messages shape with request-id on the messages entry', () => {
    const answer = clientErrorAnswer(errorWithCode('HPE_INVALID_METHOD'), '/v1/messages', 'id-of-the-call');

    expect(answer.headers).toMatchObject({ 'x-request-id': 'id-of-the-call', 'request-id': 'id-of-the-call' });
    expect(JSON.parse(answer.body)).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'The request method is not an HTTP method.', code: null },
    });
  });

  it('gives the generateContent shape the status written, not the 400 of invalid_request', () => {
    const answer = clientErrorAnswer(errorWithCode('HPE_HEADER_OVERFLOW'), '/v1beta/models/image-c:generateContent');

    expect(answer.status).toBe(431);
    expect(JSON.parse(answer.body).error).toMatchObject({ code: 431, status: 'INVALID_ARGUMENT' });
  });

  it("names Node's reason for a request that is not HTTP", () => {
    const answer = clientErrorAnswer(Object.assign(errorWithCode('HPE_INVALID_HEADER_TOKEN'), { reason: 'Invalid header token' }));

    expect(JSON.parse(answer.body).error.message).toBe('The request is not valid HTTP/1.1 (Invalid header token).');
  });
});

describe('missingHostRefusal', () => {
  const request = (version: string, headers: Record<string, string>) =>
    ({ httpVersionMajor: Number(version[0]), httpVersionMinor: Number(version[2]), headers }) as unknown as IncomingMessage;

  it('refuses an HTTP/1.1 request without Host, and only that', () => {
    expect(missingHostRefusal(request('1.1', {}))).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('Host') });
    expect(missingHostRefusal(request('1.1', { host: 'gateway' }))).toBeUndefined();
    expect(missingHostRefusal(request('1.0', {}))).toBeUndefined();
  });
});
