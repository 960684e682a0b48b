import type { AdmittedCall } from '../forwarding/request-state';
import { readValue } from '../request-body/json-splice';
import { FormPart, partText } from '../request-body/multipart-form';

/**
 * The image calls the gateway refuses without going upstream (SPEC.md "Images" rule 5):
 * streaming, tools, vendor-b layer decomposition, and references to files stored upstream
 * (`file_id`, `asset://` addresses, format C `fileData`). Body shape, `model` and repeated
 * fields are the admission guard's checks.
 */

export type ImageFormat = 'a' | 'b' | 'c';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const SCHEME_SEPARATOR = Buffer.from('://');
const ASSET_SCHEME = 'asset';

/** Keys that name a file stored upstream, per format. */
const FILE_REFERENCE_KEYS: Record<ImageFormat, readonly string[]> = {
  a: ['file_id'],
  b: ['file_id'],
  // The generateContent JSON accepts both spellings of its field names.
  c: ['file_id', 'fileData', 'file_data'],
};

export function imageRefusal(call: AdmittedCall, format: ImageFormat): string | undefined {
  if (call.stream) return 'Image generation is not streamed: leave "stream" out or set it to false.';
  if (call.form) return formRefusal(call.body, call.form);
  if (call.fields.has('tools')) return 'Tools are not supported on image endpoints: remove "tools".';
  if (format === 'b' && layerDecompositionEnabled(call)) {
    return 'Layer decomposition is not supported: leave "layer_decomposition" out or disable it.';
  }
  const reference = upstreamFileReference(call.body, FILE_REFERENCE_KEYS[format]);
  return reference && `Files stored upstream cannot be referenced (${reference}): send the image itself (base64) or a URL.`;
}

function formRefusal(body: Buffer, parts: readonly FormPart[]): string | undefined {
  for (const part of parts) {
    const name = part.name;
    if (name === 'tools' || name.startsWith('tools[')) return 'Tools are not supported on image endpoints: remove the "tools" field.';
    if (isFileIdField(name)) {
      return `Files stored upstream cannot be referenced (form field ${JSON.stringify(name)}): upload the image itself.`;
    }
    if (part.filename === undefined && isAssetAddress(partText(body, part).trim())) {
      return `Files stored upstream cannot be referenced (an asset:// address in form field ${JSON.stringify(name)}): upload the image itself.`;
    }
  }
  return undefined;
}

/** `file_id` in any form-field spelling: `file_id`, `file_id[]`, `image[file_id]`, `images[0][file_id]`. */
function isFileIdField(name: string): boolean {
  return name === 'file_id' || name.startsWith('file_id[') || name.includes('[file_id]');
}

/** Anything but an explicit "off" (false, null, "disabled", `{enabled: false}`, `{type: "disabled"}`) counts as enabled. */
function layerDecompositionEnabled(call: AdmittedCall): boolean {
  const field = call.fields.get('layer_decomposition');
  if (!field) return false;
  const value = readValue(call.body, field);
  if (value === false || value === null || value === 'disabled') return false;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const settings = value as Record<string, unknown>;
    return !(settings.enabled === false || settings.type === 'disabled');
  }
  return true;
}

function isAssetAddress(text: string): boolean {
  return text.slice(0, ASSET_SCHEME.length + 3).toLowerCase() === `${ASSET_SCHEME}://`;
}

/**
 * Names the first upstream file reference in a validated JSON body: a member named by `keys`
 * at any depth, or a string starting with `asset://`. Bodies carry megabytes of base64, so the
 * raw bytes are searched; in valid JSON an unescaped quote followed by the key's bytes and a
 * colon can only be that key. Escapes could spell the same text differently (`file\u005fid`,
 * `asset:\/\/`), so a body holding any is parsed and walked instead.
 */
export function upstreamFileReference(body: Buffer, keys: readonly string[]): string | undefined {
  if (body.includes('\\u') || body.includes('\\/')) return referenceInValue(JSON.parse(body.toString('utf8')), new Set(keys));
  for (const key of keys) {
    const needle = Buffer.from(`"${key}"`);
    for (let at = body.indexOf(needle); at !== -1; at = body.indexOf(needle, at + 1)) {
      if (!isEscaped(body, at) && nextSignificantByte(body, at + needle.length) === COLON) return `"${key}"`;
    }
  }
  for (let at = body.indexOf(SCHEME_SEPARATOR); at !== -1; at = body.indexOf(SCHEME_SEPARATOR, at + 1)) {
    const start = at - ASSET_SCHEME.length;
    if (start < 1 || body[start - 1] !== QUOTE || isEscaped(body, start - 1)) continue;
    if (body.toString('latin1', start, at).toLowerCase() === ASSET_SCHEME) return 'an asset:// address';
  }
  return undefined;
}

function referenceInValue(root: unknown, keys: ReadonlySet<string>): string | undefined {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (isAssetAddress(value)) return 'an asset:// address';
    } else if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
    } else if (value && typeof value === 'object') {
      for (const [key, member] of Object.entries(value)) {
        if (keys.has(key)) return `"${key}"`;
        pending.push(member);
      }
    }
  }
  return undefined;
}

/** Whether the byte at `position` is preceded by an odd number of backslashes. */
function isEscaped(body: Buffer, position: number): boolean {
  let backslashes = 0;
  while (position - backslashes - 1 >= 0 && body[position - backslashes - 1] === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

function nextSignificantByte(body: Buffer, position: number): number | undefined {
  while (position < body.length && (body[position] === 0x20 || body[position] === 0x09 || body[position] === 0x0a || body[position] === 0x0d)) position++;
  return body[position];
}
