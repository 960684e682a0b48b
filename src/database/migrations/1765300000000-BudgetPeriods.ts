import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Budget periods, key budgets and budget alerts.
 *
 * An owner's budget may reset each calendar `budget_period` (day, week from Monday, month) in
 * `budget_timezone` (an IANA name; null: UTC). `budget_spend` holds what each period took, per
 * owner (`key_id` ''; only for owners with a period: an owner without one has its lifetime
 * figures on `quota_owner`) and per key (every key, so a key's spend can be shown; the period
 * `-infinity` when its owner has none). A cost counts in the period of the call's start, a video
 * task's reservation and cost in the period of its submit (`video_task.budget_window`).
 *
 * `budget_alert` holds each alert threshold an owner's period crossed, once per period (the
 * unique key makes two replicas crossing it together fire it once), and its delivery to the
 * webhook: an outbox the replicas claim rows of.
 */
export class BudgetPeriods1765300000000 implements MigrationInterface {
  name = 'BudgetPeriods1765300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "quota_owner" ADD "budget_period" varchar(8) CHECK ("budget_period" IN ('day', 'week', 'month'))`);
    await queryRunner.query(`ALTER TABLE "quota_owner" ADD "budget_timezone" varchar(64)`);
    await queryRunner.query(`ALTER TABLE "quota_owner" ADD "alerts" jsonb`);
    await queryRunner.query(`ALTER TABLE "api_key" ADD "budget_nano" bigint`);
    await queryRunner.query(`ALTER TABLE "video_task" ADD "budget_window" timestamptz`);
    await queryRunner.query(`
      CREATE TABLE "budget_spend" (
        "owner_id" varchar(128) NOT NULL REFERENCES "quota_owner"("id") ON DELETE CASCADE,
        "key_id" varchar(64) NOT NULL,
        "period_start" timestamptz NOT NULL,
        "spent_nano" bigint NOT NULL DEFAULT 0,
        "reserved_nano" bigint NOT NULL DEFAULT 0,
        PRIMARY KEY ("owner_id", "key_id", "period_start")
      )`);
    // The owner's zone, or UTC when it has none or the database does not know it: a zone the
    // gateway accepted (Node's zone data) but this server lacks must not make a money statement
    // fail, which would set its usage records aside.
    await queryRunner.query(`
      CREATE FUNCTION budget_zone(zone text) RETURNS text
      LANGUAGE plpgsql STABLE AS $$
      BEGIN
        PERFORM now() AT TIME ZONE coalesce(zone, 'UTC');
        RETURN coalesce(zone, 'UTC');
      EXCEPTION WHEN invalid_parameter_value THEN
        RETURN 'UTC';
      END
      $$`);
    // The start and the end of the period that holds `at`: -infinity and infinity without a period.
    await queryRunner.query(`
      CREATE FUNCTION budget_period_start(period text, zone text, at timestamptz) RETURNS timestamptz
      LANGUAGE sql STABLE AS $$
        SELECT CASE WHEN period IS NULL THEN '-infinity'::timestamptz ELSE date_trunc(period, at, budget_zone(zone)) END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION budget_period_end(period text, zone text, at timestamptz) RETURNS timestamptz
      LANGUAGE sql STABLE AS $$
        SELECT CASE WHEN period IS NULL THEN 'infinity'::timestamptz
          ELSE (date_trunc(period, at, budget_zone(zone)) AT TIME ZONE budget_zone(zone) + ('1 ' || period)::interval)
            AT TIME ZONE budget_zone(zone) END
      $$`);
    await queryRunner.query(`
      CREATE TABLE "budget_alert" (
        "id" uuid PRIMARY KEY,
        "owner_id" varchar(128) NOT NULL REFERENCES "quota_owner"("id") ON DELETE CASCADE,
        "period_start" timestamptz NOT NULL,
        "period_end" timestamptz,
        "threshold" integer NOT NULL,
        "budget_nano" bigint NOT NULL,
        "used_nano" bigint NOT NULL,
        "fired_at" timestamptz NOT NULL,
        "delivered_at" timestamptz,
        "attempts" integer NOT NULL DEFAULT 0,
        "next_attempt_at" timestamptz NOT NULL,
        "last_error" varchar(256),
        UNIQUE ("owner_id", "period_start", "threshold")
      )`);
    await queryRunner.query(`CREATE INDEX "budget_alert_due" ON "budget_alert" ("next_attempt_at") WHERE "delivered_at" IS NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "budget_alert"`);
    await queryRunner.query(`DROP FUNCTION budget_period_end(text, text, timestamptz)`);
    await queryRunner.query(`DROP FUNCTION budget_period_start(text, text, timestamptz)`);
    await queryRunner.query(`DROP FUNCTION budget_zone(text)`);
    await queryRunner.query(`DROP TABLE "budget_spend"`);
    await queryRunner.query(`ALTER TABLE "video_task" DROP COLUMN "budget_window"`);
    await queryRunner.query(`ALTER TABLE "api_key" DROP COLUMN "budget_nano"`);
    await queryRunner.query(`ALTER TABLE "quota_owner" DROP COLUMN "alerts"`);
    await queryRunner.query(`ALTER TABLE "quota_owner" DROP COLUMN "budget_timezone"`);
    await queryRunner.query(`ALTER TABLE "quota_owner" DROP COLUMN "budget_period"`);
  }
}
