import { ApiExtraModels, ApiProperty, ApiPropertyOptions, ApiPropertyOptional, getSchemaPath, OmitType, PartialType } from '@nestjs/swagger';
import { INTERFACE_NAMES, UPSTREAM_AUTH_STYLES } from '../config/gateway-config';
import { PRICE_FIELD_NAMES } from '../config/prices';
import { MAX_LINE_WEIGHT, MAX_RETRY_ATTEMPTS } from '../config/model-lines';

/**
 * The catalog routes' bodies and answers as OpenAPI schemas. Documentation only: a body is
 * checked by the configuration file's rules (config.loader.ts `parseUpstreamItem`,
 * `parseModelItem`), so the API and the file refuse the same things alike.
 */

const PRICES: ApiPropertyOptions = {
  type: 'object',
  additionalProperties: { oneOf: [{ type: 'string' }, { type: 'number' }] },
  example: { input_tokens: '2.5', output_tokens: '10' },
  description: `Price per figure (${PRICE_FIELD_NAMES.join(', ')}): tokens per 1M, others per unit; answers give exact decimal strings.`,
};

export class PriceTierItem {
  @ApiPropertyOptional({ type: [String], example: ['1080p'], description: 'Resolutions the tier applies to (one string or a list).' }) resolution?: string[];
  @ApiPropertyOptional() video_input?: boolean;
  @ApiPropertyOptional({ minimum: 1 }) max_output_pixels?: number;
  @ApiPropertyOptional({ minimum: 1, example: 200000, description: 'Only calls whose input_tokens figure is above this; the tier prices the whole call.' })
  input_tokens_above?: number;
  @ApiProperty(PRICES) prices!: Record<string, string>;
}

export class UpstreamItem {
  @ApiProperty({ example: 'line-a' }) id!: string;
  @ApiProperty({ example: 'https://api.vendor.example' }) base_url!: string;
  @ApiProperty({
    writeOnly: true,
    example: '${LINE_A_KEY}',
    description: 'A ${VAR} reference each replica resolves, or a literal stored encrypted (needs GATEWAY_SECRET_KEY). Never shown again.',
  })
  api_key!: string;
  @ApiPropertyOptional({ enum: UPSTREAM_AUTH_STYLES }) auth?: string;
  @ApiPropertyOptional({ minimum: 1 }) max_concurrency?: number;
  @ApiPropertyOptional({ minimum: 1, default: 600000 }) timeout_ms?: number;
}

export class LineItem {
  @ApiProperty({ example: 'line-b' }) id!: string;
  @ApiPropertyOptional({ minimum: 0, maximum: MAX_LINE_WEIGHT, default: 1, description: 'Share of first attempts; 0: failover only.' }) weight?: number;
  @ApiPropertyOptional({ example: 'deployment-b', description: "The model's name on this line, over the model's upstream_model." }) upstream_model?: string;
}

export class RetryItem {
  @ApiPropertyOptional({ minimum: 0, maximum: MAX_RETRY_ATTEMPTS, description: 'Retries after every line failed (RETRY_ATTEMPTS when absent).' })
  attempts?: number;
  @ApiPropertyOptional({ minimum: 0, description: "The first retry's back-off ceiling, doubling per retry (RETRY_BACKOFF_MS)." }) backoff_ms?: number;
  @ApiPropertyOptional({ minimum: 0, description: 'The longest wait; a longer Retry-After ends the retries (RETRY_MAX_BACKOFF_MS).' }) max_backoff_ms?: number;
}

@ApiExtraModels(LineItem)
export class ModelItem {
  @ApiProperty({ example: 'text-model-2' }) id!: string;
  @ApiProperty({ example: 'vendor-text-model-2' }) upstream_model!: string;
  @ApiProperty({ enum: INTERFACE_NAMES, isArray: true }) interfaces!: string[];
  @ApiProperty({
    type: 'array',
    items: { oneOf: [{ type: 'string' }, { $ref: getSchemaPath(LineItem) }] },
    example: [
      { id: 'line-a', weight: 3 },
      { id: 'line-b', weight: 1, upstream_model: 'deployment-b' },
    ],
    description: "Line ids or items, in failover order; with weights a call's first line is drawn by weight.",
  })
  lines!: Array<string | LineItem>;
  @ApiPropertyOptional({ type: RetryItem }) retry?: RetryItem;
  @ApiPropertyOptional({ example: { image_input: false } }) capabilities?: { image_input?: boolean };
  @ApiPropertyOptional({ minimum: 1 }) max_tokens?: number;
  @ApiPropertyOptional(PRICES) prices?: Record<string, string>;
  @ApiPropertyOptional({ type: [PriceTierItem] }) price_tiers?: PriceTierItem[];
}

export class UpstreamReplacement extends PartialType(OmitType(UpstreamItem, ['api_key'])) {
  @ApiPropertyOptional({ writeOnly: true, description: 'Absent: the stored key stays.' }) api_key?: string;
  @ApiProperty({ minimum: 1, description: 'The version of the line as read; another one gives 409.' }) version!: number;
}

export class ModelFields extends PartialType(ModelItem) {
  @ApiProperty({ minimum: 1, description: 'The version of the model as read; another one gives 409.' }) version!: number;
}

export class VendorKeyView {
  @ApiProperty() set!: boolean;
  @ApiProperty({ type: String, nullable: true, example: 'x9Qz' }) last4!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '${LINE_A_KEY}' }) reference!: string | null;
}

export class UpstreamView extends OmitType(UpstreamItem, ['api_key']) {
  @ApiProperty({ type: VendorKeyView }) api_key!: VendorKeyView;
  @ApiProperty({ enum: ['config', 'admin'] }) source!: string;
  @ApiProperty({ minimum: 1 }) version!: number;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export class ModelView extends ModelItem {
  @ApiProperty({ enum: ['config', 'admin'] }) source!: string;
  @ApiProperty({ minimum: 1 }) version!: number;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export class UpstreamList {
  @ApiProperty({ type: [UpstreamView] }) data!: UpstreamView[];
}

export class ModelList {
  @ApiProperty({ type: [ModelView] }) data!: ModelView[];
}

export class ReloadView {
  @ApiProperty() upstreams!: number;
  @ApiProperty() models!: number;
  @ApiProperty() owners!: number;
  @ApiProperty() keys!: number;
}

export class AuditEntryView {
  @ApiProperty({ example: '42' }) id!: string;
  @ApiProperty() at!: string;
  @ApiProperty({ example: 'alice', description: 'The admin token\'s name, "command line (<user>)", "SIGHUP", or "gateway" (a budget alert fired).' })
  actor!: string;
  @ApiProperty({ example: 'model.update' }) action!: string;
  @ApiProperty({ enum: ['owner', 'key', 'upstream', 'model', 'config', 'session'] }) item_kind!: string;
  @ApiProperty({ type: String, nullable: true }) item_id!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'The item before, as the admin API shows it.' }) before!: unknown;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, description: 'The item after, as the admin API shows it.' }) after!: unknown;
}

export class AuditPage {
  @ApiProperty({ type: [AuditEntryView] }) data!: AuditEntryView[];
  @ApiProperty({ type: String, nullable: true }) next!: string | null;
}
