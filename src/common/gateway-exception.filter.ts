import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { ServerResponse } from 'node:http';
import { GatewayError, GatewayErrorCode, statusOf } from './gateway-error';
import { dialectOfPath, errorBody } from './error-body';
import { CONTENT_TYPE_REFUSED, JSON_MEDIA_TYPE } from '../request-body/content-type-rule';
import { carryRequestId } from './timed-response';

/** Fastify's "Unsupported Media Type" names nothing to send instead. */
const NOT_A_MEDIA_TYPE = `The Content-Type header is not a media type (type/subtype); JSON bodies use Content-Type: ${JSON_MEDIA_TYPE}.`;

/** Fastify's own errors (body parsing, limits, routing) by their codes. */
function fromFastify(error: { code?: string; statusCode?: number; message: string }): GatewayError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('request_too_large', 'Request body is larger than 32 MiB.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case CONTENT_TYPE_REFUSED:
      return new GatewayError('invalid_request', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('invalid_request', NOT_A_MEDIA_TYPE);
    case 'FST_ERR_BAD_URL':
      return new GatewayError('invalid_request', 'The request path is not valid percent-encoded UTF-8.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // Not reached while the router's limit is Node's header limit (app.factory.ts); a path the router will not match is no endpoint.
      return new GatewayError('not_found', 'No such endpoint.');
    default:
      return undefined;
  }
}

/** Nest hands Fastify's errors on as HttpExceptions of their status (415: a Content-Type that is no media type). */
function fromHttpException(error: HttpException): GatewayError {
  const status = error.getStatus();
  if (status === 415) return new GatewayError('invalid_request', NOT_A_MEDIA_TYPE);
  const code: GatewayErrorCode = status === 404 ? 'not_found' : status === 413 ? 'request_too_large' : status < 500 ? 'invalid_request' : 'internal_error';
  const message = status === 404 ? 'No such endpoint.' : status === 413 ? 'Request body is larger than 32 MiB.' : error.message;
  return new GatewayError(code, message);
}

/** Renders any error as the called protocol's error body (DESIGN.md section 7). */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof HttpException) return fromHttpException(error);
  const fastify = error && typeof error === 'object' ? fromFastify(error as { code?: string; message: string }) : undefined;
  if (fastify) return fastify;
  const statusCode = (error as { statusCode?: number } | null)?.statusCode;
  if (statusCode === 413) return new GatewayError('request_too_large', 'Request body is larger than 32 MiB.');
  if (statusCode && statusCode >= 400 && statusCode < 500) {
    return new GatewayError('invalid_request', (error as Error).message);
  }
  return new GatewayError('internal_error', 'The gateway failed to handle the request.');
}

export function sendGatewayError(request: FastifyRequest, reply: FastifyReply, error: GatewayError): void {
  request.errorCode = error.code; // for the request's log line
  const raw = reply.raw;
  if (raw.headersSent || raw.destroyed) {
    if (!raw.writableEnded) raw.end();
    return;
  }
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.headers) reply.headers(error.headers);
  void reply
    .code(statusOf(error.code))
    .header('content-type', 'application/json')
    .send(errorBody(error, dialectOfPath(request.url)));
}

/**
 * Fastify's `frameworkErrors`: answers for what its router refuses before any hook runs (a path
 * that is not valid percent-encoding, a parameter over the router's limit), in the path's error
 * shape with a request id, as every other answer.
 */
export const answerFrameworkError: NonNullable<FastifyServerOptions['frameworkErrors']> = (error, request, reply) => {
  carryRequestId(reply.raw as ServerResponse, request.id, dialectOfPath(request.url) === 'messages');
  sendGatewayError(request as FastifyRequest, reply as FastifyReply, toGatewayError(error));
};

@Catch()
export class GatewayExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Gateway');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const error = toGatewayError(exception);
    if (error.code === 'internal_error') {
      // Fields of the JSON line (nest-logger.ts): the request id (and the trace id while tracing
      // is on) find it beside the call's own line.
      this.logger.error({
        msg: 'request failed',
        request_id: request.id,
        trace_id: request.trace?.traceId,
        err: exception instanceof Error ? exception : String(exception),
      });
    }
    sendGatewayError(request, http.getResponse<FastifyReply>(), error);
  }
}
