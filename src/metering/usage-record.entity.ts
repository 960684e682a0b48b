import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../database/bigint.transformer';

/**
 * One forwarded call, found again by its request id. Small on purpose: no bodies and no
 * copies of catalog data, only what billing and lookup need. Every insert is also summed into
 * the daily totals (`usage_daily`) by a trigger (migration UsageTotals).
 */
@Entity('usage_record')
@Index('usage_record_owner_time', ['ownerId', 'startedAt'])
@Index('usage_record_key_time', ['keyId', 'startedAt'])
@Index('usage_record_model_time', ['model', 'startedAt'])
@Index('usage_record_time', ['startedAt'])
export class UsageRecord {
  @PrimaryColumn({ name: 'request_id', type: 'varchar', length: 64 })
  requestId!: string;

  @Column({ name: 'client_request_id', type: 'varchar', length: 128, nullable: true })
  clientRequestId!: string | null;

  @Column({ name: 'key_id', type: 'uuid' })
  keyId!: string;

  @Column({ name: 'owner_id', type: 'varchar', length: 128 })
  ownerId!: string;

  @Column({ type: 'varchar', length: 128 })
  model!: string;

  /** The called interface (entry point). */
  @Column({ type: 'varchar', length: 32 })
  interface!: string;

  /** The upstream line that gave the answer (the last one tried). */
  @Column({ type: 'varchar', length: 128, nullable: true })
  line!: string | null;

  /** The upstream protocol when the call was translated; null for native calls. */
  @Column({ name: 'translated_to', type: 'varchar', length: 32, nullable: true })
  translatedTo!: string | null;

  /** HTTP status the client received (499: the client went away first). */
  @Column({ type: 'smallint' })
  status!: number;

  /** Gateway error code or upstream error type, when the call failed. */
  @Column({ name: 'error_code', type: 'varchar', length: 64, nullable: true })
  errorCode!: string | null;

  @Column({ type: 'boolean', default: false })
  stream!: boolean;

  /** Metered figures (names as in the price table); absent figures were not reported. */
  @Column({ type: 'jsonb', nullable: true })
  usage!: Record<string, number> | null;

  @Column({ name: 'cost_nano', type: 'bigint', default: 0, transformer: bigintTransformer })
  costNano!: bigint;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs!: number;

  /** Time from sending upstream to the upstream's response headers. */
  @Column({ name: 'upstream_headers_ms', type: 'integer', nullable: true })
  upstreamHeadersMs!: number | null;

  /** The call's `X-Gateway-Tags`; null when it had none (indexed by GIN where present, migration UsageTags). */
  @Column({ type: 'text', array: true, nullable: true })
  tags!: string[] | null;

  /** The end user the request body named (`user`, `metadata.user_id`). */
  @Column({ name: 'end_user', type: 'text', nullable: true })
  endUser!: string | null;

  /** The line of each attempt in order, when the call made more than one (failover, retries). */
  @Column({ name: 'lines_tried', type: 'text', array: true, nullable: true })
  linesTried!: string[] | null;

  /** The id of the prices the call was billed at (`price_sheet`); null for records from before they were kept. */
  @Column({ name: 'price_sheet', type: 'varchar', length: 32, nullable: true })
  priceSheet!: string | null;

  /** What the price depended on beyond the figures (a video's resolution, each image's pixels). */
  @Column({ name: 'price_basis', type: 'jsonb', nullable: true })
  priceBasis!: Record<string, unknown> | null;
}
