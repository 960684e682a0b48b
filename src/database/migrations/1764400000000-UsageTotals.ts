import { MigrationInterface, QueryRunner } from 'typeorm';

/** The UTC day of a usage record, the roll-up's grouping. */
const DAY = `(started_at AT TIME ZONE 'UTC')::date`;

/**
 * Sums a set of usage records (`source`) into the daily totals: one row per UTC day, owner and
 * model, with calls, failed calls (status 400 and above), cost and every usage figure summed.
 * Rows are taken in key order so concurrent writers lock totals rows in the same order.
 */
function rollUp(source: string): string {
  return `
    INSERT INTO usage_daily AS total (day, owner_id, model, calls, failed_calls, cost_nano, usage)
    SELECT calls.day, calls.owner_id, calls.model, calls.calls, calls.failed_calls, calls.cost_nano,
           coalesce(figures.usage, '{}'::jsonb)
      FROM (SELECT ${DAY} AS day, owner_id, model, count(*) AS calls,
                   count(*) FILTER (WHERE status >= 400) AS failed_calls, sum(cost_nano) AS cost_nano
              FROM ${source} GROUP BY 1, 2, 3) calls
      LEFT JOIN (SELECT day, owner_id, model, jsonb_object_agg(figure, amount) AS usage
                   FROM (SELECT ${DAY} AS day, owner_id, model, figure.key AS figure, sum(figure.value::numeric) AS amount
                           FROM ${source}, jsonb_each_text(usage) figure GROUP BY 1, 2, 3, 4) per_figure
                  GROUP BY 1, 2, 3) figures USING (day, owner_id, model)
     ORDER BY 1, 2, 3
    ON CONFLICT (day, owner_id, model) DO UPDATE SET
      calls = total.calls + EXCLUDED.calls,
      failed_calls = total.failed_calls + EXCLUDED.failed_calls,
      cost_nano = total.cost_nano + EXCLUDED.cost_nano,
      usage = (SELECT coalesce(jsonb_object_agg(figure,
                        coalesce((total.usage ->> figure)::numeric, 0) + coalesce((EXCLUDED.usage ->> figure)::numeric, 0)), '{}'::jsonb)
                 FROM jsonb_object_keys(total.usage || EXCLUDED.usage) figure)`;
}

/**
 * Daily totals kept up to date by the database itself: a statement trigger sums every insert
 * into usage_record (the batched writer's INSERT and COPY, a settled video task) in the same
 * transaction, so totals and records cannot drift, and a month of totals reads 30 rows per
 * owner and model instead of every call. Deleting old records (retention) leaves the totals.
 * Indexes for the admin API's usage queries: by key, by model, and by time alone.
 */
export class UsageTotals1764400000000 implements MigrationInterface {
  name = 'UsageTotals1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "usage_daily" (
        "day" date NOT NULL,
        "owner_id" varchar(128) NOT NULL,
        "model" varchar(128) NOT NULL,
        "calls" bigint NOT NULL,
        "failed_calls" bigint NOT NULL,
        "cost_nano" bigint NOT NULL,
        "usage" jsonb NOT NULL,
        PRIMARY KEY ("day", "owner_id", "model")
      )`);
    await queryRunner.query(`
      CREATE FUNCTION usage_daily_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        ${rollUp('inserted')};
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER "usage_daily_add" AFTER INSERT ON "usage_record"
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION usage_daily_add()`);
    await queryRunner.query(rollUp('usage_record'));
    await queryRunner.query(`CREATE INDEX "usage_record_time" ON "usage_record" ("started_at")`);
    await queryRunner.query(`CREATE INDEX "usage_record_key_time" ON "usage_record" ("key_id", "started_at")`);
    await queryRunner.query(`CREATE INDEX "usage_record_model_time" ON "usage_record" ("model", "started_at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "usage_record_model_time"`);
    await queryRunner.query(`DROP INDEX "usage_record_key_time"`);
    await queryRunner.query(`DROP INDEX "usage_record_time"`);
    await queryRunner.query(`DROP TRIGGER "usage_daily_add" ON "usage_record"`);
    await queryRunner.query(`DROP FUNCTION usage_daily_add()`);
    await queryRunner.query(`DROP TABLE "usage_daily"`);
  }
}
