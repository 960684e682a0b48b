import { CanActivate, createParamDecorator, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../common/gateway-error';
import { ADMIN_TOKEN, AdminToken } from '../config/gateway-options';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The name of the admin token a request presented, for the audit log. */
const ACTOR = Symbol('adminActor');
type AdminRequest = FastifyRequest & { [ACTOR]?: string };

/**
 * The admin API answers only to `Authorization: Bearer <token>` with ADMIN_TOKEN or one of
 * ADMIN_TOKENS, compared in constant time against every one (over digests, so neither the
 * length of a token nor which one matched leaks). Without any token the admin API does not
 * exist: 404. The matching token's name is the request's actor (`@Actor()`).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected: Array<{ name: string; digest: Buffer }>;

  constructor(@Inject(ADMIN_TOKEN) tokens: AdminToken[]) {
    this.expected = tokens.map(({ name, token }) => ({ name, digest: digest(token) }));
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.expected.length === 0) throw new GatewayError('not_found', 'No such endpoint.');
    const request = context.switchToHttp().getRequest<AdminRequest>();
    const presented = digest(/^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '');
    let actor: string | undefined;
    for (const { name, digest: expected } of this.expected) if (timingSafeEqual(presented, expected)) actor = name;
    if (actor === undefined) throw new GatewayError('invalid_api_key', 'The admin token is not valid.');
    request[ACTOR] = actor;
    return true;
  }
}

/** The name of the admin token the request presented (AdminGuard ran first). */
export const Actor = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  return context.switchToHttp().getRequest<AdminRequest>()[ACTOR] ?? 'admin';
});
