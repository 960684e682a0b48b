import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
  ValidationArguments,
  ValidationOptions,
} from 'class-validator';
import { INTERFACE_NAMES, OwnerKind, UPSTREAM_AUTH_STYLES } from './gateway-config';
import { MAX_RETRY_ATTEMPTS } from './model-lines';

/**
 * The YAML file exactly as written (DESIGN.md section 3, snake_case). Messages are bare
 * ("must be ...") because the loader prefixes each with the YAML path of the field.
 * Rules that need more than one field (references, duplicates, money) live in the loader.
 * The loader validates with stopAtFirstError, and the bottom decorator of a field runs first,
 * so `@IsDefined` and then the type check (`@IsArray`) sit at the bottom to be the one reported for a wrong type.
 */

export const OWNER_KINDS: readonly OwnerKind[] = ['project', 'member'];

const REQUIRED = { message: 'is required' };
const NON_EMPTY_STRING = { message: 'must be a non-empty string' };
const POSITIVE_INTEGER = { message: 'must be a positive integer' };
const BOOLEAN = { message: 'must be true or false' };
const LIST = { message: 'must be a list' };
const NON_EMPTY_LIST = { message: 'must not be empty' };
const MAPPING = { message: 'must be a mapping' };
const EACH_NON_EMPTY_STRING = { each: true, message: 'must list non-empty strings' };

/** Names the entries that are not allowed, which a fixed message could not. */
function oneOf(allowed: readonly string[], what: string) {
  return (args: ValidationArguments): string => {
    const values: unknown[] = Array.isArray(args.value) ? args.value : [args.value];
    const unknown = values.filter((value) => !allowed.includes(value as string));
    const listed = unknown.map((value) => JSON.stringify(value)).join(', ');
    return `unknown ${what} ${listed} (expected one of: ${allowed.join(', ')})`;
  };
}

/** A non-empty string, or a non-empty list of non-empty strings (`resolution: 1080p` or `resolution: [720p, 1080p]`). */
function IsStringOrStringList(validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStringOrStringList',
      validator: {
        validate: (value: unknown): boolean => isNonEmptyString(value) || (Array.isArray(value) && value.length > 0 && value.every(isNonEmptyString)),
        defaultMessage: (args?: ValidationArguments): string => {
          const value: unknown = args?.value;
          if (Array.isArray(value)) return value.length === 0 ? NON_EMPTY_LIST.message : EACH_NON_EMPTY_STRING.message;
          return 'must be a non-empty string or a list of non-empty strings';
        },
      },
    },
    validationOptions,
  );
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

export class UpstreamConfigDto {
  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  id!: string;

  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  base_url!: string;

  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  api_key!: string;

  @IsOptional()
  @IsIn(UPSTREAM_AUTH_STYLES, { message: oneOf(UPSTREAM_AUTH_STYLES, 'auth style') })
  auth?: string;

  @IsOptional()
  @IsInt(POSITIVE_INTEGER)
  @Min(1, POSITIVE_INTEGER)
  max_concurrency?: number;

  @IsOptional()
  @IsInt(POSITIVE_INTEGER)
  @Min(1, POSITIVE_INTEGER)
  timeout_ms?: number;
}

export class CapabilitiesConfigDto {
  @IsOptional()
  @IsBoolean(BOOLEAN)
  image_input?: boolean;
}

/** One entry of `models[].price_tiers`; the loader checks the prices and that the tier names a condition. */
export class PriceTierConfigDto {
  /** One resolution or a list of them, matched case-insensitively; absent = any resolution. */
  @IsOptional()
  @IsStringOrStringList()
  resolution?: string | string[];

  /** true: only calls with video input; false: only calls without; absent: either. */
  @IsOptional()
  @IsBoolean(BOOLEAN)
  video_input?: boolean;

  /** Only output images of at most this many pixels (width × height, format B `data[].size`). */
  @IsOptional()
  @IsInt(POSITIVE_INTEGER)
  @Min(1, POSITIVE_INTEGER)
  max_output_pixels?: number;

  /** Only calls whose `input_tokens` figure is above this many tokens; the tier prices the whole call. */
  @IsOptional()
  @IsInt(POSITIVE_INTEGER)
  @Min(1, POSITIVE_INTEGER)
  input_tokens_above?: number;

  /** Figure name to price, over the model's own prices; checked by the loader like `prices`. */
  @IsObject(MAPPING)
  @IsDefined(REQUIRED)
  prices!: Record<string, unknown>;
}

const RETRY_ATTEMPTS = { message: `must be a whole number from 0 to ${MAX_RETRY_ATTEMPTS}` };
const MILLISECONDS = { message: 'must be a whole number of milliseconds, at least 0' };

/** `models[].retry`; a field left out takes the RETRY_* setting. */
export class RetryConfigDto {
  @IsOptional()
  @IsInt(RETRY_ATTEMPTS)
  @Min(0, RETRY_ATTEMPTS)
  @Max(MAX_RETRY_ATTEMPTS, RETRY_ATTEMPTS)
  attempts?: number;

  @IsOptional()
  @IsInt(MILLISECONDS)
  @Min(0, MILLISECONDS)
  backoff_ms?: number;

  @IsOptional()
  @IsInt(MILLISECONDS)
  @Min(0, MILLISECONDS)
  max_backoff_ms?: number;
}

export class ModelConfigDto {
  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  id!: string;

  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  upstream_model!: string;

  @IsIn(INTERFACE_NAMES, { each: true, message: oneOf(INTERFACE_NAMES, 'interface') })
  @ArrayNotEmpty(NON_EMPTY_LIST)
  @IsArray(LIST)
  @IsDefined(REQUIRED)
  interfaces!: string[];

  /** Line ids or `{ id, weight, upstream_model }` items; the loader checks each (model-lines.ts). */
  @ArrayNotEmpty(NON_EMPTY_LIST)
  @IsArray(LIST)
  @IsDefined(REQUIRED)
  lines!: unknown[];

  @IsOptional()
  @IsObject(MAPPING)
  @ValidateNested(MAPPING)
  @Type(() => RetryConfigDto)
  retry?: RetryConfigDto;

  @IsOptional()
  @IsObject(MAPPING)
  @ValidateNested(MAPPING)
  @Type(() => CapabilitiesConfigDto)
  capabilities?: CapabilitiesConfigDto;

  @IsOptional()
  @IsInt(POSITIVE_INTEGER)
  @Min(1, POSITIVE_INTEGER)
  max_tokens?: number;

  /** Figure name to price; names, amounts and that an interface meters each are checked by the loader. */
  @IsOptional()
  @IsObject(MAPPING)
  prices?: Record<string, unknown>;

  /** Tried in order; the first that matches a call replaces the prices it names. */
  @IsOptional()
  @IsArray(LIST)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => PriceTierConfigDto)
  price_tiers?: PriceTierConfigDto[];
}

export class OwnerConfigDto {
  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  id!: string;

  @IsIn(OWNER_KINDS, { message: oneOf(OWNER_KINDS, 'owner kind') })
  @IsDefined(REQUIRED)
  kind!: string;

  /** Currency units; the loader converts it exactly (money.ts). */
  @IsOptional()
  budget?: unknown;

  /** requests_per_minute, tokens_per_minute, concurrent_requests; the loader checks them (rate-limits.ts). */
  @IsOptional()
  limits?: unknown;

  /** day, week or month: the budget starts again each period; the loader checks these three (budgets.ts). */
  @IsOptional()
  budget_period?: unknown;

  @IsOptional()
  budget_timezone?: unknown;

  /** Per cent thresholds of the budget at which an alert fires. */
  @IsOptional()
  alerts?: unknown;
}

export class KeyConfigDto {
  @IsOptional()
  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  key?: string;

  @IsOptional()
  @IsString({ message: 'must be 64 hexadecimal characters' })
  @Matches(/^[0-9a-fA-F]{64}$/, { message: 'must be 64 hexadecimal characters' })
  key_sha256?: string;

  @IsString(NON_EMPTY_STRING)
  @IsNotEmpty(NON_EMPTY_STRING)
  @IsDefined(REQUIRED)
  owner!: string;

  @IsNotEmpty(EACH_NON_EMPTY_STRING)
  @IsString(EACH_NON_EMPTY_STRING)
  @ArrayNotEmpty(NON_EMPTY_LIST)
  @IsArray(LIST)
  @IsDefined(REQUIRED)
  models!: string[];

  @IsOptional()
  @IsBoolean(BOOLEAN)
  enabled?: boolean;

  /** The loader checks the ISO 8601 form, along with the zone it requires. */
  @IsOptional()
  @IsString({ message: 'must be an ISO 8601 date-time, e.g. 2027-01-01T00:00:00Z' })
  expires_at?: string;

  /** As an owner's limits, for this key alone. */
  @IsOptional()
  limits?: unknown;

  /** The key's own budget in currency units, in its owner's period, within the owner's budget. */
  @IsOptional()
  budget?: unknown;
}

export class GatewayConfigDto {
  @IsOptional()
  @IsArray(LIST)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => UpstreamConfigDto)
  upstreams?: UpstreamConfigDto[];

  @IsOptional()
  @IsArray(LIST)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => ModelConfigDto)
  models?: ModelConfigDto[];

  @IsOptional()
  @IsArray(LIST)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => OwnerConfigDto)
  owners?: OwnerConfigDto[];

  @IsOptional()
  @IsArray(LIST)
  @ValidateNested({ each: true, ...MAPPING })
  @Type(() => KeyConfigDto)
  keys?: KeyConfigDto[];
}
