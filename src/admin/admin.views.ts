import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { nanoToNumber } from '../config/money';
import { OWNER_KINDS } from '../config/config.dto';
import type { KeyRow, OwnerRow } from './admin-store';
import type { DailyTotal, UsageRow } from './usage-query';

/**
 * What the admin API answers, as OpenAPI schemas (classes) and the functions that build them.
 * Amounts are decimal currency units converted exactly from the stored nano-units
 * (DESIGN.md section 7); `*_nano` fields give the exact integers as strings.
 */

const SOURCE_DOC =
  '`config`: from the configuration file, re-applied at every start (changes made here to its fields do not survive a restart); `admin`: made through this API or the command line.';

export class RateLimitsView {
  @ApiProperty({ type: Number, nullable: true, description: 'Calls admitted in any sliding minute; null: no such limit.' }) requests_per_minute!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Input plus output tokens metered in any sliding minute; null: no such limit.' })
  tokens_per_minute!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Calls under way at once; null: no such limit.' }) concurrent_requests!: number | null;
}

export class PeriodSpendView {
  @ApiProperty({ type: String, nullable: true, enum: ['day', 'week', 'month'], description: 'null: no period, the figures are for good.' })
  period!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "The current period's start; null without a period." }) start!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'When the figures start again from zero; null without a period.' })
  resets_at!: string | null;
  @ApiProperty({ description: 'Billed in the period.' }) spent!: number;
  @ApiProperty({ description: 'Held in the period for video tasks still running.' }) reserved!: number;
  @ApiProperty() spent_nano!: string;
  @ApiProperty() reserved_nano!: string;
}

function periodSpendView(period: string | null, start: Date | null, resetsAt: Date | null, spentNano: bigint, reservedNano: bigint): PeriodSpendView {
  return {
    period,
    start: start?.toISOString() ?? null,
    resets_at: resetsAt?.toISOString() ?? null,
    spent: nanoToNumber(spentNano),
    reserved: nanoToNumber(reservedNano),
    spent_nano: spentNano.toString(),
    reserved_nano: reservedNano.toString(),
  };
}

export class OwnerView {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: OWNER_KINDS }) kind!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'null: unlimited.' }) budget!: number | null;
  @ApiProperty({ description: 'Billed so far (written usage records and settled video tasks).' }) spent!: number;
  @ApiProperty({ description: 'Held for video tasks still running.' }) reserved!: number;
  @ApiProperty({ type: String, nullable: true, description: 'The exact budget in nano-units (1e-9), as a string.' }) budget_nano!: string | null;
  @ApiProperty({ description: 'The exact spent amount in nano-units.' }) spent_nano!: string;
  @ApiProperty({ description: 'The exact reserved amount in nano-units.' }) reserved_nano!: string;
  @ApiProperty({ type: RateLimitsView, nullable: true, description: "Rate limits shared by the owner's keys; null: none." }) limits!: RateLimitsView | null;
  @ApiProperty({ type: String, nullable: true, enum: ['day', 'week', 'month'], description: 'The budget starts again each calendar period; null: never.' })
  budget_period!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'IANA time zone the periods are counted in; null: UTC.' }) budget_timezone!: string | null;
  @ApiProperty({ type: [Number], description: 'Per cent of the budget at which an alert fires, once per period.' }) alerts!: number[];
  @ApiProperty({
    type: PeriodSpendView,
    nullable: true,
    description:
      'The current period: what it took and when it resets; the budget applies to it. null without a period (spent and reserved above are then the budget’s).',
  })
  current_period!: PeriodSpendView | null;
  @ApiProperty({ enum: ['config', 'admin'], description: SOURCE_DOC }) source!: string;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export function ownerView(owner: OwnerRow): OwnerView {
  return {
    id: owner.id,
    kind: owner.kind,
    budget: owner.budgetNano === null ? null : nanoToNumber(owner.budgetNano),
    spent: nanoToNumber(owner.spentNano),
    reserved: nanoToNumber(owner.reservedNano),
    budget_nano: owner.budgetNano?.toString() ?? null,
    spent_nano: owner.spentNano.toString(),
    reserved_nano: owner.reservedNano.toString(),
    limits: owner.limits,
    budget_period: owner.terms.period,
    budget_timezone: owner.terms.timezone,
    alerts: owner.terms.alerts,
    current_period:
      owner.period && periodSpendView(owner.terms.period, owner.period.start, owner.period.resetsAt, owner.period.spentNano, owner.period.reservedNano),
    source: owner.source,
    created_at: owner.createdAt.toISOString(),
    updated_at: owner.updatedAt.toISOString(),
  };
}

export class KeyView {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ description: 'The first characters of the key, to recognise it; the key itself is never stored.' }) prefix!: string;
  @ApiProperty() owner!: string;
  @ApiProperty({ type: [String] }) models!: string[];
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ type: String, nullable: true }) expires_at!: string | null;
  @ApiProperty({ type: RateLimitsView, nullable: true, description: "The key's own rate limits (its owner's apply too); null: none." })
  limits!: RateLimitsView | null;
  @ApiProperty({ type: Number, nullable: true, description: "The key's own budget, in its owner's period, inside its owner's budget; null: none." })
  budget!: number | null;
  @ApiProperty({ type: String, nullable: true }) budget_nano!: string | null;
  @ApiProperty({ type: PeriodSpendView, description: "The key's spend in its owner's current period (for good without one)." }) spend!: PeriodSpendView;
  @ApiProperty({ enum: ['config', 'admin'], description: SOURCE_DOC }) source!: string;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export class ListedKeyView extends KeyView {
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Start of the newest call recorded with the key; null when none is (or all were deleted by retention).',
  })
  last_used_at!: string | null;
}

export class CreatedKeyView extends KeyView {
  @ApiProperty({ description: 'The key. Shown in this answer only: store it now.' }) key!: string;
}

export function keyView(key: KeyRow): KeyView {
  return {
    id: key.id,
    prefix: key.prefix,
    owner: key.ownerId,
    models: key.models,
    enabled: key.enabled,
    expires_at: key.expiresAt?.toISOString() ?? null,
    limits: key.limits,
    budget: key.budgetNano === null ? null : nanoToNumber(key.budgetNano),
    budget_nano: key.budgetNano?.toString() ?? null,
    spend: periodSpendView(key.spend.period, key.spend.start, key.spend.resetsAt, key.spend.spentNano, key.spend.reservedNano),
    source: key.source,
    created_at: key.createdAt.toISOString(),
    updated_at: key.updatedAt.toISOString(),
  };
}

export class OwnerPage {
  @ApiProperty({ type: [OwnerView] }) data!: OwnerView[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `after` for the next page; null on the last.' }) next!: string | null;
}

export class KeyPage {
  @ApiProperty({ type: [ListedKeyView] }) data!: ListedKeyView[];
  @ApiProperty({ type: String, nullable: true }) next!: string | null;
}

export class RenewedKeys {
  @ApiProperty({ type: [KeyView] }) data!: KeyView[];
}

export class UsageRecordView {
  @ApiProperty() request_id!: string;
  @ApiProperty({ type: String, nullable: true }) client_request_id!: string | null;
  @ApiProperty({ format: 'uuid' }) key_id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ description: 'The called interface (entry point).' }) interface!: string;
  @ApiProperty({ type: String, nullable: true }) line!: string | null;
  @ApiProperty({ type: String, nullable: true }) translated_to!: string | null;
  @ApiProperty() status!: number;
  @ApiProperty({ type: String, nullable: true }) error_code!: string | null;
  @ApiProperty() stream!: boolean;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' }, nullable: true }) usage!: Record<string, number> | null;
  @ApiProperty() cost!: number;
  @ApiProperty({ description: 'The exact cost in nano-units (1e-9), as a string.' }) cost_nano!: string;
  @ApiProperty() started_at!: string;
  @ApiProperty() duration_ms!: number;
  @ApiProperty({ type: Number, nullable: true }) upstream_headers_ms!: number | null;
  @ApiProperty({ type: [String], description: 'The tags of the call (`X-Gateway-Tags`), in the order sent; empty when it had none.' }) tags!: string[];
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The end user the request body named (`user`; messages: `metadata.user_id`), at most 256 characters.',
  })
  end_user!: string | null;
  @ApiProperty({ description: 'Attempts on upstream lines: failovers and retries each count one; 0 when no line was tried.' }) attempts!: number;
  @ApiProperty({ type: [String], description: 'The line of each attempt, in order.' }) lines_tried!: string[];
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'The id of the prices the call was billed at (`GET /admin/usage/verify` recomputes its cost from them); null for records from before prices were kept.',
  })
  price_sheet!: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description:
      'What the price depended on beyond the figures: `resolution` and `video_input` (video), `output_pixels` (images format B); null for most calls.',
  })
  price_basis!: Record<string, unknown> | null;
  @ApiProperty({ description: 'false: still queued for the database (a lookup sees a call at once).' }) written!: boolean;
}

export function usageView(record: UsageRow, written: boolean): UsageRecordView {
  return {
    request_id: record.requestId,
    client_request_id: record.clientRequestId,
    key_id: record.keyId,
    owner_id: record.ownerId,
    model: record.model,
    interface: record.interface,
    line: record.line,
    translated_to: record.translatedTo,
    status: record.status,
    error_code: record.errorCode,
    stream: record.stream,
    usage: (record.usage as Record<string, number> | undefined) ?? null,
    cost: nanoToNumber(record.costNano),
    cost_nano: record.costNano.toString(),
    started_at: record.startedAt.toISOString(),
    duration_ms: record.durationMs,
    upstream_headers_ms: record.upstreamHeadersMs,
    tags: record.tags ? [...record.tags] : [],
    end_user: record.endUser,
    attempts: record.linesTried?.length ?? (record.line === null ? 0 : 1),
    lines_tried: record.linesTried ? [...record.linesTried] : record.line === null ? [] : [record.line],
    price_sheet: record.priceSheet,
    price_basis: record.priceBasis ? { ...record.priceBasis } : null,
    written,
  };
}

export class UsagePage {
  @ApiProperty({ type: [UsageRecordView] }) data!: UsageRecordView[];
  @ApiProperty({ type: String, nullable: true }) next!: string | null;
}

export class DailyTotalView {
  @ApiProperty({ example: '2026-11-23', description: 'UTC day.' }) day!: string;
  @ApiProperty() model!: string;
  @ApiPropertyOptional({ description: 'Present when grouped by owner.' }) owner?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Present when grouped by tag; null: the records without tags.' }) tag?: string | null;
  @ApiProperty() calls!: number;
  @ApiProperty({ description: 'Calls answered with status 400 or above.' }) failed_calls!: number;
  @ApiProperty() cost!: number;
  @ApiProperty() cost_nano!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' } }) usage!: Record<string, number>;
}

export class DailyTotals {
  @ApiProperty({ type: [DailyTotalView] }) data!: DailyTotalView[];
}

export function dailyView(total: DailyTotal): DailyTotalView {
  return {
    day: total.day,
    model: total.model,
    ...(total.ownerId === null ? {} : { owner: total.ownerId }),
    ...(total.tag === undefined ? {} : { tag: total.tag }),
    calls: total.calls,
    failed_calls: total.failedCalls,
    cost: nanoToNumber(total.costNano),
    cost_nano: total.costNano.toString(),
    usage: total.usage,
  };
}

/** The most differences of single records one spend audit answer lists; the others are counted. */
export const LISTED_RECORD_DIFFERENCES = 1000;

/** A record whose stored cost differs from its prices (the spend audit's differences are told apart by `kind`). */
export class RecordCostDifference {
  @ApiProperty({ enum: ['record_cost'] }) kind!: 'record_cost';
  @ApiProperty() request_id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ description: 'Start time of the call.' }) started_at!: string;
  @ApiProperty({ description: 'The cost the record holds, in nano-units (1e-9), as a string.' }) cost_nano!: string;
  @ApiProperty({ description: "The cost worked out again from the record's figures, its price sheet and its price basis." }) recomputed_nano!: string;
  @ApiProperty({ description: '`cost_nano` minus `recomputed_nano`: positive when the record holds more than its prices give.' }) difference_nano!: string;
}

export class PriceSheetMissingDifference {
  @ApiProperty({ enum: ['price_sheet_missing'] }) kind!: 'price_sheet_missing';
  @ApiProperty() request_id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty({ description: 'The sheet id the record names, which `price_sheet` does not hold.' }) price_sheet!: string;
}

export class RecordUnreadableDifference {
  @ApiProperty({ enum: ['record_unreadable'] }) kind!: 'record_unreadable';
  @ApiProperty() request_id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty({ description: 'The sheet id the record names.' }) price_sheet!: string;
  @ApiProperty({ description: 'Why its cost could not be worked out again: a sheet or figures that are not what the gateway writes.' }) message!: string;
}

export class DailyDifferenceView {
  @ApiProperty({ example: '2026-11-23', description: 'UTC day.' }) day!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ description: "The day's cost in the daily totals (`usage_daily`), in nano-units." }) total_nano!: string;
  @ApiProperty({ description: 'The sum of the costs of the records stored for that day and model.' }) records_nano!: string;
  @ApiPropertyOptional({
    type: [String],
    description:
      'Records of that day and model whose own cost differs from their prices (as `record_cost` differences of this answer); absent when none is listed.',
  })
  request_ids?: string[];
}

export class OwnerSpentDifference {
  @ApiProperty({ enum: ['owner_spent'] }) kind!: 'owner_spent';
  @ApiProperty() owner_id!: string;
  @ApiProperty({ description: "The owner's lifetime spent amount (`quota_owner.spent_nano`), in nano-units." }) spent_nano!: string;
  @ApiProperty({ description: "The sum of the owner's daily totals over all time: every record's cost, those retention deleted included." })
  records_nano!: string;
  @ApiProperty({ description: '`spent_nano` minus `records_nano`.' }) difference_nano!: string;
  @ApiProperty({
    type: [DailyDifferenceView],
    description: "The owner's daily totals that differ from the records still stored for their day and model, over the days retention has not reached.",
  })
  days!: DailyDifferenceView[];
}

export class DailyTotalDifference {
  @ApiProperty({ enum: ['daily_total'] }) kind!: 'daily_total';
  @ApiProperty() owner_id!: string;
  @ApiProperty({ example: '2026-11-23', description: 'UTC day.' }) day!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ description: "The day's cost in the daily totals (`usage_daily`), in nano-units." }) total_nano!: string;
  @ApiProperty({ description: 'The sum of the costs of the records stored for that day, owner and model.' }) records_nano!: string;
}

export type SpendDifference = RecordCostDifference | PriceSheetMissingDifference | RecordUnreadableDifference | OwnerSpentDifference | DailyTotalDifference;

export const SPEND_DIFFERENCE_VIEWS = [
  RecordCostDifference,
  PriceSheetMissingDifference,
  RecordUnreadableDifference,
  OwnerSpentDifference,
  DailyTotalDifference,
] as const;

export class SpendAuditView {
  @ApiProperty({ type: String, nullable: true, description: 'The owner audited; null: every owner.' }) owner!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Records started at or after this instant were checked; null: from the first.' })
  from!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Records started before this instant were checked; null: to the last.' }) to!: string | null;
  @ApiProperty({
    description: 'Records whose cost was worked out again from their prices, and records that need none (no price sheet, no figures, cost 0).',
  })
  records_checked!: number;
  @ApiProperty({
    description: 'Records from before prices were kept with each record (no price sheet) that carry figures or a cost: not verifiable, not differences.',
  })
  records_without_prices!: number;
  @ApiProperty({ description: 'Owners whose spent amount was compared with their daily totals (quota_owner: the one given, else all).' })
  owners_checked!: number;
  @ApiProperty({ description: `Differences of single records found beyond the first ${LISTED_RECORD_DIFFERENCES}, counted but not listed.` })
  unlisted_differences!: number;
  @ApiProperty({
    type: 'array',
    items: { oneOf: SPEND_DIFFERENCE_VIEWS.map((view) => ({ $ref: getSchemaPath(view) })), discriminator: { propertyName: 'kind' } },
    description:
      'What does not add up, empty when all does: records first (in start order), then owners, then daily totals. `record_cost`: a record whose cost differs from its prices; `price_sheet_missing`: a record naming a sheet `price_sheet` does not hold; `record_unreadable`: a record whose cost cannot be worked out again; `owner_spent`: an owner whose spent amount differs from its daily totals; `daily_total`: a daily total of the days of `from`–`to` that differs from its records.',
  })
  differences!: SpendDifference[];
}
