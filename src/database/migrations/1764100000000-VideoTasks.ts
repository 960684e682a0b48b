import { MigrationInterface, QueryRunner } from 'typeorm';

export class VideoTasks1764100000000 implements MigrationInterface {
  name = 'VideoTasks1764100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "video_task" (
        "id" varchar(64) PRIMARY KEY,
        "owner_id" varchar(128) NOT NULL REFERENCES "quota_owner"("id"),
        "key_id" uuid NOT NULL,
        "interface" varchar(16) NOT NULL,
        "model" varchar(128) NOT NULL,
        "line" varchar(128),
        "upstream_task_id" varchar(256),
        "status" varchar(32) NOT NULL,
        "draft" boolean NOT NULL DEFAULT false,
        "duration_seconds" integer,
        "resolution" varchar(32),
        "video_input" boolean NOT NULL DEFAULT false,
        "input_image_count" integer NOT NULL DEFAULT 0,
        "reserved_nano" bigint NOT NULL,
        "submit_request_id" varchar(64) NOT NULL,
        "client_request_id" varchar(128),
        "submitted_at" timestamptz NOT NULL,
        "next_poll_at" timestamptz NOT NULL,
        "polls" integer NOT NULL DEFAULT 0,
        "poll_failures" integer NOT NULL DEFAULT 0,
        "last_error" varchar(256),
        "settled_at" timestamptz,
        "settlement" varchar(16),
        "cost_nano" bigint,
        "usage" jsonb
      )`);
    await queryRunner.query(`CREATE INDEX "video_task_due" ON "video_task" ("next_poll_at") WHERE settled_at IS NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "video_task"`);
  }
}
