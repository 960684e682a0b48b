import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The prices each usage record was billed at, so a later price change never blurs what a past
 * call cost: `price_sheet` holds every set of a model's prices and tiers once, under an id made
 * from its content (metering/price-sheets.ts); a record names its sheet and, where its price
 * depended on more than its figures (a video's resolution, each image's pixels), that basis.
 * Records from before have neither; the spend audit counts them as not verifiable.
 */
export class PriceSheets1765500000000 implements MigrationInterface {
  name = 'PriceSheets1765500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "price_sheet" (
        "id" varchar(32) PRIMARY KEY,
        "pricing" jsonb NOT NULL,
        "created_at" timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`ALTER TABLE "usage_record" ADD "price_sheet" varchar(32), ADD "price_basis" jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_record" DROP COLUMN "price_basis", DROP COLUMN "price_sheet"`);
    await queryRunner.query(`DROP TABLE "price_sheet"`);
  }
}
