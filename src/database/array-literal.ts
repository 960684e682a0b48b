import { timestampText } from './timestamp-text';

/** Characters an element of an array literal escapes with a backslash inside its quotes. */
const QUOTED_SPECIAL = /["\\]/;
const QUOTED_SPECIALS = /["\\]/g;

/**
 * One column of a batch as a PostgreSQL array literal (`{"a",NULL,3}`), for a parameter cast to
 * an array type (`$1::varchar[]`). Numbers and booleans go bare, `null` as NULL, anything else
 * (strings, JSON text, dates as ISO 8601) double-quoted with `"` and `\` escaped, which is valid
 * for every element type whatever the text holds (braces, commas, blanks, the word NULL).
 *
 * pg encodes an array parameter the same way but generically: two regular-expression
 * replacements per element and a string concatenation per character class, then flattens the
 * result to send it. Built with `join` the literal is one flat string (docs/performance.md has
 * the instruction counts).
 */
export function arrayLiteral(rows: readonly (readonly unknown[])[], column: number): string {
  const count = rows.length;
  if (count === 0) return '{}';
  const elements = new Array<string>(count);
  for (let index = 0; index < count; index++) elements[index] = elementOf(rows[index][column]);
  // The braces go into the first and last elements, so that `join` gives the literal as one flat
  // string: `{${joined}}` is a string of three pieces, which pg's Buffer.byteLength copied flat
  // again, a copy of every column of every batch (the largest thing a scavenge found alive at the
  // flush: docs/performance.md).
  elements[0] = `{${elements[0]}`;
  elements[count - 1] = `${elements[count - 1]}}`;
  return elements.join(',');
}

/** The text PostgreSQL reads for a value that is not null: booleans as t/f, dates in ISO 8601 (UTC). Shared with the COPY text. */
export function valueText(value: unknown): string {
  if (value instanceof Date) return timestampText(value);
  if (typeof value === 'boolean') return value ? 't' : 'f';
  return String(value);
}

function elementOf(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  const text = valueText(value);
  const type = typeof value;
  if (type === 'number' || type === 'bigint' || type === 'boolean') return text;
  return QUOTED_SPECIAL.test(text) ? `"${escaped(text)}"` : `"${text}"`;
}

/** Quotes (JSON text has many) without a backslash: a plain replaceAll, half a regular expression's cost. */
function escaped(text: string): string {
  return text.includes('\\') ? text.replace(QUOTED_SPECIALS, '\\$&') : text.replaceAll('"', '\\"');
}
