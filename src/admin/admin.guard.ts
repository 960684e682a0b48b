import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../common/gateway-error';
import { ADMIN_TOKEN } from '../config/gateway-options';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * The admin API answers only to `Authorization: Bearer $ADMIN_TOKEN`, compared in constant
 * time (over digests, so the length of the token does not leak either). Without ADMIN_TOKEN
 * the admin API does not exist: 404.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected: Buffer | undefined;

  constructor(@Inject(ADMIN_TOKEN) token: string | undefined) {
    this.expected = token ? digest(token) : undefined;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new GatewayError('not_found', 'No such endpoint.');
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const presented = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
    if (!timingSafeEqual(digest(presented), this.expected)) {
      throw new GatewayError('invalid_api_key', 'The admin token is not valid.');
    }
    return true;
  }
}
