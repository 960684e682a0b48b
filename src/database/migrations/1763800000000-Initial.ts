import { MigrationInterface, QueryRunner } from 'typeorm';

export class Initial1763800000000 implements MigrationInterface {
  name = 'Initial1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "quota_owner" (
        "id" varchar(128) PRIMARY KEY,
        "kind" varchar(16) NOT NULL,
        "budget_nano" bigint,
        "spent_nano" bigint NOT NULL DEFAULT 0,
        "reserved_nano" bigint NOT NULL DEFAULT 0,
        "source" varchar(16) NOT NULL DEFAULT 'config',
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE "api_key" (
        "id" uuid PRIMARY KEY,
        "key_sha256" char(64) NOT NULL,
        "display_prefix" varchar(32) NOT NULL,
        "owner_id" varchar(128) NOT NULL REFERENCES "quota_owner"("id") ON DELETE CASCADE,
        "models" jsonb NOT NULL,
        "enabled" boolean NOT NULL DEFAULT true,
        "expires_at" timestamptz,
        "source" varchar(16) NOT NULL DEFAULT 'config',
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX "api_key_sha256_unique" ON "api_key" ("key_sha256")`);
    await queryRunner.query(`CREATE INDEX "api_key_owner" ON "api_key" ("owner_id")`);
    await queryRunner.query(`
      CREATE TABLE "usage_record" (
        "request_id" varchar(64) PRIMARY KEY,
        "client_request_id" varchar(128),
        "key_id" uuid NOT NULL,
        "owner_id" varchar(128) NOT NULL,
        "model" varchar(128) NOT NULL,
        "interface" varchar(32) NOT NULL,
        "line" varchar(128),
        "translated_to" varchar(32),
        "status" smallint NOT NULL,
        "error_code" varchar(64),
        "stream" boolean NOT NULL DEFAULT false,
        "usage" jsonb,
        "cost_nano" bigint NOT NULL DEFAULT 0,
        "started_at" timestamptz NOT NULL,
        "duration_ms" integer NOT NULL,
        "upstream_headers_ms" integer
      )`);
    await queryRunner.query(`CREATE INDEX "usage_record_owner_time" ON "usage_record" ("owner_id", "started_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "usage_record"`);
    await queryRunner.query(`DROP TABLE "api_key"`);
    await queryRunner.query(`DROP TABLE "quota_owner"`);
  }
}
