import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';

/** The sign-in cookie of the console. HttpOnly: the page's script never sees it. */
export const SESSION_COOKIE = 'gateway_console';

/** A console sign-in as the admin API sees it. */
export interface ConsoleSession {
  /** The name of the admin token signed in with: the actor of the audit log. */
  actor: string;
  /** Sent back by the page in `X-CSRF-Token` on every change. */
  csrfToken: string;
  expiresAt: Date;
}

interface SessionRow {
  actor: string;
  csrf_token: string;
  expires_at: Date | string;
}

function digestOf(cookie: string): string {
  return createHash('sha256').update(cookie).digest('hex');
}

/** Equal strings, compared in constant time. */
export function sameSecret(presented: string | undefined, expected: string): boolean {
  const a = createHash('sha256')
    .update(presented ?? '')
    .digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && presented !== undefined;
}

/**
 * Console sign-ins, kept in the database so that every replica behind a load balancer honours
 * them and a sign-out ends them everywhere. Only the cookie's SHA-256 is stored: a copy of the
 * table signs nobody in.
 */
export class ConsoleSessions {
  constructor(
    private readonly dataSource: DataSource,
    private readonly ttlMs: number,
  ) {}

  /** A new sign-in: the cookie value (given to the browser only) and the session. */
  async open(actor: string, now: Date = new Date()): Promise<{ cookie: string; session: ConsoleSession }> {
    const cookie = randomBytes(32).toString('base64url');
    const session = { actor, csrfToken: randomBytes(24).toString('base64url'), expiresAt: new Date(now.getTime() + this.ttlMs) };
    await this.dataSource.query(`INSERT INTO console_session (cookie_hash, actor, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`, [
      digestOf(cookie),
      actor,
      session.csrfToken,
      now,
      session.expiresAt,
    ]);
    // Sessions long over are of no use to anybody: each sign-in clears them.
    await this.dataSource.query(`DELETE FROM console_session WHERE expires_at < $1`, [new Date(now.getTime() - this.ttlMs)]);
    return { cookie, session };
  }

  /** The live session a cookie names; undefined once it ended or expired. */
  async find(cookie: string, now: Date = new Date()): Promise<ConsoleSession | undefined> {
    const rows: SessionRow[] = await this.dataSource.query(
      `SELECT actor, csrf_token, expires_at FROM console_session WHERE cookie_hash = $1 AND ended_at IS NULL AND expires_at > $2`,
      [digestOf(cookie), now],
    );
    const row = rows[0];
    return row && { actor: row.actor, csrfToken: row.csrf_token, expiresAt: new Date(row.expires_at) };
  }

  /** Signs out: the cookie opens nothing afterwards, on any replica. */
  async end(cookie: string, now: Date = new Date()): Promise<void> {
    await this.dataSource.query(`UPDATE console_session SET ended_at = $2 WHERE cookie_hash = $1 AND ended_at IS NULL`, [digestOf(cookie), now]);
  }
}

/** The value of one cookie in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
