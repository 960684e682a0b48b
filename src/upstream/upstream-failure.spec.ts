import { isBodyTimeout, isCredentialStatus, mayRefuseCredentialsInBody, refusesCredentialsInBody } from './upstream-failure';

describe('upstream credential refusals', () => {
  it.each([401, 402, 403])('counts HTTP %i as a refusal of the line credentials', (status) => {
    expect(isCredentialStatus(status)).toBe(true);
  });

  it.each([400, 404, 429, 500])('does not count HTTP %i by its status alone', (status) => {
    expect(isCredentialStatus(status)).toBe(false);
  });

  it('reads the body only of a generateContent 400', () => {
    expect(mayRefuseCredentialsInBody('images_c', 400)).toBe(true);
    expect(mayRefuseCredentialsInBody('images_c', 404)).toBe(false);
    expect(mayRefuseCredentialsInBody('images_a', 400)).toBe(false);
    expect(mayRefuseCredentialsInBody('chat_completions', 400)).toBe(false);
  });

  it('finds the API_KEY_INVALID reason and nothing else', () => {
    const refusal = { error: { code: 400, message: 'API key not valid.', status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } };
    expect(refusesCredentialsInBody('images_c', Buffer.from(JSON.stringify(refusal)))).toBe(true);
    expect(refusesCredentialsInBody('images_c', Buffer.from('{"error":{"code":400,"message":"bad contents","status":"INVALID_ARGUMENT"}}'))).toBe(false);
    expect(refusesCredentialsInBody('images_c', undefined)).toBe(false);
  });

  it('reads the body of a speech 200 in JSON, streamed or not, and not of a speech event stream', () => {
    expect(mayRefuseCredentialsInBody('speech_c', 200, 'application/json')).toBe(true);
    expect(mayRefuseCredentialsInBody('speech_c', 200, 'application/json; charset=utf-8')).toBe(true);
    expect(mayRefuseCredentialsInBody('speech_c', 200, 'text/event-stream')).toBe(false);
    expect(mayRefuseCredentialsInBody('speech_c', 500, 'application/json')).toBe(false);
    expect(mayRefuseCredentialsInBody('speech_c', 200)).toBe(false);
  });

  it('finds the speech login failure (base_resp 1004) and nothing else', () => {
    const refusal = { data: null, trace_id: 't-1', base_resp: { status_code: 1004, status_msg: 'login fail' } };
    const success = { data: { audio: 'ab'.repeat(10), status: 2 }, base_resp: { status_code: 0, status_msg: 'success' } };
    const other = { data: null, base_resp: { status_code: 2013, status_msg: 'invalid params' } };
    const long = { data: { audio: 'ab'.repeat(40_000), status: 2 }, base_resp: { status_code: 1004, status_msg: 'not a refusal that long' } };
    expect(refusesCredentialsInBody('speech_c', Buffer.from(JSON.stringify(refusal)))).toBe(true);
    expect(refusesCredentialsInBody('speech_c', Buffer.from(JSON.stringify(success)))).toBe(false);
    expect(refusesCredentialsInBody('speech_c', Buffer.from(JSON.stringify(other)))).toBe(false);
    expect(refusesCredentialsInBody('speech_c', Buffer.from(JSON.stringify(long)))).toBe(false);
    expect(refusesCredentialsInBody('speech_c', Buffer.from('{"base_resp":'))).toBe(false);
  });
});

describe('upstream body timeouts', () => {
  it("tells undici's body timeout from other body failures", () => {
    expect(isBodyTimeout(Object.assign(new Error('Body Timeout Error'), { code: 'UND_ERR_BODY_TIMEOUT' }))).toBe(true);
    expect(isBodyTimeout(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }))).toBe(false);
    expect(isBodyTimeout(new Error('aborted'))).toBe(false);
    expect(isBodyTimeout(null)).toBe(false);
  });
});
