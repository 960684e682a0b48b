/**
 * A `multipart/form-data` body read in place (RFC 7578, RFC 2046 section 5.1): the parts are
 * recorded as byte ranges of the request's own buffer, so a 30 MiB upload is never copied, and
 * the body goes upstream as the original bytes with only the `model` part's value replaced.
 */

export interface FormPart {
  /** The `name` of the part's `Content-Disposition`. */
  name: string;
  /** Present for file parts. */
  filename?: string;
  /** Byte range of the part's content. */
  contentStart: number;
  contentEnd: number;
}

export type FormParse = { ok: true; parts: FormPart[] } | { ok: false; message: string };

/** Part headers longer than this are not a form anybody sends. */
const MAX_HEADER_BYTES = 16 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');
const DASH = 0x2d;

/** The boundary of a `multipart/form-data` content type, or undefined for any other type. */
export function formBoundary(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const [type, ...parameters] = contentType.split(';');
  if (type.trim().toLowerCase() !== 'multipart/form-data') return undefined;
  for (const parameter of parameters) {
    const separator = parameter.indexOf('=');
    if (separator === -1 || parameter.slice(0, separator).trim().toLowerCase() !== 'boundary') continue;
    const value = unquote(parameter.slice(separator + 1).trim());
    // RFC 2046: 1 to 70 characters.
    return value.length >= 1 && value.length <= 70 ? value : '';
  }
  return '';
}

/** Reads every part's name and content range; anything that breaks the grammar is refused. */
export function parseForm(body: Buffer, boundary: string): FormParse {
  if (!boundary) return { ok: false, message: 'The multipart/form-data body has no valid boundary parameter.' };
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  let position = firstPartStart(body, delimiter);
  if (position === -1) return invalid('it has no part delimited by its boundary');
  const parts: FormPart[] = [];
  for (;;) {
    if (body[position] === DASH && body[position + 1] === DASH) break; // close delimiter
    position = skipTransportPadding(body, position);
    if (!startsWith(body, position, CRLF)) return invalid('a boundary line is not followed by a line break');
    const headersStart = position + CRLF.length;
    const headersEnd = body.indexOf(HEADERS_END, headersStart - CRLF.length);
    if (headersEnd === -1 || headersEnd - headersStart > MAX_HEADER_BYTES) return invalid('a part has no complete header section');
    // A header section that runs into the next delimiter would swallow the part after it.
    const nextDelimiter = body.indexOf(delimiter, headersStart - CRLF.length);
    if (nextDelimiter !== -1 && nextDelimiter < headersEnd) return invalid('a part has no complete header section');
    const disposition = contentDisposition(body.toString('latin1', headersStart, headersEnd));
    if (!disposition) return invalid('a part needs exactly one Content-Disposition: form-data header with one name');
    const contentStart = headersEnd + HEADERS_END.length;
    const contentEnd = body.indexOf(delimiter, contentStart);
    if (contentEnd === -1) return invalid('it does not end with the closing boundary');
    parts.push({ ...disposition, contentStart, contentEnd });
    position = contentEnd + delimiter.length;
  }
  return parts.length > 0 ? { ok: true, parts } : invalid('it has no parts');
}

/** The text of a part (form fields are UTF-8). */
export function partText(body: Buffer, part: FormPart): string {
  return body.toString('utf8', part.contentStart, part.contentEnd);
}

/** The body as pieces of the original buffer with one part's content replaced. */
export function replacePart(body: Buffer, part: FormPart, content: string): Buffer[] {
  return [body.subarray(0, part.contentStart), Buffer.from(content, 'utf8'), body.subarray(part.contentEnd)];
}

/** Just past the first delimiter, which may open the body without the line break before it; -1 when there is none. */
function firstPartStart(body: Buffer, delimiter: Buffer): number {
  const opening = delimiter.subarray(CRLF.length);
  if (startsWith(body, 0, opening)) return opening.length;
  const found = body.indexOf(delimiter);
  return found === -1 ? -1 : found + delimiter.length;
}

function invalid(reason: string): FormParse {
  return { ok: false, message: `The multipart/form-data body is not a valid form: ${reason}.` };
}

function startsWith(body: Buffer, position: number, prefix: Buffer): boolean {
  return body.subarray(position, position + prefix.length).equals(prefix);
}

/** RFC 2046 allows spaces and tabs between a boundary and its line break. */
function skipTransportPadding(body: Buffer, position: number): number {
  while (body[position] === 0x20 || body[position] === 0x09) position++;
  return position;
}

/**
 * `Content-Disposition: form-data; name="…"; filename="…"` among a part's header lines. Anything
 * another parser could read differently is refused: a line that is not a header, a second
 * Content-Disposition, a repeated parameter (RFC 6266 section 4.1).
 */
function contentDisposition(headers: string): { name: string; filename?: string } | undefined {
  let found: { name: string; filename?: string } | undefined;
  for (const line of headers.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    if (line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') continue;
    if (found) return undefined;
    const [type, ...parameters] = splitParameters(line.slice(colon + 1));
    if (type.trim().toLowerCase() !== 'form-data') return undefined;
    const values = new Map<string, string>();
    for (const parameter of parameters) {
      const separator = parameter.indexOf('=');
      if (separator === -1) continue;
      const key = parameter.slice(0, separator).trim().toLowerCase();
      if (values.has(key)) return undefined;
      values.set(key, unquote(parameter.slice(separator + 1).trim()));
    }
    const name = values.get('name');
    if (name === undefined) return undefined;
    // Header bytes were read as latin1; names and file names are UTF-8 on the wire.
    const filename = values.get('filename');
    found = { name: utf8(name), ...(filename === undefined ? {} : { filename: utf8(filename) }) };
  }
  return found;
}

/** Splits at semicolons outside quoted strings. */
function splitParameters(value: string): string[] {
  const pieces: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < value.length; index++) {
    const character = value[index];
    if (character === '\\' && quoted) {
      current += character + (value[index + 1] ?? '');
      index++;
    } else if (character === '"') {
      quoted = !quoted;
      current += character;
    } else if (character === ';' && !quoted) {
      pieces.push(current);
      current = '';
    } else {
      current += character;
    }
  }
  pieces.push(current);
  return pieces;
}

function unquote(value: string): string {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return value;
  return value.slice(1, -1).replace(/\\(.)/g, '$1');
}

function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}
