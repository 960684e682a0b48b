import { retryAfterMsOf } from './forward.service';

describe(retryAfterMsOf.name, () => {
  const NOW = Date.parse('2026-11-28T12:00:00Z');

  it.each([
    ['seconds', { 'retry-after': '5' }, 5_000],
    ['fractional seconds', { 'retry-after': '1.5' }, 1_500],
    ['milliseconds, before seconds', { 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    ['an HTTP date', { 'retry-after': 'Sat, 28 Nov 2026 12:00:07 GMT' }, 7_000],
    ['an HTTP date already past', { 'retry-after': 'Sat, 28 Nov 2026 11:59:00 GMT' }, 0],
    ['nothing', {}, 0],
    ['a blank value', { 'retry-after': ' ' }, 0],
    ['words', { 'retry-after': 'soon' }, 0],
    ['a negative count', { 'retry-after': '-3' }, 0],
    ['unreadable milliseconds, readable seconds', { 'retry-after-ms': 'x', 'retry-after': '2' }, 2_000],
  ])('reads %s', (_case, headers, expected) => {
    expect(retryAfterMsOf(headers, NOW)).toBe(expected);
  });
});
