import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Chargeback labels of a call on its usage record: `tags` (the `X-Gateway-Tags` header; NULL
 * when the call had none) and `end_user` (the body's `user` or `metadata.user_id`; NULL when it
 * named none). A video task keeps both from its submit until its record is written at settlement.
 * The indexes are partial, so records without tags or an end user (most of them) cost nothing to
 * index: the GIN index serves `tags @> …` (PostgreSQL proves `tags IS NOT NULL` from that strict
 * operator), the B-tree an end user's records newest first.
 */
export class UsageTags1765200000000 implements MigrationInterface {
  name = 'UsageTags1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_record" ADD "tags" text[], ADD "end_user" text`);
    await queryRunner.query(`CREATE INDEX "usage_record_tags" ON "usage_record" USING gin ("tags") WHERE "tags" IS NOT NULL`);
    await queryRunner.query(`CREATE INDEX "usage_record_end_user_time" ON "usage_record" ("end_user", "started_at") WHERE "end_user" IS NOT NULL`);
    await queryRunner.query(`ALTER TABLE "video_task" ADD "tags" text[], ADD "end_user" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "video_task" DROP COLUMN "end_user", DROP COLUMN "tags"`);
    await queryRunner.query(`DROP INDEX "usage_record_end_user_time"`);
    await queryRunner.query(`DROP INDEX "usage_record_tags"`);
    await queryRunner.query(`ALTER TABLE "usage_record" DROP COLUMN "end_user", DROP COLUMN "tags"`);
  }
}
