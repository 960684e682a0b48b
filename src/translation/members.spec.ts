import { definedOnly, mergeDefined, presentOnly } from './members';

describe(definedOnly.name, () => {
  it('drops undefined members only, keeping the order and the falsy values', () => {
    const copy = definedOnly({ b: 1, a: undefined, c: null, d: 0, e: '', f: false });
    expect(copy).toEqual({ b: 1, c: null, d: 0, e: '', f: false });
    expect(Object.keys(copy)).toEqual(['b', 'c', 'd', 'e', 'f']);
    expect('a' in copy).toBe(false);
  });

  it('copies: the object given is left as it was', () => {
    const value = { a: 1, b: undefined };
    const copy = definedOnly(value);
    copy.a = 2;
    expect(value).toEqual({ a: 1, b: undefined });
    expect('b' in value).toBe(true);
  });

  it('takes own members only', () => {
    const inherited = Object.create({ inheritedMember: 1 }) as Record<string, unknown>;
    inherited.own = 2;
    expect(definedOnly(inherited)).toEqual({ own: 2 });
  });
});

describe(presentOnly.name, () => {
  it('drops null and undefined members, keeping the order and 0', () => {
    const copy = presentOnly({
      input_tokens: 12,
      cache_read_input_tokens: null,
      output_tokens: 0,
      cache_creation_input_tokens: undefined,
      service_tier: 'standard',
    });
    expect(Object.entries(copy)).toEqual([
      ['input_tokens', 12],
      ['output_tokens', 0],
      ['service_tier', 'standard'],
    ]);
  });
});

describe(mergeDefined.name, () => {
  it('writes the members of the update that are not undefined over the known ones, in a copy', () => {
    const known = { inputTokens: 12, outputTokens: 1, cachedInputTokens: 3 };
    const merged = mergeDefined<Record<string, number | undefined>>(known, { outputTokens: 20, cachedInputTokens: undefined, reasoningTokens: 0 });
    expect(Object.entries(merged)).toEqual([
      ['inputTokens', 12],
      ['outputTokens', 20],
      ['cachedInputTokens', 3],
      ['reasoningTokens', 0],
    ]);
    expect(known).toEqual({ inputTokens: 12, outputTokens: 1, cachedInputTokens: 3 });
  });
});
