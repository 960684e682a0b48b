import type { InterfaceName } from '../config/gateway-config';
import { GatewayError, unreachable } from '../common/gateway-error';
import { scanTopLevel, type TopLevelField } from '../request-body/json-scan';
import { readValue } from '../request-body/json-splice';
import type { FormPart } from '../request-body/multipart-form';

/**
 * What a call carries for chargeback, kept on its usage record: the tags of its
 * `X-Gateway-Tags` header and the end user its body names. Both are read once, at admission,
 * from what the guards have at hand (the header, the top-level members the scan recorded); the
 * header never goes upstream (header-policy.ts forwards a fixed list) and the body goes as it is.
 */

export const TAGS_HEADER = 'x-gateway-tags';
export const MAX_TAGS = 10;
export const MAX_TAG_LENGTH = 64;
/** One tag, as the header and the admin API's filter take it. */
export const TAG_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
const TAG_CHARACTER = /[A-Za-z0-9._:-]/;
/** Longer end-user ids are cut to this many UTF-16 units: the call is the client's to make, the record only names it. */
export const MAX_END_USER_LENGTH = 256;
/**
 * Bytes of a string value read for the end user: enough for MAX_END_USER_LENGTH units even as
 * `\uXXXX` escapes, and what a spooled body's skeleton keeps of a string (JSON_KEEP_BYTES).
 */
const HEAD_BYTES = 4096;
/** A `metadata` object larger than this is no messages request's: its end user is not looked for. */
const MAX_METADATA_BYTES = 16 * 1024;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LOWER_U = 0x75;
const OPEN_BRACE = 0x7b;

/**
 * The tags of an `X-Gateway-Tags` header: comma-separated, spaces around them trimmed, a repeat
 * kept once in its first place; null without the header or with an empty one. A bad tag or more
 * than MAX_TAGS different ones is a 400 (`invalid_request`) naming the problem.
 */
export function tagsOf(header: string | string[] | undefined): string[] | null {
  if (header === undefined) return null;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.trim() === '') return null;
  const tags: string[] = [];
  text.split(',').forEach((item, index) => {
    const tag = item.trim();
    checkTag(tag, index + 1);
    if (!tags.includes(tag)) tags.push(tag);
  });
  if (tags.length > MAX_TAGS) throw tagError(`${tags.length} different tags; at most ${MAX_TAGS} are allowed.`);
  return tags;
}

function checkTag(tag: string, position: number): void {
  if (tag === '') throw tagError(`tag ${position} is empty (tags are separated by single commas).`);
  if (tag.length > MAX_TAG_LENGTH) throw tagError(`tag ${JSON.stringify(tag)} has ${tag.length} characters; at most ${MAX_TAG_LENGTH} are allowed.`);
  const bad = [...tag].find((character) => !TAG_CHARACTER.test(character));
  if (bad !== undefined) {
    throw tagError(`tag ${JSON.stringify(tag)} has the character ${JSON.stringify(bad)}; a tag may have only A-Z, a-z, 0-9 and . _ : -`);
  }
}

function tagError(problem: string): GatewayError {
  return new GatewayError('invalid_request', `X-Gateway-Tags: ${problem}`);
}

/** Where an entry's body names its end user, if its protocol has such a member. */
function endUserMember(entry: InterfaceName): 'user' | 'metadata.user_id' | undefined {
  switch (entry) {
    case 'chat_completions':
    case 'responses':
    case 'embeddings':
    case 'images_a':
      return 'user';
    case 'messages':
      return 'metadata.user_id';
    case 'images_b':
    case 'images_c':
    case 'video_b':
    case 'video_c':
    case 'speech_c':
      return undefined;
    default:
      return unreachable(entry);
  }
}

/**
 * The end user of a JSON body: `user` (the chat-style protocols) or `metadata.user_id`
 * (messages), when it is a non-empty string; read from the members the scan recorded, so only
 * that value's bytes are parsed (and at most HEAD_BYTES of them).
 */
export function endUserOf(entry: InterfaceName, body: Buffer, fields: ReadonlyMap<string, TopLevelField>): string | null {
  const member = endUserMember(entry);
  if (member === undefined) return null;
  if (member === 'user') return endUserText(stringHead(body, fields.get('user')));
  const metadata = fields.get('metadata');
  if (!metadata || body[metadata.valueStart] !== OPEN_BRACE || metadata.valueEnd - metadata.valueStart > MAX_METADATA_BYTES) return null;
  const inner = body.subarray(metadata.valueStart, metadata.valueEnd);
  const scan = scanTopLevel(inner);
  return scan.ok ? endUserText(stringHead(inner, scan.fields.get('user_id'))) : null;
}

/** The end user of a form body (image edits): its `user` field. */
export function endUserOfForm(entry: InterfaceName, body: Buffer, parts: readonly FormPart[]): string | null {
  if (endUserMember(entry) !== 'user') return null;
  const part = parts.find((candidate) => candidate.name === 'user' && candidate.filename === undefined);
  // A UTF-8 sequence cut at the end decodes to U+FFFD past the units that are kept.
  return part ? endUserText(body.toString('utf8', part.contentStart, Math.min(part.contentEnd, part.contentStart + HEAD_BYTES))) : null;
}

/**
 * A string member's value, or its first HEAD_BYTES when longer: cut where no escape is, then
 * closed, so the head parses as the whole would begin. Undefined for anything but a string.
 */
function stringHead(body: Buffer, field: TopLevelField | undefined): string | undefined {
  if (!field || body[field.valueStart] !== QUOTE) return undefined;
  const limit = field.valueStart + HEAD_BYTES;
  if (field.valueEnd <= limit) return readValue<string>(body, field);
  let position = field.valueStart + 1;
  while (position < limit) position += body[position] !== BACKSLASH ? 1 : body[position + 1] === LOWER_U ? 6 : 2;
  return JSON.parse(`${body.toString('utf8', field.valueStart, position)}"`) as string;
}

/**
 * An end user as the record keeps it: none for an empty text, NUL (which PostgreSQL text cannot
 * hold) as U+FFFD, at most MAX_END_USER_LENGTH units without splitting a surrogate pair.
 */
export function endUserText(value: string | undefined): string | null {
  if (!value) return null;
  let text = value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
  if (text.length > MAX_END_USER_LENGTH) {
    const last = text.charCodeAt(MAX_END_USER_LENGTH - 1);
    text = text.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_END_USER_LENGTH - 1 : MAX_END_USER_LENGTH);
  }
  return text;
}
