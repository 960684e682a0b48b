import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { BodyError } from './body-reader';

export const JSON_MEDIA_TYPE = 'application/json';
export const FORM_MEDIA_TYPE = 'multipart/form-data';

/** The code of a refused content type, for the exception filter. */
export const CONTENT_TYPE_REFUSED = 'GATEWAY_ERR_CONTENT_TYPE';

/**
 * Routes that take `multipart/form-data` besides JSON: the routes declared with
 * `@Entry(..., { forms: true })`. The body parser runs before Nest's guards see that metadata,
 * so the routes are listed here; test/content-types.e2e-spec.ts checks the list against the
 * declarations.
 */
export const FORM_ROUTES: ReadonlySet<string> = new Set(['/v1/images/edits']);

/**
 * SPEC.md "Endpoints": JSON bodies use `Content-Type: application/json`. Gives the 400 for a body
 * of any other type, or of none, so the body parser can refuse it before reading a byte; undefined
 * when the route takes the body. Parameters and letter case do not matter
 * (`Application/JSON; charset=utf-8` is JSON). Let through as well: a request without a body (nothing
 * to judge) and one to a path no route serves (its 404 says more).
 */
export function contentTypeRefusal(request: FastifyRequest): BodyError | undefined {
  const headers = request.headers;
  // What nearly every call sends: decided without parsing anything.
  if (headers['content-type'] === JSON_MEDIA_TYPE) return undefined;
  // Fastify's own parse of the header (lower-cased, parameters apart), cached per header value.
  const mediaType = request.mediaType;
  if (mediaType === JSON_MEDIA_TYPE || announcesNoBody(headers) || request.is404) return undefined;
  const takesForms = FORM_ROUTES.has(request.routeOptions.url ?? '');
  if (takesForms && mediaType === FORM_MEDIA_TYPE) return undefined;
  return new BodyError(400, refusalMessage(mediaType, takesForms), CONTENT_TYPE_REFUSED);
}

/** The message for a body of `mediaType` (undefined: no Content-Type) on a route that takes forms or not. */
export function refusalMessage(mediaType: string | undefined, takesForms: boolean): string {
  const expected = takesForms ? `${JSON_MEDIA_TYPE} or ${FORM_MEDIA_TYPE}` : JSON_MEDIA_TYPE;
  const given = mediaType === undefined ? 'has no Content-Type' : `has Content-Type ${mediaType}`;
  const forms = !takesForms && mediaType === FORM_MEDIA_TYPE ? ` Forms are taken only by ${[...FORM_ROUTES].join(', ')}.` : '';
  return `The request body ${given}; this endpoint takes Content-Type: ${expected}.${forms}`;
}

/** Neither a length nor a chunked body: a request without a body (RFC 9112 section 6.3). */
function announcesNoBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}
