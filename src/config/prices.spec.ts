import { isPriceFieldName, PRICE_FIELD_NAMES, priceUnitOf } from './prices';

describe(priceUnitOf.name, () => {
  it('prices speech characters per million, like tokens', () => {
    expect(priceUnitOf('input_characters')).toBe('per_million_tokens');
    expect(PRICE_FIELD_NAMES).toContain('input_characters');
  });

  it.each([
    ['input_tokens', 'per_million_tokens'],
    ['cache_write_5m_input_tokens', 'per_million_tokens'],
    ['cache_write_1h_input_tokens', 'per_million_tokens'],
    ['output_image_tokens', 'per_million_tokens'],
    ['thinking_tokens', 'per_million_tokens'],
    ['output_images', 'per_unit'],
    ['input_images', 'per_unit'],
    ['output_seconds', 'per_unit'],
  ])('prices %s %s', (name, unit) => {
    expect(priceUnitOf(name)).toBe(unit);
  });

  it.each(['input_character', 'characters', 'constructor', 'toString', '__proto__', ''])('knows no figure %j', (name) => {
    expect(priceUnitOf(name)).toBeUndefined();
    expect(isPriceFieldName(name)).toBe(false);
  });
});
