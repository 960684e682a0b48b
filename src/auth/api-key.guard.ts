import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../common/gateway-error';
import { KeyService } from './key.service';
import { KeyFailureLimiter } from './key-failure-limiter';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** Format C clients may send the key in this header instead (SPEC.md Authentication 2). */
const ALTERNATIVE_KEY_HEADERS = ['x-alt-api-key', 'x-goog-api-key'] as const;
/** Messages-protocol SDKs (older releases) send their key as `x-api-key`; accepted on that entry. */
const MESSAGES_KEY_HEADER = 'x-api-key';
const KEY_STANDING_PATH = '/v1/key';

/**
 * Authenticates a data-plane request by its gateway key. Keys are read from headers only:
 * a key in the URL query is never looked at. An address that keeps presenting refused keys
 * gets 429 for its further refused keys until its window ends (KeyFailureLimiter).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly keys: KeyService,
    private readonly failures: KeyFailureLimiter,
  ) {}

  /** Synchronous for a cached key (Nest awaits only what is not a boolean): it runs on every call. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const token = presentedKey(request);
    if (!token) {
      throw new GatewayError('invalid_api_key', 'Missing API key: send it as "Authorization: Bearer <key>".');
    }
    let principal: ReturnType<KeyService['authenticate']>;
    try {
      principal = this.keys.authenticate(token);
    } catch (error) {
      throw this.refusal(request, error);
    }
    if (!(principal instanceof Promise)) {
      request.principal = principal;
      return true;
    }
    return principal.then(
      (found) => {
        request.principal = found;
        return true;
      },
      (error: unknown) => {
        throw this.refusal(request, error);
      },
    );
  }

  /** A refused key counts against the client's address; past the limit the answer is 429. */
  private refusal(request: FastifyRequest, error: unknown): unknown {
    if (!(error instanceof GatewayError) || error.code !== 'invalid_api_key') return error;
    const retryAfterSeconds = this.failures.recordFailure(request.ip);
    if (retryAfterSeconds === undefined) return error;
    return new GatewayError('rate_limit_exceeded', `Too many invalid API keys from this address; retry after ${retryAfterSeconds} s.`, retryAfterSeconds);
  }
}

function presentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization) return BEARER.exec(authorization)?.[1];
  // A key's own view (GET /v1/key) is read by clients of every entry, each with its SDK's header.
  if (request.url === KEY_STANDING_PATH || request.url.startsWith(`${KEY_STANDING_PATH}?`)) {
    return headerValue(request, MESSAGES_KEY_HEADER) ?? ALTERNATIVE_KEY_HEADERS.map((name) => headerValue(request, name)).find(Boolean);
  }
  if (request.url.startsWith('/v1/messages')) return headerValue(request, MESSAGES_KEY_HEADER);
  if (!request.url.startsWith('/v1beta/')) return undefined;
  for (const name of ALTERNATIVE_KEY_HEADERS) {
    const value = headerValue(request, name);
    if (value) return value;
  }
  return undefined;
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value.trim() ? value.trim() : undefined;
}
