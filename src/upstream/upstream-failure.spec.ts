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
    expect(refusesCredentialsInBody(Buffer.from(JSON.stringify(refusal)))).toBe(true);
    expect(refusesCredentialsInBody(Buffer.from('{"error":{"code":400,"message":"bad contents","status":"INVALID_ARGUMENT"}}'))).toBe(false);
    expect(refusesCredentialsInBody(undefined)).toBe(false);
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
