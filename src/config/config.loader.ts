import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { isISO8601, ValidationError, validateSync } from 'class-validator';
import { parseDocument, YAMLError } from 'yaml';
import { GatewayConfigDto, KeyConfigDto, ModelConfigDto, OwnerConfigDto, PriceTierConfigDto, RetryConfigDto, UpstreamConfigDto } from './config.dto';
import { parseRateLimits } from './rate-limits';
import { parseBudgetTerms } from './budgets';
import type { GatewayConfig, KeyConfig, ModelConfig, OwnerConfig, PriceTable, PriceTier, RetryPolicy, UpstreamConfig } from './gateway-config';
import { readModelLines } from './model-lines';
import { INTERFACE_NAMES, InterfaceName, OwnerKind, UpstreamAuthStyle } from './gateway-config';
import { decimalToNano } from './money';
import { isPriceFieldName, PRICE_FIELD_NAMES, PriceFieldName } from './prices';
import { meteredFiguresOf, pricesUsedBy } from './metered-figures';

const DEFAULT_TIMEOUT_MS = 600_000;
export const DISPLAY_PREFIX_LENGTH = 8;
const ALL_MODELS = '*';
const ENVIRONMENT_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** A date alone, or a date-time with an explicit zone: a zone-less time would depend on each replica's clock zone. */
const ZONED_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T.*(Z|[+-]\d{2}(:?\d{2})?))?$/i;

/** Everything wrong with a configuration file, one problem per entry, each naming its YAML path. */
export class ConfigError extends Error {
  readonly problems: string[];

  constructor(problems: string[], source = 'gateway configuration') {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(`Invalid ${source} (${count}):\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function loadGatewayConfigFile(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([`cannot read ${path}: ${(error as Error).message}`], path);
  }
  try {
    return loadGatewayConfig(text, env);
  } catch (error) {
    throw error instanceof ConfigError ? new ConfigError(error.problems, path) : error;
  }
}

/** Parses, interpolates `${VAR}`, validates and converts; throws one ConfigError listing every problem. */
export function loadGatewayConfig(yamlText: string, env: NodeJS.ProcessEnv): GatewayConfig {
  const parsed = parseYaml(yamlText);
  const problems: string[] = [];
  const interpolated = interpolateEnvironment(parsed ?? {}, env, '', problems);
  if (!isMapping(interpolated)) {
    throw new ConfigError(['(root): must be a mapping with upstreams, models, owners and keys']);
  }
  const dto = plainToInstance(GatewayConfigDto, interpolated);
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true });
  problems.push(...flattenValidationErrors(errors, ''), ...checkConfig(dto));
  if (problems.length > 0) {
    throw new ConfigError(problems);
  }
  return toGatewayConfig(dto);
}

function parseYaml(yamlText: string): unknown {
  const document = parseDocument(yamlText);
  if (document.errors.length > 0) {
    throw new ConfigError(document.errors.map(describeYamlError));
  }
  return document.toJS();
}

/** `line 3, column 5: Map keys must be unique`, without the multi-line source excerpt yaml appends. */
function describeYamlError(error: YAMLError): string {
  const message = error.message.split('\n')[0].replace(/ at line \d+, column \d+:$/, '');
  const position = error.linePos?.[0];
  return position ? `line ${position.line}, column ${position.col}: ${message}` : `YAML: ${message}`;
}

/** Substitutes in parsed string values only, so a variable's content is never read as YAML. */
function interpolateEnvironment(value: unknown, env: NodeJS.ProcessEnv, path: string, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(ENVIRONMENT_REFERENCE, (reference, name: string) => {
      const replacement = env[name];
      if (replacement === undefined) {
        problems.push(`${path}: environment variable ${name} is not set`);
        return reference;
      }
      return replacement;
    });
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => interpolateEnvironment(item, env, joinPath(path, index), problems));
  }
  if (isMapping(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolateEnvironment(item, env, joinPath(path, key), problems)]));
  }
  return value;
}

function flattenValidationErrors(errors: ValidationError[], parentPath: string): string[] {
  return errors.flatMap((error) => {
    const path = joinPath(parentPath, error.property);
    const own = Object.entries(error.constraints ?? {}).map(
      ([constraint, message]) => `${path}: ${constraint === 'whitelistValidation' ? 'unknown field' : message}`,
    );
    return [...own, ...flattenValidationErrors(error.children ?? [], path)];
  });
}

/** Rules across fields and sections; tolerant of values the DTO validation already reported. */
function checkConfig(dto: GatewayConfigDto): string[] {
  const problems: string[] = [];
  const upstreams = entriesOf(dto.upstreams, 'upstreams', problems);
  const models = entriesOf(dto.models, 'models', problems);
  const owners = entriesOf(dto.owners, 'owners', problems);
  const upstreamIds = checkUniqueIds(upstreams, problems);
  const modelIds = checkUniqueIds(models, problems);
  const ownerIds = checkUniqueIds(owners, problems);
  upstreams.forEach((entry) => checkUpstream(entry, problems));
  models.forEach((entry) => checkModel(entry, upstreamIds, problems));
  owners.forEach(({ item, path }) => checkMoney(item.budget, `${path}.budget`, problems));
  owners.forEach(({ item, path }) => parseRateLimits(item.limits, `${path}.limits`, problems));
  owners.forEach(({ item, path }) => parseBudgetTerms(item, path, problems));
  const keys = entriesOf(dto.keys, 'keys', problems);
  checkKeys(keys, ownerIds, modelIds, problems);
  keys.forEach(({ item, path }) => parseRateLimits(item.limits, `${path}.limits`, problems));
  keys.forEach(({ item, path }) => checkMoney(item.budget, `${path}.budget`, problems));
  return problems;
}

interface Entry<T> {
  item: T;
  path: string;
}

/**
 * The mapping entries of a list with their YAML paths. A list inside the list is reported here:
 * class-validator walks into it instead of rejecting it (and passes an empty one); other
 * non-mapping entries were already reported by the DTO validation.
 */
function entriesOf<T extends object>(list: T[] | undefined, section: string, problems: string[]): Entry<T>[] {
  if (!Array.isArray(list)) {
    return [];
  }
  return list.flatMap((item: unknown, index) => {
    if (Array.isArray(item)) problems.push(`${joinPath(section, index)}: must be a mapping`);
    return isMapping(item) ? [{ item: item as T, path: joinPath(section, index) }] : [];
  });
}

function checkUniqueIds(entries: Entry<{ id: unknown }>[], problems: string[]): Set<string> {
  const firstPaths = new Map<string, string>();
  for (const { item, path } of entries) {
    if (typeof item.id !== 'string') continue;
    const firstPath = firstPaths.get(item.id);
    if (firstPath === undefined) {
      firstPaths.set(item.id, path);
    } else {
      problems.push(`${path}.id: duplicate id "${item.id}" (also at ${firstPath})`);
    }
  }
  return new Set(firstPaths.keys());
}

function checkUpstream({ item, path }: Entry<UpstreamConfigDto>, problems: string[]): void {
  if (typeof item.base_url === 'string' && item.base_url !== '') {
    const problem = baseUrlProblem(item.base_url);
    if (problem) problems.push(`${path}.base_url: ${problem}`);
  }
}

function baseUrlProblem(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return `"${baseUrl}" is not a URL`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.pathname !== '/' || url.search || url.hash) return 'must be the provider root, without a path';
  if (url.username || url.password) return 'must not hold credentials (use api_key)';
  return undefined;
}

function checkModel({ item, path }: Entry<ModelConfigDto>, upstreamIds: ReadonlySet<string>, problems: string[]): void {
  if (item.id === ALL_MODELS) {
    problems.push(`${path}.id: "${ALL_MODELS}" is reserved for "all models" in key scopes`);
  }
  readModelLines(item.lines, path, upstreamIds, item.upstream_model, problems);
  const metering = meteringOf(item.interfaces);
  checkPrices(item.prices, `${path}.prices`, metering, problems);
  entriesOf(item.price_tiers, `${path}.price_tiers`, problems).forEach((tier) => checkPriceTier(tier, metering, problems));
}

/** What a model's calls are metered by and which prices they can use. */
interface Metering {
  interfaces: InterfaceName[];
  metered: PriceFieldName[];
  usable: Set<string>;
}

/** Undefined when the interfaces are not a list of known names, which was already reported. */
function meteringOf(interfaces: unknown): Metering | undefined {
  if (!Array.isArray(interfaces) || interfaces.length === 0) return undefined;
  if (!interfaces.every((name) => (INTERFACE_NAMES as readonly unknown[]).includes(name))) return undefined;
  const metered = meteredFiguresOf(interfaces as InterfaceName[]);
  return { interfaces: interfaces as InterfaceName[], metered, usable: pricesUsedBy(metered) };
}

function checkPriceTier({ item, path }: Entry<PriceTierConfigDto>, metering: Metering | undefined, problems: string[]): void {
  // A tier without a condition would match every call and hide the model's own prices.
  if (!isGiven(item.resolution) && !isGiven(item.video_input) && !isGiven(item.max_output_pixels) && !isGiven(item.input_tokens_above)) {
    problems.push(`${path}: must name resolution, video_input, max_output_pixels or input_tokens_above`);
  }
  // A threshold on a figure the model never meters would silently never apply.
  if (isGiven(item.input_tokens_above) && metering && !metering.metered.includes('input_tokens')) {
    problems.push(`${path}.input_tokens_above: the model's interfaces (${metering.interfaces.join(', ')}) do not meter input_tokens`);
  }
  checkPrices(item.prices, `${path}.prices`, metering, problems);
}

/**
 * Names and amounts of a price mapping; a value that is not a mapping was already reported.
 * A price no interface of the model meters would bill nothing, silently, so it is refused.
 */
function checkPrices(prices: unknown, path: string, metering: Metering | undefined, problems: string[]): void {
  if (!isMapping(prices)) return;
  for (const [name, price] of Object.entries(prices)) {
    const pricePath = `${path}.${name}`;
    if (!isPriceFieldName(name)) {
      problems.push(`${pricePath}: unknown price "${name}" (expected one of: ${PRICE_FIELD_NAMES.join(', ')})`);
    } else if (metering && isGiven(price) && !metering.usable.has(name)) {
      const interfaces = metering.interfaces.join(', ');
      const metered = metering.metered.join(', ');
      problems.push(`${pricePath}: the model's interfaces (${interfaces}) do not meter ${name}, so it would never be billed; they meter: ${metered}`);
    } else {
      checkMoney(price, pricePath, problems);
    }
  }
}

function checkKeys(keys: Entry<KeyConfigDto>[], ownerIds: Set<string>, modelIds: Set<string>, problems: string[]): void {
  const pathsBySha256 = new Map<string, string>();
  for (const { item, path } of keys) {
    if (typeof item.owner === 'string' && !ownerIds.has(item.owner)) {
      problems.push(`${path}.owner: unknown owner "${item.owner}"`);
    }
    stringsOf(item.models).forEach(({ value, index }) => {
      if (value !== ALL_MODELS && !modelIds.has(value)) problems.push(`${path}.models[${index}]: unknown model "${value}"`);
    });
    if (typeof item.expires_at === 'string' && !isZonedDate(item.expires_at)) {
      problems.push(`${path}.expires_at: must be an ISO 8601 date or date-time with a zone, e.g. 2027-01-01T00:00:00Z`);
    }
    if (isGiven(item.key) === isGiven(item.key_sha256)) {
      problems.push(`${path}: give exactly one of key and key_sha256`);
      continue;
    }
    const sha256 = sha256Of(item);
    const firstPath = pathsBySha256.get(sha256);
    if (firstPath) problems.push(`${path}: same key as ${firstPath}`);
    else pathsBySha256.set(sha256, path);
  }
}

function checkMoney(value: unknown, path: string, problems: string[]): void {
  if (!isGiven(value)) return;
  if (typeof value !== 'number' && typeof value !== 'string') {
    problems.push(`${path}: must be a decimal amount`);
    return;
  }
  try {
    decimalToNano(value, path);
  } catch (error) {
    problems.push((error as Error).message);
  }
}

/** An ISO 8601 date (midnight UTC) or date-time with a zone: the forms a key expiry may take. */
export function isZonedDate(text: string): boolean {
  return isISO8601(text, { strict: true }) && ZONED_DATE_TIME.test(text) && !Number.isNaN(Date.parse(text));
}

/** A checked catalog item, or every problem with it (each naming its field from the given path). */
export type ItemResult<T> = { ok: T; problems?: undefined } | { ok?: undefined; problems: string[] };

/**
 * One `upstreams` item in its JSON form (an admin API body, a stored row), checked by the
 * file's rules. `api_key` must be present: callers give the resolved key or a placeholder.
 */
export function parseUpstreamItem(plain: unknown, path = ''): ItemResult<UpstreamConfig> {
  const problems: string[] = [];
  const dto = validatedItem(UpstreamConfigDto, plain, path, problems);
  if (dto) checkUpstream({ item: dto, path }, problems);
  return dto && problems.length === 0 ? { ok: toUpstreamConfig(dto) } : { problems: relative(problems) };
}

/** One `models` item in its JSON form, checked by the file's rules against the lines that exist. */
export function parseModelItem(plain: unknown, lineIds: ReadonlySet<string>, path = ''): ItemResult<ModelConfig> {
  const problems: string[] = [];
  const dto = validatedItem(ModelConfigDto, plain, path, problems);
  if (dto) checkModel({ item: dto, path }, lineIds, problems);
  return dto && problems.length === 0 ? { ok: toModelConfig(dto, path) } : { problems: relative(problems) };
}

/** Field paths of an item checked on its own start at its fields (`prices.input_tokens`, not `.prices...`). */
function relative(problems: string[]): string[] {
  return problems.map((problem) => (problem.startsWith('.') ? problem.slice(1) : problem));
}

function validatedItem<T extends object>(type: new () => T, plain: unknown, path: string, problems: string[]): T | undefined {
  if (!isMapping(plain)) {
    problems.push(`${path || '(body)'}: must be a JSON object`);
    return undefined;
  }
  const dto = plainToInstance(type, plain);
  problems.push(...flattenValidationErrors(validateSync(dto, { whitelist: true, forbidNonWhitelisted: true, stopAtFirstError: true }), path));
  return dto;
}

function toGatewayConfig(dto: GatewayConfigDto): GatewayConfig {
  return {
    upstreams: (dto.upstreams ?? []).map(toUpstreamConfig),
    models: (dto.models ?? []).map((model, index) => toModelConfig(model, `models[${index}]`)),
    owners: (dto.owners ?? []).map(toOwnerConfig),
    keys: (dto.keys ?? []).map(toKeyConfig),
  };
}

function toUpstreamConfig(upstream: UpstreamConfigDto): UpstreamConfig {
  return {
    id: upstream.id,
    baseUrl: new URL(upstream.base_url).origin,
    apiKey: upstream.api_key,
    auth: (upstream.auth ?? undefined) as UpstreamAuthStyle | undefined,
    maxConcurrency: upstream.max_concurrency ?? undefined,
    timeoutMs: upstream.timeout_ms ?? DEFAULT_TIMEOUT_MS,
  };
}

function toModelConfig(model: ModelConfigDto, path: string): ModelConfig {
  return {
    id: model.id,
    upstreamModel: model.upstream_model,
    interfaces: model.interfaces as InterfaceName[],
    // Checked by checkModel before the conversion.
    ...readModelLines(model.lines, path, undefined, model.upstream_model, []),
    ...(model.retry ? { retry: toRetryPolicy(model.retry) } : {}),
    capabilities: { imageInput: model.capabilities?.image_input ?? false },
    maxTokens: model.max_tokens ?? undefined,
    prices: toPriceTable(model.prices, joinPath(path, 'prices')),
    priceTiers: (model.price_tiers ?? []).map((tier, tierIndex) => toPriceTier(tier, `${joinPath(path, 'price_tiers')}[${tierIndex}]`)),
  };
}

function toRetryPolicy(retry: RetryConfigDto): RetryPolicy {
  return {
    ...(isGiven(retry.attempts) ? { attempts: retry.attempts } : {}),
    ...(isGiven(retry.backoff_ms) ? { backoffMs: retry.backoff_ms } : {}),
    ...(isGiven(retry.max_backoff_ms) ? { maxBackoffMs: retry.max_backoff_ms } : {}),
  };
}

function toPriceTier(tier: PriceTierConfigDto, path: string): PriceTier {
  const priceTier: PriceTier = { prices: toPriceTable(tier.prices, `${path}.prices`) };
  if (isGiven(tier.resolution)) {
    const resolutions = Array.isArray(tier.resolution) ? tier.resolution : [tier.resolution];
    priceTier.resolutions = resolutions.map((resolution) => resolution.toLowerCase());
  }
  if (isGiven(tier.video_input)) {
    priceTier.videoInput = tier.video_input;
  }
  if (isGiven(tier.max_output_pixels)) {
    priceTier.maxOutputPixels = tier.max_output_pixels;
  }
  if (isGiven(tier.input_tokens_above)) {
    priceTier.inputTokensAbove = tier.input_tokens_above;
  }
  return priceTier;
}

/** Exact nano-unit prices; a figure written without a value (`input_tokens:`) is absent. */
function toPriceTable(prices: Record<string, unknown> | null | undefined, path: string): PriceTable {
  const table: PriceTable = {};
  for (const [name, price] of Object.entries(prices ?? {})) {
    if (!isGiven(price)) continue;
    table[name] = decimalToNano(price as number | string, `${path}.${name}`);
  }
  return table;
}

function toOwnerConfig(owner: OwnerConfigDto, index: number): OwnerConfig {
  const budget = owner.budget as number | string | null | undefined;
  return {
    id: owner.id,
    kind: owner.kind as OwnerKind,
    budgetNano: isGiven(budget) ? decimalToNano(budget, `owners[${index}].budget`) : undefined,
    limits: parseRateLimits(owner.limits, `owners[${index}].limits`, []),
    terms: parseBudgetTerms(owner, `owners[${index}]`, []),
  };
}

function toKeyConfig(key: KeyConfigDto, index: number): KeyConfig {
  return {
    keySha256: sha256Of(key),
    displayPrefix: isGiven(key.key) ? key.key.slice(0, DISPLAY_PREFIX_LENGTH) : `sha256:${sha256Of(key).slice(0, DISPLAY_PREFIX_LENGTH)}`,
    owner: key.owner,
    models: key.models,
    enabled: key.enabled ?? true,
    expiresAt: isGiven(key.expires_at) ? new Date(key.expires_at) : undefined,
    limits: parseRateLimits(key.limits, `keys[${index}].limits`, []),
    budgetNano: isGiven(key.budget) ? decimalToNano(key.budget as number | string, `keys[${index}].budget`) : undefined,
  };
}

function sha256Of(key: KeyConfigDto): string {
  if (typeof key.key === 'string') {
    return createHash('sha256').update(key.key).digest('hex');
  }
  return String(key.key_sha256).toLowerCase();
}

function stringsOf(list: unknown): { value: string; index: number }[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((value, index) => (typeof value === 'string' && value !== '' ? [{ value, index }] : []));
}

/** YAML `field:` with no value reads as null; like class-validator's @IsOptional, treat it as absent. */
function isGiven<T>(value: T | null | undefined): value is T {
  return value !== undefined && value !== null;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function joinPath(parent: string, key: string | number): string {
  if (typeof key === 'number' || /^\d+$/.test(key)) return `${parent}[${key}]`;
  return parent ? `${parent}.${key}` : key;
}
