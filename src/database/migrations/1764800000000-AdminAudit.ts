import { MigrationInterface, QueryRunner } from 'typeorm';

/** Every admin change: who (the admin token's name), what, and the item before and after, secrets masked. */
export class AdminAudit1764800000000 implements MigrationInterface {
  name = 'AdminAudit1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "admin_audit" (
        "id" bigserial PRIMARY KEY,
        "at" timestamptz NOT NULL DEFAULT now(),
        "actor" varchar(128) NOT NULL,
        "action" varchar(64) NOT NULL,
        "item_kind" varchar(16) NOT NULL,
        "item_id" varchar(256),
        "before" jsonb,
        "after" jsonb
      )`);
    await queryRunner.query(`CREATE INDEX "admin_audit_item" ON "admin_audit" ("item_kind", "item_id", "id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "admin_audit"`);
  }
}
