import { decimalToNano, nanoToDecimal, nanoToNumber } from './money';

describe(decimalToNano.name, () => {
  it.each<[number | string, bigint]>([
    [0.01, 10_000_000n],
    [2.5, 2_500_000_000n],
    [1e-7, 100n],
    [0.000000001, 1n],
    [100, 100_000_000_000n],
    [0, 0n],
    [0.1, 100_000_000n],
    [1e21, 1_000_000_000_000_000_000_000_000_000_000n],
    ['0.000000001', 1n],
    ['12.345678900', 12_345_678_900n],
    ['12.345678901', 12_345_678_901n],
    ['1.5e-3', 1_500_000n],
    ['2E2', 200_000_000_000n],
  ])('converts %p exactly to %p nano-units', (value, nano) => {
    expect(decimalToNano(value, 'price')).toBe(nano);
  });

  it('converts every cent exactly, where multiplying the float would round', () => {
    for (let cents = 0; cents <= 10_000; cents += 1) {
      expect(decimalToNano(cents / 100, 'price')).toBe(BigInt(cents) * 10_000_000n);
    }
  });

  it.each<[number | string, string]>([
    [1e-10, 'more than 9 decimals'],
    ['12.3456789012', 'more than 9 decimals'],
    [0.1 + 0.2, 'more than 9 decimals'],
    [-1, 'must not be negative'],
    ['-0.5', 'must not be negative'],
    [Number.NaN, 'must be a finite number'],
    [Number.POSITIVE_INFINITY, 'must be a finite number'],
    ['abc', 'is not a decimal number'],
    ['', 'is not a decimal number'],
    ['1e-999999999999', 'more than 9 decimals'],
    ['1e999999999999', 'is too large'],
  ])('rejects %p, naming the path', (value, reason) => {
    expect(() => decimalToNano(value, 'models[0].prices.input_tokens')).toThrow(new RegExp(`^models\\[0\\]\\.prices\\.input_tokens: .*${reason}`));
  });
});

describe(nanoToDecimal.name, () => {
  it.each<[bigint, string]>([
    [1_250_000_000n, '1.25'],
    [0n, '0'],
    [1n, '0.000000001'],
    [-3_000_000_000n, '-3'],
    [-1n, '-0.000000001'],
    [100_000_000_000n, '100'],
  ])('writes %p as %p', (nano, text) => {
    expect(nanoToDecimal(nano)).toBe(text);
  });

  it.each(['0', '0.01', '2.5', '0.000000001', '123456789.987654321', '100'])('round-trips %p through nano-units', (text) => {
    expect(nanoToDecimal(decimalToNano(text, 'amount'))).toBe(text);
  });
});

describe(nanoToNumber.name, () => {
  it('gives the decimal amount as a number for JSON output', () => {
    expect(nanoToNumber(1_250_000_000n)).toBe(1.25);
    expect(nanoToNumber(10_000_000n)).toBe(0.01);
  });
});
