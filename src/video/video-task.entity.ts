import type { PricingSpec } from '../config/catalog-spec';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../database/bigint.transformer';

/** The two asynchronous video interfaces (SPEC.md "Video tasks"). */
export type VideoInterface = 'video_b' | 'video_c';

/** Upstream statuses that end a task (SPEC.md "States and transitions"); any other is in progress. */
export const FINAL_STATUSES = ['succeeded', 'failed', 'cancelled', 'expired'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

/** Status of a task whose submit is on its way upstream: reserved, no upstream id yet. */
export const SUBMITTING = 'submitting';

export function isFinalStatus(status: string): status is FinalStatus {
  return (FINAL_STATUSES as readonly string[]).includes(status);
}

/**
 * How a settled task was charged: from the upstream's usage, estimated from duration and
 * resolution (the upstream reported none), not at all (failed, cancelled, expired, lost), or
 * at its reservation (still unsettled 8 days after submission).
 */
export type Settlement = 'usage' | 'estimated' | 'not_billed' | 'reserved';

/**
 * One asynchronous video task. The gateway's id is the only one a client ever sees; the
 * upstream id stays here. Money in nano-units.
 */
@Entity('video_task')
@Index('video_task_due', ['nextPollAt'], { where: 'settled_at IS NULL' })
export class VideoTask {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 128 })
  ownerId!: string;

  @Column({ name: 'key_id', type: 'uuid' })
  keyId!: string;

  @Column({ type: 'varchar', length: 16 })
  interface!: VideoInterface;

  @Column({ type: 'varchar', length: 128 })
  model!: string;

  /** The line that accepted the submit; queries and cancels go to it. */
  @Column({ type: 'varchar', length: 128, nullable: true })
  line!: string | null;

  /** Null while the submit is on its way. */
  @Column({ name: 'upstream_task_id', type: 'varchar', length: 256, nullable: true })
  upstreamTaskId!: string | null;

  /** `submitting`, then the upstream's status as last seen. */
  @Column({ type: 'varchar', length: 32 })
  status!: string;

  @Column({ type: 'boolean', default: false })
  draft!: boolean;

  /** Requested seconds; null when the submit named none. */
  @Column({ name: 'duration_seconds', type: 'integer', nullable: true })
  durationSeconds!: number | null;

  /** Requested resolution as sent; null when the submit named none. */
  @Column({ type: 'varchar', length: 32, nullable: true })
  resolution!: string | null;

  @Column({ name: 'video_input', type: 'boolean', default: false })
  videoInput!: boolean;

  @Column({ name: 'input_image_count', type: 'integer', default: 0 })
  inputImageCount!: number;

  @Column({ name: 'reserved_nano', type: 'bigint', transformer: bigintTransformer })
  reservedNano!: bigint;

  /** The start of the owner's budget period the submit fell in, which its reservation and cost count in; null: no period. */
  @Column({ name: 'budget_window', type: 'timestamptz', nullable: true })
  budgetWindow!: Date | null;

  /** `X-Request-Id` of the submit response: the request id of the settled usage record. */
  @Column({ name: 'submit_request_id', type: 'varchar', length: 64 })
  submitRequestId!: string;

  @Column({ name: 'client_request_id', type: 'varchar', length: 128, nullable: true })
  clientRequestId!: string | null;

  @Column({ name: 'submitted_at', type: 'timestamptz' })
  submittedAt!: Date;

  /** When the reconciler may next look at the task (also its claim: a claimed task's time moves on). */
  @Column({ name: 'next_poll_at', type: 'timestamptz' })
  nextPollAt!: Date;

  @Column({ type: 'integer', default: 0 })
  polls!: number;

  /** Failed polls in a row. */
  @Column({ name: 'poll_failures', type: 'integer', default: 0 })
  pollFailures!: number;

  @Column({ name: 'last_error', type: 'varchar', length: 256, nullable: true })
  lastError!: string | null;

  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt!: Date | null;

  @Column({ type: 'varchar', length: 16, nullable: true })
  settlement!: Settlement | null;

  @Column({ name: 'cost_nano', type: 'bigint', nullable: true, transformer: bigintTransformer })
  costNano!: bigint | null;

  /** Figures the settlement charged (reported or estimated). */
  @Column({ type: 'jsonb', nullable: true })
  usage!: Record<string, number> | null;

  /** The model's prices and tiers at the submit (`pricingSpecOf`); null for a task from before they were kept. */
  @Column({ type: 'jsonb', nullable: true })
  pricing!: PricingSpec | null;

  /** The submit's `X-Gateway-Tags` and end user, for the usage record written at settlement. */
  @Column({ type: 'text', array: true, nullable: true })
  tags!: string[] | null;

  @Column({ name: 'end_user', type: 'text', nullable: true })
  endUser!: string | null;
}
