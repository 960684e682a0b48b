import type { TopLevelField } from './json-scan';

/**
 * Reading and rewriting top-level members by the byte ranges `scanTopLevel` found: the gateway
 * changes `model` (and a few usage options) without re-serialising the body.
 */

const OPEN_BRACE = 0x7b;

/** Parses one member's value, and only its bytes. */
export function readValue<T = unknown>(body: Buffer, field: TopLevelField): T {
  return JSON.parse(body.toString('utf8', field.valueStart, field.valueEnd)) as T;
}

/**
 * Returns a copy of `body` where each replaced member's value is swapped for the given raw JSON
 * text, and `additions` (key, raw JSON value) are appended after the last member. Every other
 * byte is copied as is. `fields` is the map `scanTopLevel` returned for this very body; the raw
 * texts are trusted to be valid JSON.
 */
export function spliceFields(
  body: Buffer,
  fields: ReadonlyMap<string, TopLevelField>,
  replacements: ReadonlyMap<string, string>,
  additions: ReadonlyArray<readonly [string, string]> = [],
): Buffer {
  return Buffer.concat(splicedParts(body, fields, replacements, additions));
}

/**
 * The same document as `spliceFields`, as consecutive pieces: views into `body` around the new
 * texts, nothing copied. Sent as they are, a 30 MiB body goes upstream without a second copy.
 */
export function splicedParts(
  body: Buffer,
  fields: ReadonlyMap<string, TopLevelField>,
  replacements: ReadonlyMap<string, string>,
  additions: ReadonlyArray<readonly [string, string]> = [],
): Buffer[] {
  const targets: TopLevelField[] = [];
  for (const key of replacements.keys()) {
    const field = fields.get(key);
    if (field === undefined) throw new RangeError(`Cannot replace top-level field ${JSON.stringify(key)}: the body does not have it.`);
    targets.push(field);
  }
  targets.sort((left, right) => left.valueStart - right.valueStart);

  const parts: Buffer[] = [];
  let position = 0;
  for (const field of targets) {
    parts.push(body.subarray(position, field.valueStart), Buffer.from(replacements.get(field.key) as string));
    position = field.valueEnd;
  }
  if (additions.length > 0) {
    const insertAt = additionPoint(body, fields);
    parts.push(body.subarray(position, insertAt), Buffer.from(encodeAdditions(fields, additions)));
    position = insertAt;
  }
  parts.push(body.subarray(position));
  return parts;
}

/** Just past the last member's value, or just past `{` when the object is empty. */
function additionPoint(body: Buffer, fields: ReadonlyMap<string, TopLevelField>): number {
  let end = -1;
  for (const field of fields.values()) if (field.valueEnd > end) end = field.valueEnd;
  return end === -1 ? body.indexOf(OPEN_BRACE) + 1 : end;
}

function encodeAdditions(fields: ReadonlyMap<string, TopLevelField>, additions: ReadonlyArray<readonly [string, string]>): string {
  let text = '';
  for (const [key, value] of additions) {
    if (fields.has(key)) throw new RangeError(`Cannot add top-level field ${JSON.stringify(key)}: the body already has it.`);
    text += `${text !== '' || fields.size > 0 ? ',' : ''}${JSON.stringify(key)}:${value}`;
  }
  return text;
}
