import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, GatewayErrorCode, statusOf } from './gateway-error';
import { dialectOfPath, errorBody } from './error-body';

/** Fastify's own errors (body parsing, limits) by their codes. */
function fromFastify(error: { code?: string; statusCode?: number; message: string }): GatewayError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('request_too_large', 'Request body is larger than 32 MiB.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('invalid_request', error.message);
    default:
      return undefined;
  }
}

function fromHttpException(error: HttpException): GatewayError {
  const status = error.getStatus();
  const code: GatewayErrorCode =
    status === 404 ? 'not_found' : status === 413 ? 'request_too_large' : status < 500 ? 'invalid_request' : 'internal_error';
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
  void reply
    .code(statusOf(error.code))
    .header('content-type', 'application/json')
    .send(errorBody(error, dialectOfPath(request.url)));
}

@Catch()
export class GatewayExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Gateway');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const error = toGatewayError(exception);
    if (error.code === 'internal_error') this.logger.error(exception instanceof Error ? exception.stack : String(exception));
    sendGatewayError(request, http.getResponse<FastifyReply>(), error);
  }
}
