/**
 * Exact money: amounts are bigint nano-units (1e-9 of the currency). Decimal input is
 * converted through its decimal text, never by float multiplication, so 0.01 stays exactly
 * 10_000_000 nano-units instead of whatever 0.01 * 1e9 rounds to.
 */

export const NANO_DECIMALS = 9;
export const NANO_PER_UNIT = 10n ** BigInt(NANO_DECIMALS);

/** Beyond this many digits an amount is a typo, and a huge exponent in a string would be a costly bigint. */
const MAX_NANO_DIGITS = 36;

const DECIMAL_PATTERN = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/**
 * Converts a non-negative decimal amount (a YAML number such as 2.5 or 1e-7, or a string such
 * as "0.000000001") to nano-units. Throws an Error whose message starts with `path`.
 */
export function decimalToNano(value: number | string, path: string): bigint {
  const text = decimalTextOf(value, path);
  const match = DECIMAL_PATTERN.exec(text);
  const [, sign, integerDigits, fractionDigits = '', exponentText = '0'] = match ?? [];
  if (!match || integerDigits.length + fractionDigits.length === 0) {
    throw new Error(`${path}: ${JSON.stringify(value)} is not a decimal number`);
  }
  const digits = BigInt(integerDigits + fractionDigits);
  // The number is digits * 10^-(decimals); decimals may be negative for large exponents.
  const decimals = fractionDigits.length - Number(exponentText);
  const nano = scaleToNano(digits, decimals, value, path);
  if (sign === '-' && nano !== 0n) {
    throw new Error(`${path}: must not be negative (got ${text})`);
  }
  return nano;
}

function decimalTextOf(value: number | string, path: string): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new Error(`${path}: must be a finite number (got ${value})`);
    }
    // String() gives the shortest text that reads back as the same double: 0.1 -> "0.1", 1e-7 -> "1e-7".
    return String(value);
  }
  if (typeof value === 'string') {
    return value.trim();
  }
  throw new Error(`${path}: must be a number (got ${JSON.stringify(value)})`);
}

function scaleToNano(digits: bigint, decimals: number, value: number | string, path: string): bigint {
  if (digits === 0n) {
    return 0n;
  }
  const digitCount = digits.toString().length;
  const shift = NANO_DECIMALS - decimals;
  if (shift >= 0) {
    if (digitCount + shift > MAX_NANO_DIGITS) {
      throw new Error(`${path}: ${value} is too large`);
    }
    return digits * 10n ** BigInt(shift);
  }
  // More decimals than nano-units hold: acceptable only when the extra digits are zeros (1.5000000000).
  if (-shift >= digitCount || digits % 10n ** BigInt(-shift) !== 0n) {
    throw new Error(`${path}: ${value} has more than ${NANO_DECIMALS} decimals`);
  }
  return digits / 10n ** BigInt(-shift);
}

/** Minimal decimal text of a nano-unit amount: 1_250_000_000n -> "1.25", 0n -> "0", 1n -> "0.000000001". */
export function nanoToDecimal(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const magnitude = nano < 0n ? -nano : nano;
  const whole = (magnitude / NANO_PER_UNIT).toString();
  const fraction = (magnitude % NANO_PER_UNIT).toString().padStart(NANO_DECIMALS, '0').replace(/0+$/, '');
  return fraction ? `${sign}${whole}.${fraction}` : `${sign}${whole}`;
}

/** For JSON output, where amounts are plain numbers (DESIGN.md section 7: `"spent": 1.25`). */
export function nanoToNumber(nano: bigint): number {
  return Number(nanoToDecimal(nano));
}
