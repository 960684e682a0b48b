import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The catalog in the database: upstream lines and models, each in the JSON form of its
 * configuration-file item (`spec`), with the write counter a change must name (`version`).
 * A line's vendor key is never in `spec`: a `${VAR}` reference, or a literal sealed with
 * GATEWAY_SECRET_KEY, or neither for a line of the file (each replica takes it from its file).
 * `catalog_version` counts every change; replicas compare it to see that theirs is stale.
 */
export class Catalog1764700000000 implements MigrationInterface {
  name = 'Catalog1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "upstream_line" (
        "id" varchar(128) PRIMARY KEY,
        "ordinal" bigserial NOT NULL,
        "spec" jsonb NOT NULL,
        "api_key_ref" varchar(256),
        "api_key_sealed" text,
        "api_key_last4" varchar(4),
        "source" varchar(16) NOT NULL,
        "version" integer NOT NULL DEFAULT 1,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE "catalog_model" (
        "id" varchar(128) PRIMARY KEY,
        "ordinal" bigserial NOT NULL,
        "spec" jsonb NOT NULL,
        "source" varchar(16) NOT NULL,
        "version" integer NOT NULL DEFAULT 1,
        "created_at" timestamptz NOT NULL DEFAULT now(),
        "updated_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`CREATE TABLE "catalog_version" ("id" integer PRIMARY KEY CHECK ("id" = 1), "version" bigint NOT NULL)`);
    await queryRunner.query(`INSERT INTO "catalog_version" ("id", "version") VALUES (1, 0)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "catalog_version"`);
    await queryRunner.query(`DROP TABLE "catalog_model"`);
    await queryRunner.query(`DROP TABLE "upstream_line"`);
  }
}
