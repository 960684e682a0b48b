import type { ModelConfig, RetryPolicy } from './gateway-config';

/** The largest weight a line may have: enough for any split an operator writes in whole numbers. */
export const MAX_LINE_WEIGHT = 1000;
/** The most retries a model may ask for: each waits, and a client waits for all of them. */
export const MAX_RETRY_ATTEMPTS = 10;

/** What a model's `lines` items say, read into the config tree's fields. */
export type ModelLines = Pick<ModelConfig, 'lines' | 'lineWeights' | 'lineModels'>;

const LINE_ITEM_FIELDS = new Set(['id', 'weight', 'upstream_model']);

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A model's `lines`: each item a line id, or `{ id, weight, upstream_model }`. With a weight on
 * any item, the others weigh 1 and a call's first line is drawn by weight; `upstream_model` names
 * the model on that line where it differs from the model's own. Problems name the item's field
 * under `path` (`models[0].lines[1].weight: …`); without `lineIds` the ids are not looked up.
 */
export function readModelLines(list: unknown, path: string, lineIds: ReadonlySet<string> | undefined, upstreamModel: unknown, problems: string[]): ModelLines {
  const lines: string[] = [];
  const weights: number[] = [];
  const lineModels: Record<string, string> = {};
  let weighted = false;
  if (!Array.isArray(list)) return { lines };
  list.forEach((item, index) => {
    const at = `${path}.lines[${index}]`;
    const entry: Record<string, unknown> = isMapping(item) ? item : { id: item };
    for (const field of Object.keys(entry)) if (!LINE_ITEM_FIELDS.has(field)) problems.push(`${at}.${field}: unknown field`);
    const { id, weight, upstream_model: lineModel } = entry;
    if (typeof id !== 'string' || id === '') {
      problems.push(isMapping(item) ? `${at}.id: must be a non-empty string` : `${at}: must be a line id or a mapping with id, weight, upstream_model`);
      return;
    }
    if (lineIds && !lineIds.has(id)) problems.push(`${at}: unknown upstream "${id}"`);
    if (lines.includes(id)) problems.push(`${at}: line "${id}" is listed twice`);
    lines.push(id);
    if (weight !== undefined && weight !== null) {
      weighted = true;
      if (!Number.isInteger(weight) || (weight as number) < 0 || (weight as number) > MAX_LINE_WEIGHT) {
        problems.push(`${at}.weight: must be a whole number from 0 to ${MAX_LINE_WEIGHT}`);
      }
    }
    weights.push(typeof weight === 'number' ? weight : 1);
    if (lineModel !== undefined && lineModel !== null) {
      if (typeof lineModel !== 'string' || lineModel === '') problems.push(`${at}.upstream_model: must be a non-empty string`);
      else if (lineModel !== upstreamModel) lineModels[id] = lineModel;
    }
  });
  if (weighted && weights.every((weight) => weight === 0)) problems.push(`${path}.lines: at least one line needs a weight above 0`);
  return {
    lines,
    ...(weighted ? { lineWeights: weights } : {}),
    ...(Object.keys(lineModels).length > 0 ? { lineModels } : {}),
  };
}

/** The JSON form of a model's lines: a plain id where the line has neither a weight nor a model of its own. */
export function lineItemsOf(model: ModelLines): Array<string | Record<string, unknown>> {
  return model.lines.map((id, index) => {
    const weight = model.lineWeights?.[index];
    const lineModel = model.lineModels?.[id];
    if (weight === undefined && lineModel === undefined) return id;
    return { id, ...(weight !== undefined ? { weight } : {}), ...(lineModel !== undefined ? { upstream_model: lineModel } : {}) };
  });
}

/** The line ids a model's JSON form names (a plain id or an item's `id`). */
export function lineIdsOfItems(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    const id = isMapping(item) ? item.id : item;
    return typeof id === 'string' ? [id] : [];
  });
}

/** `retry` in the JSON form, only the fields the model sets. */
export function retrySpecOf(retry: RetryPolicy): Record<string, number> {
  return {
    ...(retry.attempts !== undefined ? { attempts: retry.attempts } : {}),
    ...(retry.backoffMs !== undefined ? { backoff_ms: retry.backoffMs } : {}),
    ...(retry.maxBackoffMs !== undefined ? { max_backoff_ms: retry.maxBackoffMs } : {}),
  };
}
