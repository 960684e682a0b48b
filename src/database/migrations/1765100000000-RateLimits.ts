import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate limits of keys and owners (`limits`, as the file writes them; null: none), and the counts
 * replicas share: calls and tokens per subject (`key:<id>`, `owner:<id>`) and minute, and each
 * replica's calls under way, dropped once it stops reporting them.
 */
export class RateLimits1765100000000 implements MigrationInterface {
  name = 'RateLimits1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "quota_owner" ADD "limits" jsonb`);
    await queryRunner.query(`ALTER TABLE "api_key" ADD "limits" jsonb`);
    await queryRunner.query(`
      CREATE TABLE "rate_count" (
        "subject" varchar(200) NOT NULL,
        "minute" bigint NOT NULL,
        "requests" bigint NOT NULL DEFAULT 0,
        "tokens" bigint NOT NULL DEFAULT 0,
        PRIMARY KEY ("subject", "minute")
      )`);
    await queryRunner.query(`
      CREATE TABLE "rate_in_flight" (
        "subject" varchar(200) NOT NULL,
        "replica" uuid NOT NULL,
        "in_flight" integer NOT NULL,
        "seen_at" timestamptz NOT NULL,
        PRIMARY KEY ("subject", "replica")
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "rate_in_flight"`);
    await queryRunner.query(`DROP TABLE "rate_count"`);
    await queryRunner.query(`ALTER TABLE "api_key" DROP COLUMN "limits"`);
    await queryRunner.query(`ALTER TABLE "quota_owner" DROP COLUMN "limits"`);
  }
}
