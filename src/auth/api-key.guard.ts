import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../common/gateway-error';
import { KeyService } from './key.service';

const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** Format C clients may send the key in this header instead (SPEC.md Authentication 2). */
const ALTERNATIVE_KEY_HEADERS = ['x-alt-api-key', 'x-goog-api-key'] as const;
/** Messages-protocol SDKs (older releases) send their key as `x-api-key`; accepted on that entry. */
const MESSAGES_KEY_HEADER = 'x-api-key';

/**
 * Authenticates a data-plane request by its gateway key. Keys are read from headers only:
 * a key in the URL query is never looked at.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly keys: KeyService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const token = presentedKey(request);
    if (!token) {
      throw new GatewayError('invalid_api_key', 'Missing API key: send it as "Authorization: Bearer <key>".');
    }
    request.principal = await this.keys.authenticate(token);
    return true;
  }
}

function presentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization) return BEARER.exec(authorization)?.[1];
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
