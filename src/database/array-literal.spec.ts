import { arrayLiteral } from './array-literal';

describe(arrayLiteral.name, () => {
  const rows = (...values: unknown[]): unknown[][] => values.map((value) => ['before', value, 'after']);

  it('quotes text, whatever it holds, and escapes only quotes and backslashes', () => {
    expect(arrayLiteral(rows('plain', '', 'NULL', ' spaced ', '{a,b}', 'say "hi"', 'back\\slash', 'tab\tline\n', 'ünï'), 1)).toBe(
      '{"plain","","NULL"," spaced ","{a,b}","say \\"hi\\"","back\\\\slash","tab\tline\n","ünï"}',
    );
  });

  it('writes numbers and booleans bare, null and undefined as NULL, dates in ISO 8601 (UTC)', () => {
    const date = new Date(Date.UTC(2026, 10, 25, 5, 6, 7, 89));
    expect(arrayLiteral(rows(200, -1.5, 12n, true, false, null, undefined, date), 1)).toBe(
      '{200,-1.5,12,t,f,NULL,NULL,"2026-11-25T05:06:07.089Z"}',
    );
  });

  it('reads the given column of every row, and an empty batch as an empty array', () => {
    expect(arrayLiteral(rows('x', 'y'), 0)).toBe('{"before","before"}');
    expect(arrayLiteral(rows('x', 'y'), 2)).toBe('{"after","after"}');
    expect(arrayLiteral([], 0)).toBe('{}');
  });

  it('quotes JSON text and escapes its quotes', () => {
    expect(arrayLiteral(rows(JSON.stringify({ input_tokens: 3, note: 'a "b" \\ c' })), 1)).toBe(
      String.raw`{"{\"input_tokens\":3,\"note\":\"a \\\"b\\\" \\\\ c\"}"}`,
    );
  });
});
