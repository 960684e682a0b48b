import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sign-ins of the operator console: the cookie's digest (never the cookie), the admin token's
 * name it acts as, the page's CSRF token, and when it ends. Shared by every replica, so a
 * sign-out on one holds on all.
 */
export class ConsoleSessions1765000000000 implements MigrationInterface {
  name = 'ConsoleSessions1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "console_session" (
        "cookie_hash" char(64) PRIMARY KEY,
        "actor" varchar(128) NOT NULL,
        "csrf_token" varchar(64) NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "expires_at" timestamptz NOT NULL,
        "ended_at" timestamptz
      )`);
    await queryRunner.query(`CREATE INDEX "console_session_expires" ON "console_session" ("expires_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "console_session"`);
  }
}
