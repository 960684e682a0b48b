import { Body, Controller, Delete, Get, HttpCode, Inject, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiCookieAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminGuard, SessionOf } from './admin.guard';
import { SignInBody } from './admin.dto';
import { Validated } from './admin-validation';
import { AdminErrors } from './admin-errors';
import { ConsoleSession, ConsoleSessions, SESSION_COOKIE } from './console-sessions';
import { AuditLog } from './audit-log';
import { GatewayError } from '../common/gateway-error';

export class SessionView {
  @ApiProperty({ description: 'Whether the request came with the cookie of a live console session; the other fields only when it did.' })
  signed_in!: boolean;
  @ApiProperty({ description: 'The name of the admin token signed in with: the actor of the audit log.' }) actor!: string;
  @ApiProperty({ description: 'Send it back as `X-CSRF-Token` with every change (POST, PUT, PATCH, DELETE).' }) csrf_token!: string;
  @ApiProperty() expires_at!: string;
}

function sessionView(session: ConsoleSession): SessionView {
  return { signed_in: true, actor: session.actor, csrf_token: session.csrfToken, expires_at: session.expiresAt.toISOString() };
}

/** The sign-in cookie: for the admin API only, never readable by a script, never sent from another site. */
function cookieHeader(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/**
 * Sign-in of the operator console: an admin token, sent once in a body, is exchanged for an
 * HttpOnly, SameSite=Strict cookie and a CSRF token the page keeps in memory. Requests with the
 * cookie act as the token's holder; changes need the CSRF token too.
 */
@ApiTags('console sign-in')
@AdminErrors()
@Controller('admin/session')
export class SessionController {
  constructor(
    @Inject(AdminGuard) private readonly guard: AdminGuard,
    private readonly sessions: ConsoleSessions,
    private readonly audit: AuditLog,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Sign in with an admin token',
    description: 'Sets the `gateway_console` cookie. 401 for a token that is not one of the admin tokens.',
  })
  @ApiOkResponse({ type: SessionView })
  async signIn(@Body(new Validated(SignInBody, 'body')) body: SignInBody, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const actor = this.guard.signIn(body.token);
    const { cookie, session } = await this.sessions.open(actor);
    reply.header('set-cookie', cookieHeader(request, cookie, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000)));
    await this.audit.record({
      actor,
      action: 'session.sign_in',
      itemKind: 'session',
      itemId: null,
      before: null,
      after: { expires_at: session.expiresAt.toISOString() },
    });
    return sessionView(session);
  }

  @Get()
  @ApiCookieAuth(SESSION_COOKIE)
  @ApiOperation({
    summary: "The console session of the request's cookie",
    description:
      'For a page opened again: its actor and CSRF token, or `{"signed_in": false}` without a live session (never a 401, so a page that is not signed in yet logs no failed request).',
  })
  @ApiOkResponse({ type: SessionView })
  async current(@Req() request: FastifyRequest) {
    this.guard.checkOn();
    const signedIn = await this.guard.sessionOf(request.headers.cookie);
    return signedIn ? sessionView(signedIn.session) : { signed_in: false };
  }

  @Delete()
  @HttpCode(204)
  @UseGuards(AdminGuard)
  @ApiCookieAuth(SESSION_COOKIE)
  @ApiOperation({ summary: 'Sign out', description: 'The cookie opens nothing afterwards, on any replica.' })
  @ApiNoContentResponse()
  async signOut(
    @SessionOf() signedIn: { cookie: string; session: ConsoleSession } | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (!signedIn) throw new GatewayError('not_found', 'This request came with an admin token, not a console sign-in.');
    await this.sessions.end(signedIn.cookie);
    reply.header('set-cookie', cookieHeader(request, '', 0));
    await this.audit.record({ actor: signedIn.session.actor, action: 'session.sign_out', itemKind: 'session', itemId: null, before: null, after: null });
  }
}
