import { clientErrorAnswer } from './client-errors';

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
