import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The line of each attempt of a call that made more than one (failover to another line, a
 * retry): NULL for a call of one attempt, whose `line` says it all, so most records store nothing.
 */
export class LinesTried1765400000000 implements MigrationInterface {
  name = 'LinesTried1765400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_record" ADD "lines_tried" text[]`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_record" DROP COLUMN "lines_tried"`);
  }
}
