import { timestampText } from './timestamp-text';

describe(timestampText.name, () => {
  it('writes what toISOString writes, milliseconds and second changes included', () => {
    const base = Date.UTC(2026, 10, 25, 23, 59, 58, 0);
    const moments = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1999, 2000, 2001, 2500, 1, 0];
    for (const offset of moments) {
      const date = new Date(base + offset);
      expect(timestampText(date)).toBe(date.toISOString());
    }
  });

  it('writes the epoch and the last millisecond of year 9999 as toISOString does', () => {
    for (const ms of [0, 999, 253_402_300_799_999]) expect(timestampText(new Date(ms))).toBe(new Date(ms).toISOString());
  });

  it('leaves dates before 1970 and after year 9999 to toISOString, and refuses an invalid date as it does', () => {
    for (const ms of [-1, -62_198_755_200_000, 253_402_300_800_000]) expect(timestampText(new Date(ms))).toBe(new Date(ms).toISOString());
    expect(() => timestampText(new Date(Number.NaN))).toThrow(RangeError);
  });

  it('agrees with toISOString over a day of random moments', () => {
    const start = Date.UTC(2026, 0, 1);
    for (let index = 0; index < 10_000; index++) {
      const date = new Date(start + Math.floor(Math.random() * 86_400_000));
      expect(timestampText(date)).toBe(date.toISOString());
    }
  });
});
