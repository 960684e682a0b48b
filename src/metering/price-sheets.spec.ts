import { pricingOf, type PricingSpec } from '../config/catalog-spec';
import { namedSheet, priceSheetOf, sheetsToStore, storeSheetsSql } from './price-sheets';

const SPEC: PricingSpec = {
  prices: { input_tokens: '3', output_tokens: '15' },
  price_tiers: [{ input_tokens_above: 200000, prices: { input_tokens: '6', output_tokens: '22.5' } }],
};

describe('price sheets', () => {
  it('names equal prices by one id, whatever the order of their names', () => {
    const reordered = pricingOf({ prices: { output_tokens: '15', input_tokens: '3' }, price_tiers: SPEC.price_tiers });

    expect(priceSheetOf(pricingOf(SPEC))).toMatch(/^[0-9a-f]{32}$/);
    expect(priceSheetOf(reordered)).toBe(priceSheetOf(pricingOf(SPEC)));
  });

  it('names changed prices or tiers by another id', () => {
    const id = priceSheetOf(pricingOf(SPEC));

    expect(priceSheetOf(pricingOf({ ...SPEC, prices: { ...SPEC.prices, output_tokens: '15.000000001' } }))).not.toBe(id);
    expect(priceSheetOf(pricingOf({ ...SPEC, price_tiers: [{ ...SPEC.price_tiers[0], input_tokens_above: 200001 }] }))).not.toBe(id);
    expect(priceSheetOf(pricingOf({ ...SPEC, price_tiers: [] }))).not.toBe(id);
  });

  it('keeps what the id was made of, which reads back to the same prices', () => {
    const pricing = pricingOf(SPEC);
    const sheet = namedSheet(priceSheetOf(pricing))!;

    expect(pricingOf(JSON.parse(sheet.pricing) as PricingSpec)).toEqual(pricing);
  });

  it('gives a writer the sheets its database does not hold yet', () => {
    const first = priceSheetOf(pricingOf({ prices: { input_tokens: '1.25' }, price_tiers: [] }));
    const all = sheetsToStore(new Set());
    const stored = new Set(all.map((sheet) => sheet.id));

    expect(all.map((sheet) => sheet.id)).toContain(first);
    expect(sheetsToStore(stored)).toEqual([]);
    const second = priceSheetOf(pricingOf({ prices: { input_tokens: '1.5' }, price_tiers: [] }));
    expect(sheetsToStore(stored).map((sheet) => sheet.id)).toEqual([second]);
  });

  it('stores sheets with one statement that skips the ones stored already', () => {
    expect(storeSheetsSql(2)).toBe('INSERT INTO price_sheet (id, pricing) VALUES ($1, $2::jsonb), ($3, $4::jsonb) ON CONFLICT (id) DO NOTHING');
  });
});
