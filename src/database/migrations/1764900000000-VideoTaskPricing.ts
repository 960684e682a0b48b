import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A video task keeps its model's prices and tiers as they were at its submit, so a price changed
 * while it renders does not change what it costs. Tasks from before have none: they are priced
 * with the catalog of their settlement, as they were.
 */
export class VideoTaskPricing1764900000000 implements MigrationInterface {
  name = 'VideoTaskPricing1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "video_task" ADD COLUMN "pricing" jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "video_task" DROP COLUMN "pricing"`);
  }
}
