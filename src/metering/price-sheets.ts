import { createHash } from 'node:crypto';
import { type Pricing, pricingSpecOf } from '../config/catalog-spec';

/**
 * Price sheets: a model's prices and tiers as a usage record was billed at them, stored once in
 * `price_sheet` under an id made from their content, so records of the same prices share a
 * sheet and a price change makes a new one. The id is worked out once per catalog model (the
 * catalog's model objects live until the next catalog), and the sheets this process has named
 * are kept here until a writer of each database has stored them.
 */

/** A sheet as `price_sheet` holds it. */
export interface PriceSheet {
  id: string;
  /** `PricingSpec` as canonical JSON (keys sorted), what the id is made from. */
  pricing: string;
}

const idsByPricing = new WeakMap<Pricing, string>();
/** Every sheet named in this process, by id; a catalog's few, plus one per price change. */
const sheets = new Map<string, PriceSheet>();

/** The id of the sheet of these prices and tiers. */
export function priceSheetOf(pricing: Pricing): string {
  let id = idsByPricing.get(pricing);
  if (id === undefined) {
    const canonical = canonicalJson(pricingSpecOf(pricing));
    id = createHash('sha256').update(canonical).digest('hex').slice(0, 32);
    if (!sheets.has(id)) sheets.set(id, { id, pricing: canonical });
    idsByPricing.set(pricing, id);
  }
  return id;
}

/** The sheets named in this process that `stored` does not hold yet, for a writer to store. */
export function sheetsToStore(stored: ReadonlySet<string>): PriceSheet[] {
  if (stored.size >= sheets.size) return [];
  return [...sheets.values()].filter((sheet) => !stored.has(sheet.id));
}

/** The sheet named `id` in this process, if any. */
export function namedSheet(id: string): PriceSheet | undefined {
  return sheets.get(id);
}

/** JSON with every object's keys in order, so equal prices always give the same text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/** `INSERT` of sheets, each once whichever replica stored it first. */
export function storeSheetsSql(count: number): string {
  const rows = Array.from({ length: count }, (_, index) => `($${index * 2 + 1}, $${index * 2 + 2}::jsonb)`).join(', ');
  return `INSERT INTO price_sheet (id, pricing) VALUES ${rows} ON CONFLICT (id) DO NOTHING`;
}
