import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { OWNER_KINDS } from '../config/config.dto';
import type { OwnerKind } from '../config/gateway-config';
import { MAX_END_USER_LENGTH, MAX_TAGS, TAG_PATTERN } from '../forwarding/call-labels';

/**
 * Request bodies and query strings of the admin API. Each is validated with class-validator
 * (admin-validation.ts): unknown fields are refused, and a problem names its field.
 */

const REQUIRED = { message: 'is required' };
const ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const AMOUNT_DOC = 'Currency units, a JSON number or a decimal string ("12.5"); converted exactly.';
const EXPIRY_DOC = 'ISO 8601 date (midnight UTC) or date-time with a zone; null: never expires.';

export const MAX_PAGE = 1000;

const LIMIT_DOC = 'A whole number from 1; null: no such limit.';

/** The `limits` of an owner or a key, as the configuration file writes them. */
export class RateLimitsBody {
  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 1, example: 600, description: `Calls admitted in any sliding minute. ${LIMIT_DOC}` })
  requests_per_minute?: number | null;

  @ApiPropertyOptional({
    type: Number,
    nullable: true,
    minimum: 1,
    example: 200000,
    description: `Input plus output tokens of the calls metered in any sliding minute; a call is admitted while under it. ${LIMIT_DOC}`,
  })
  tokens_per_minute?: number | null;

  @ApiPropertyOptional({ type: Number, nullable: true, minimum: 1, example: 20, description: `Calls under way at once. ${LIMIT_DOC}` })
  concurrent_requests?: number | null;
}

export class CreateOwnerBody {
  @ApiProperty({ example: 'team-a', description: 'Letters, digits and . _ : @ -, at most 128 characters.' })
  @Matches(ID, { message: 'must start with a letter or digit and hold only letters, digits and . _ : @ -' })
  @MaxLength(128)
  @IsString()
  @IsDefined(REQUIRED)
  id!: string;

  @ApiProperty({ enum: OWNER_KINDS })
  @IsIn(OWNER_KINDS, { message: `must be one of ${OWNER_KINDS.join(', ')}` })
  @IsDefined(REQUIRED)
  kind!: OwnerKind;

  @ApiPropertyOptional({ oneOf: [{ type: 'number' }, { type: 'string' }], nullable: true, description: `${AMOUNT_DOC} Absent or null: unlimited.` })
  @IsOptional()
  budget?: number | string | null;

  @ApiPropertyOptional({ type: RateLimitsBody, nullable: true, description: "Rate limits shared by the owner's keys. Absent or null: none." })
  @IsOptional()
  limits?: unknown;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    enum: ['day', 'week', 'month'],
    description: 'The budget starts again each calendar period (weeks from Monday). Absent or null: none.',
  })
  @IsOptional()
  budget_period?: unknown;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'Europe/Berlin',
    description: 'IANA time zone the periods are counted in (null: UTC). Absent or null: none.',
  })
  @IsOptional()
  budget_timezone?: unknown;

  @ApiPropertyOptional({
    type: [Number],
    nullable: true,
    example: [50, 80, 100],
    description: 'Per cent of the budget at which an alert fires, once per period (1..1000, at most 10). Absent or null: none.',
  })
  @IsOptional()
  alerts?: unknown;
}

export class SignInBody {
  @ApiProperty({ description: 'ADMIN_TOKEN or one of ADMIN_TOKENS. Sent in the body, never in a URL.' })
  @MaxLength(4096)
  @IsString()
  @IsDefined(REQUIRED)
  token!: string;
}

export class UpdateOwnerBody {
  @ApiPropertyOptional({ oneOf: [{ type: 'number' }, { type: 'string' }], nullable: true, description: `${AMOUNT_DOC} null: unlimited. Absent: unchanged.` })
  @IsOptional()
  budget?: number | string | null;

  @ApiPropertyOptional({
    type: RateLimitsBody,
    nullable: true,
    description: 'The limits given replace the stored ones (null clears one); the others stay. null: no limits. Absent: unchanged.',
  })
  @IsOptional()
  limits?: unknown;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    enum: ['day', 'week', 'month'],
    description: 'The budget starts again each calendar period (weeks from Monday). Absent: unchanged.',
  })
  @IsOptional()
  budget_period?: unknown;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'Europe/Berlin',
    description: 'IANA time zone the periods are counted in (null: UTC). Absent: unchanged.',
  })
  @IsOptional()
  budget_timezone?: unknown;

  @ApiPropertyOptional({
    type: [Number],
    nullable: true,
    example: [50, 80, 100],
    description: 'Per cent of the budget at which an alert fires, once per period (1..1000, at most 10). Absent: unchanged.',
  })
  @IsOptional()
  alerts?: unknown;
}

export class UpdateKeyBody {
  @ApiPropertyOptional({
    type: RateLimitsBody,
    nullable: true,
    description: "The key's own rate limits: the limits given replace the stored ones (null clears one); the others stay. null: no limits. Absent: unchanged.",
  })
  @IsOptional()
  limits?: unknown;

  @ApiPropertyOptional({
    oneOf: [{ type: 'number' }, { type: 'string' }],
    nullable: true,
    description: `${AMOUNT_DOC} The key's own budget, in its owner's period, inside its owner's budget. null: none. Absent: unchanged.`,
  })
  @IsOptional()
  budget?: number | string | null;
}

export class CreateKeyBody {
  @ApiProperty({ example: 'team-a', description: 'The quota owner the key spends for.' })
  @IsNotEmpty()
  @IsString()
  @IsDefined(REQUIRED)
  owner!: string;

  @ApiProperty({ type: [String], example: ['text-model-1'], description: 'Model ids of the catalog the key may use, or ["*"].' })
  @IsNotEmpty({ each: true, message: 'each entry must be a non-empty string' })
  @IsString({ each: true, message: 'each entry must be a non-empty string' })
  @ArrayNotEmpty({ message: 'must name at least one model, or "*"' })
  @IsArray({ message: 'must be a list of model ids' })
  @IsDefined(REQUIRED)
  models!: string[];

  @ApiPropertyOptional({ type: String, nullable: true, example: '2027-01-01', description: EXPIRY_DOC })
  @IsOptional()
  @IsString({ message: 'must be an ISO 8601 date or date-time with a zone, e.g. 2027-01-01T00:00:00Z' })
  expires_at?: string | null;

  @ApiPropertyOptional({ type: RateLimitsBody, nullable: true, description: "The key's own rate limits, within its owner's. Absent or null: none." })
  @IsOptional()
  limits?: unknown;

  @ApiPropertyOptional({
    oneOf: [{ type: 'number' }, { type: 'string' }],
    nullable: true,
    description: `${AMOUNT_DOC} The key's own budget, in its owner's period, inside its owner's budget. Absent or null: none.`,
  })
  @IsOptional()
  budget?: number | string | null;
}

export class RenewBody {
  @ApiProperty({ type: String, nullable: true, example: '2027-06-30', description: EXPIRY_DOC })
  @ValidateIf((_, value) => value !== null)
  @IsString({ message: 'must be an ISO 8601 date or date-time with a zone, e.g. 2027-01-01T00:00:00Z' })
  @IsDefined(REQUIRED)
  expires_at!: string | null;
}

export class PageQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: MAX_PAGE, default: 100 })
  @IsOptional()
  @Max(MAX_PAGE)
  @Min(1)
  @IsInt({ message: 'must be a whole number' })
  @Type(() => Number)
  limit?: number;

  @ApiPropertyOptional({ description: 'The `next` value of the previous page.' })
  @IsOptional()
  @IsString()
  after?: string;
}

export class KeyListQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Only the keys of this quota owner.' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;
}

export class UsageListQuery extends PageQuery {
  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;

  @ApiPropertyOptional({ description: 'Key id (a UUID, as the key list shows it).' })
  @IsOptional()
  @IsUUID('all', { message: 'must be a key id (UUID)' })
  key?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  model?: string;

  @ApiPropertyOptional({ example: 'chat_completions', description: 'The called interface (entry point).' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  interface?: string;

  @ApiPropertyOptional({ example: '4xx', description: 'An HTTP status (429) or a class (2xx, 4xx, 5xx).' })
  @IsOptional()
  @Matches(/^[1-5](\d\d|xx)$/, { message: 'must be a status such as 429 or a class such as 4xx' })
  status?: string;

  @ApiPropertyOptional({ example: '2026-11-01T00:00:00Z', description: 'Start time at or after (ISO 8601; a date means midnight UTC).' })
  @IsOptional()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ example: '2026-12-01', description: 'Start time before (ISO 8601; a date means midnight UTC).' })
  @IsOptional()
  @IsString()
  to?: string;

  @ApiPropertyOptional({
    type: [String],
    example: ['app:search'],
    description: 'Records whose call carried this tag (`X-Gateway-Tags`); repeated (`tag=a&tag=b`): records carrying every one.',
  })
  @IsOptional()
  // One `tag` in the query string is a string, a repeated one an array.
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? [value] : value))
  @IsArray({ message: 'must be a tag, or repeated tags' })
  @ArrayMaxSize(MAX_TAGS)
  @Matches(TAG_PATTERN, { each: true, message: 'must be a tag: 1 to 64 of A-Z, a-z, 0-9 and . _ : -' })
  tag?: string[];

  @ApiPropertyOptional({ description: 'Records whose request body named this end user (`user`; messages: `metadata.user_id`).' })
  @IsOptional()
  @IsNotEmpty()
  @MaxLength(MAX_END_USER_LENGTH)
  @IsString()
  end_user?: string;
}

export class AuditQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'The name of the admin token (`admin` for ADMIN_TOKEN), `command line (user)`, or `SIGHUP`.' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  actor?: string;

  @ApiPropertyOptional({
    example: 'model.update',
    description:
      'owner.create, owner.budget, owner.budget_terms, owner.limits, owner.alert (actor gateway: a budget alert fired), owner.renew_keys, key.create, key.enable, key.disable, key.renew, key.limits, key.budget, key.delete, upstream.create, upstream.update, upstream.delete, model.create, model.update, model.delete, config.reload',
  })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  action?: string;

  @ApiPropertyOptional({ enum: ['owner', 'key', 'upstream', 'model', 'config', 'session'] })
  @IsOptional()
  @IsIn(['owner', 'key', 'upstream', 'model', 'config', 'session'], { message: 'must be owner, key, upstream, model, config or session' })
  item_kind?: string;

  @ApiPropertyOptional({ description: 'The id of the owner, key, line or model.' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  item_id?: string;

  @ApiPropertyOptional({ example: '2026-11-01T00:00:00Z', description: 'Changes at or after (ISO 8601; a date means midnight UTC).' })
  @IsOptional()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ example: '2026-12-01', description: 'Changes before (ISO 8601; a date means midnight UTC).' })
  @IsOptional()
  @IsString()
  to?: string;
}

export class MinutesQuery {
  @ApiPropertyOptional({ default: 180, minimum: 1, maximum: 1440, description: 'How many minutes back from now.' })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'must be a whole number' })
  @Min(1)
  @Max(1440)
  minutes?: number;

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  model?: string;
}

export class VideoTaskQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ['open', 'settled'], description: '`open`: not settled yet (reserved); `settled`: billed or released.' })
  @IsOptional()
  @IsIn(['open', 'settled'], { message: 'must be open or settled' })
  state?: 'open' | 'settled';

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;
}

export class DailyQuery {
  @ApiProperty({ example: '2026-11-01', description: 'First UTC day (YYYY-MM-DD).' })
  @Matches(DATE, { message: 'must be a date, YYYY-MM-DD' })
  @IsDefined(REQUIRED)
  from!: string;

  @ApiProperty({ example: '2026-11-30', description: 'Last UTC day, included (YYYY-MM-DD); at most 366 days after `from`.' })
  @Matches(DATE, { message: 'must be a date, YYYY-MM-DD' })
  @IsDefined(REQUIRED)
  to!: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  model?: string;

  @ApiPropertyOptional({
    enum: ['model', 'owner', 'tag'],
    default: 'model',
    description:
      '`owner`: one row per day, model and owner. `tag`: one row per day, model and tag, summed from the usage records (at most 31 days, retention permitting): a record counts under each of its tags, so rows of one day and model may add up to more than its calls; records without tags are under `tag: null`.',
  })
  @IsOptional()
  @IsIn(['model', 'owner', 'tag'], { message: 'must be model, owner or tag' })
  group_by?: 'model' | 'owner' | 'tag';
}

export class SpendAuditQuery {
  @ApiPropertyOptional({ description: 'Only this quota owner: its records, its daily totals and its spent amount.' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner?: string;

  @ApiPropertyOptional({
    example: '2026-11-01T00:00:00Z',
    description: 'Records started at or after (ISO 8601; a date means midnight UTC); daily totals from its UTC day.',
  })
  @IsOptional()
  @IsString()
  from?: string;

  @ApiPropertyOptional({ example: '2026-12-01', description: 'Records started before (ISO 8601; a date means midnight UTC); daily totals up to its UTC day.' })
  @IsOptional()
  @IsString()
  to?: string;
}
