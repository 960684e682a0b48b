import type { FastifyRequest } from 'fastify';
import { BodyError } from './body-reader';
import { CONTENT_TYPE_REFUSED, contentTypeRefusal, FORM_ROUTES } from './content-type-rule';

/** The parts of a Fastify request the rule reads; `mediaType` as Fastify derives it from the header. */
function requestOf(headers: Record<string, string>, options: { route?: string; is404?: boolean } = {}): FastifyRequest {
  const header = headers['content-type'];
  const mediaType = header === undefined ? undefined : header.split(';')[0].trim().toLowerCase();
  return { headers, mediaType, is404: options.is404 ?? false, routeOptions: { url: options.route ?? '/v1/chat/completions' } } as unknown as FastifyRequest;
}

const WITH_BODY = { 'content-length': '2' };

describe(contentTypeRefusal.name, () => {
  it.each(['application/json', 'Application/JSON; charset=utf-8', 'application/json;charset=latin1'])('takes %s', (contentType) => {
    expect(contentTypeRefusal(requestOf({ ...WITH_BODY, 'content-type': contentType }))).toBeUndefined();
  });

  it.each(['text/plain', 'text/html', 'application/xml', 'application/octet-stream', 'application/x-www-form-urlencoded', 'application/vnd.api+json'])(
    'refuses %s with 400 naming application/json',
    (contentType) => {
      const refusal = contentTypeRefusal(requestOf({ ...WITH_BODY, 'content-type': contentType }));

      expect(refusal).toBeInstanceOf(BodyError);
      expect(refusal).toMatchObject({ statusCode: 400, code: CONTENT_TYPE_REFUSED });
      expect(refusal!.message).toBe(`The request body has Content-Type ${contentType}; this endpoint takes Content-Type: application/json.`);
    },
  );

  it('refuses a body without a Content-Type, announced by length or chunked', () => {
    for (const framing of [WITH_BODY, { 'transfer-encoding': 'chunked' }]) {
      expect(contentTypeRefusal(requestOf(framing))?.message).toBe('The request body has no Content-Type; this endpoint takes Content-Type: application/json.');
    }
  });

  it('takes a form only on the routes that take forms', () => {
    const form = { ...WITH_BODY, 'content-type': 'multipart/form-data; boundary=x' };
    expect(contentTypeRefusal(requestOf(form, { route: '/v1/images/edits' }))).toBeUndefined();
    expect(contentTypeRefusal(requestOf(form))?.message).toBe(
      'The request body has Content-Type multipart/form-data; this endpoint takes Content-Type: application/json. Forms are taken only by /v1/images/edits.',
    );
    expect(contentTypeRefusal(requestOf({ ...WITH_BODY, 'content-type': 'text/plain' }, { route: '/v1/images/edits' }))?.message).toBe(
      'The request body has Content-Type text/plain; this endpoint takes Content-Type: application/json or multipart/form-data.',
    );
    expect([...FORM_ROUTES]).toEqual(['/v1/images/edits']);
  });

  it('leaves requests without a body, and paths no route serves, alone', () => {
    expect(contentTypeRefusal(requestOf({ 'content-type': 'text/plain' }))).toBeUndefined();
    expect(contentTypeRefusal(requestOf({ 'content-type': 'text/plain', 'content-length': '0' }))).toBeUndefined();
    expect(contentTypeRefusal(requestOf({ ...WITH_BODY, 'content-type': 'text/plain' }, { is404: true }))).toBeUndefined();
  });
});
