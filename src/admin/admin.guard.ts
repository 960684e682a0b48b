import { CanActivate, createParamDecorator, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { GatewayError } from '../common/gateway-error';
import { ADMIN_TOKEN, AdminToken } from '../config/gateway-options';
import { ConsoleSession, ConsoleSessions, cookieValue, sameSecret, SESSION_COOKIE } from './console-sessions';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Who a request acts as, for the audit log; and the console session it came with, if any. */
const ACTOR = Symbol('adminActor');
const SESSION = Symbol('consoleSession');
type AdminRequest = FastifyRequest & { [ACTOR]?: string; [SESSION]?: { cookie: string; session: ConsoleSession } };

/** Methods that change nothing: a console session needs no CSRF token for them. */
const READS = new Set(['GET', 'HEAD']);

/**
 * The admin API answers to `Authorization: Bearer <token>` with ADMIN_TOKEN or one of
 * ADMIN_TOKENS, compared in constant time against every one (over digests, so neither the
 * length of a token nor which one matched leaks), or, without that header, to the console's
 * sign-in cookie: a live session of a token still configured, and for every change the
 * session's `X-CSRF-Token`. Without any token the admin API does not exist: 404. The token's
 * name is the request's actor (`@Actor()`).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected: Array<{ name: string; digest: Buffer }>;

  constructor(
    @Inject(ADMIN_TOKEN) tokens: AdminToken[],
    private readonly sessions: ConsoleSessions,
  ) {
    this.expected = tokens.map(({ name, token }) => ({ name, digest: digest(token) }));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    this.checkOn();
    const request = context.switchToHttp().getRequest<AdminRequest>();
    if (request.headers.authorization !== undefined || cookieValue(request.headers.cookie, SESSION_COOKIE) === undefined) {
      request[ACTOR] = this.holderOf(/^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1]);
      return true;
    }
    const signedIn = await this.sessionOf(request.headers.cookie);
    if (!signedIn) throw new GatewayError('invalid_api_key', 'The console session has ended: sign in again.');
    if (!READS.has(request.method) && !sameSecret(request.headers['x-csrf-token'] as string | undefined, signedIn.session.csrfToken)) {
      throw new GatewayError('forbidden', 'A change made with the console sign-in needs its X-CSRF-Token header.');
    }
    request[ACTOR] = signedIn.session.actor;
    request[SESSION] = signedIn;
    return true;
  }

  /** Without any admin token the admin API does not exist. */
  checkOn(): void {
    if (this.expected.length === 0) throw new GatewayError('not_found', 'No such endpoint.');
  }

  /** The live console session a Cookie header names, of an admin token still configured. */
  async sessionOf(cookieHeader: string | undefined): Promise<{ cookie: string; session: ConsoleSession } | undefined> {
    const cookie = cookieValue(cookieHeader, SESSION_COOKIE);
    if (cookie === undefined) return undefined;
    const session = await this.sessions.find(cookie);
    if (!session || !this.expected.some(({ name }) => name === session.actor)) return undefined;
    return { cookie, session };
  }

  /** The console's sign-in: the name of the token given, as for a bearer token. */
  signIn(token: string): string {
    this.checkOn();
    return this.holderOf(token);
  }

  /** The name of the admin token presented; a missing or wrong token is refused. */
  holderOf(token: string | undefined): string {
    const presented = digest(token ?? '');
    let actor: string | undefined;
    for (const { name, digest: expected } of this.expected) if (timingSafeEqual(presented, expected)) actor = name;
    if (actor === undefined || token === undefined) throw new GatewayError('invalid_api_key', 'The admin token is not valid.');
    return actor;
  }
}

/** The name of the admin token the request presented (AdminGuard ran first). */
export const Actor = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  return context.switchToHttp().getRequest<AdminRequest>()[ACTOR] ?? 'admin';
});

/** The console session the request came with (AdminGuard ran first); undefined for a bearer token. */
export const SessionOf = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  return context.switchToHttp().getRequest<AdminRequest>()[SESSION];
});
