/**
 * One pass over a request body: the whole document is validated as JSON (RFC 8259), but only
 * the top-level members are recorded, as byte ranges. The gateway reads `model` and `stream`
 * from those ranges and splices a new `model` in, so a 30 MiB body of base64 strings is never
 * parsed into objects nor re-serialised (DESIGN.md section 6).
 *
 * String contents are skipped with `Buffer.indexOf` (native memchr) and checked for control
 * characters four bytes at a time; everything else is a plain byte loop, which is cheap because
 * outside strings JSON is mostly punctuation and short numbers.
 */

export interface TopLevelField {
  /** The decoded key (escapes resolved). */
  key: string;
  /** Byte offset of the key's opening quote. */
  keyStart: number;
  /** Byte offset of the value's first byte. */
  valueStart: number;
  /** Byte offset just past the value's last byte. */
  valueEnd: number;
}

export type ScanResult =
  { ok: true; fields: Map<string, TopLevelField> } | { ok: false; reason: 'not_json' | 'not_object' | 'duplicate_key'; message: string; key?: string };

/** Deeper documents are refused: real requests never come close, and recursion stays bounded. */
export const MAX_JSON_DEPTH = 512;

export const TAB = 0x09;
export const LINE_FEED = 0x0a;
export const CARRIAGE_RETURN = 0x0d;
export const SPACE = 0x20;
export const QUOTE = 0x22;
export const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
export const OPEN_BRACKET = 0x5b;
export const BACKSLASH = 0x5c;
export const CLOSE_BRACKET = 0x5d;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
export const LOWER_U = 0x75;
const END = -1;

/** Bytes that may follow a backslash (other than `u`): " \ / b f n r t. */
export const SIMPLE_ESCAPES = new Uint8Array(128);
for (const character of '"\\/bfnrt') SIMPLE_ESCAPES[character.charCodeAt(0)] = 1;

/** Operands of the "word has a byte below 0x20" test: (word - 0x20202020) & ~word & 0x80808080. */
export const BELOW_SPACE = 0x20202020;
export const HIGH_BITS = 0x80808080 | 0;
/** Bytes of a string walked in JS before handing the search to native `indexOf`. */
const INLINE_SCAN_LENGTH = 32;
/** Below this length a string is checked byte by byte; the word view is not worth setting up. */
const WORD_CHECK_MINIMUM = 64;

class JsonSyntaxError extends Error {}

function isDigit(byte: number): boolean {
  return byte >= ZERO && byte <= NINE;
}

export function isHexDigit(byte: number): boolean {
  return isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
}

function controlCharacterError(byte: number, position: number): JsonSyntaxError {
  return new JsonSyntaxError(`unescaped control character 0x${byte.toString(16).padStart(2, '0')} in a string at byte ${position}`);
}

function describeByte(byte: number): string {
  return byte >= 0x21 && byte <= 0x7e ? `character '${String.fromCharCode(byte)}'` : `byte 0x${byte.toString(16).padStart(2, '0')}`;
}

/** Walks the document once; holds the top-level fields and the first repeated top-level key. */
class Scanner {
  position = 0;
  readonly fields = new Map<string, TopLevelField>();
  duplicateKey: string | undefined;
  /** Cached search results: a string full of escapes must not re-search the same stretch. */
  private nextQuote = -1;
  private nextBackslash = -1;
  private words: Int32Array | undefined;
  /** Index in `bytes` of the first 4-byte-aligned byte, where `words[0]` starts. */
  private wordBase = 0;

  constructor(private readonly bytes: Buffer) {}

  /** Skips whitespace and returns the next byte, or END. */
  skipWhitespace(): number {
    const bytes = this.bytes;
    let position = this.position;
    while (position < bytes.length) {
      const byte = bytes[position];
      if (byte !== SPACE && byte !== LINE_FEED && byte !== CARRIAGE_RETURN && byte !== TAB) break;
      position++;
    }
    this.position = position;
    return position < bytes.length ? bytes[position] : END;
  }

  unexpected(position = this.position): JsonSyntaxError {
    if (position >= this.bytes.length) return new JsonSyntaxError(`unexpected end of input at byte ${position}`);
    return new JsonSyntaxError(`unexpected ${describeByte(this.bytes[position])} at byte ${position}`);
  }

  scanValue(depth: number): void {
    const byte = this.skipWhitespace();
    if (byte === QUOTE) this.skipString();
    else if (byte === OPEN_BRACE) this.scanObject(depth + 1, false);
    else if (byte === OPEN_BRACKET) this.scanArray(depth + 1);
    else if (byte === MINUS || isDigit(byte)) this.scanNumber();
    else if (byte === 0x74) this.expectLiteral('true');
    else if (byte === 0x66) this.expectLiteral('false');
    else if (byte === 0x6e) this.expectLiteral('null');
    else throw this.unexpected();
  }

  /** Scans an object at the current `{`; the top-level one (`record`) keeps its members. */
  scanObject(depth: number, record: boolean): void {
    this.checkDepth(depth);
    this.position++;
    if (this.skipWhitespace() === CLOSE_BRACE) {
      this.position++;
      return;
    }
    for (;;) {
      if (this.skipWhitespace() !== QUOTE) throw this.unexpected();
      const keyStart = this.position;
      const keyHasEscapes = this.skipString();
      const keyEnd = this.position;
      if (this.skipWhitespace() !== COLON) throw this.unexpected();
      this.position++;
      this.skipWhitespace();
      const valueStart = this.position;
      this.scanValue(depth);
      if (record) this.recordField(keyStart, keyEnd, keyHasEscapes, valueStart);
      const next = this.skipWhitespace();
      this.position++;
      if (next === CLOSE_BRACE) return;
      if (next !== COMMA) throw this.unexpected(this.position - 1);
    }
  }

  private scanArray(depth: number): void {
    this.checkDepth(depth);
    this.position++;
    if (this.skipWhitespace() === CLOSE_BRACKET) {
      this.position++;
      return;
    }
    for (;;) {
      this.scanValue(depth);
      const next = this.skipWhitespace();
      this.position++;
      if (next === CLOSE_BRACKET) return;
      if (next !== COMMA) throw this.unexpected(this.position - 1);
    }
  }

  private checkDepth(depth: number): void {
    if (depth > MAX_JSON_DEPTH) {
      throw new JsonSyntaxError(`nesting deeper than ${MAX_JSON_DEPTH} levels at byte ${this.position}`);
    }
  }

  private recordField(keyStart: number, keyEnd: number, keyHasEscapes: boolean, valueStart: number): void {
    // The key is already validated, so JSON.parse of its bytes cannot throw; it resolves escapes
    // so that `mod\u0065l` and `model` collide as they would for the upstream's parser.
    const key: string = keyHasEscapes ? JSON.parse(this.bytes.toString('utf8', keyStart, keyEnd)) : this.bytes.toString('utf8', keyStart + 1, keyEnd - 1);
    if (this.fields.has(key)) {
      this.duplicateKey ??= key;
      return;
    }
    this.fields.set(key, { key, keyStart, valueStart, valueEnd: this.position });
  }

  /**
   * Skips the string at the current quote; returns whether it holds escapes. Each stretch
   * between escapes is first walked in JS for a few bytes, because crossing into native code
   * costs more than that on the short strings and escape-dense text of chat messages; a longer
   * stretch (base64) is searched with `indexOf`.
   */
  private skipString(): boolean {
    const bytes = this.bytes;
    let position = this.position + 1;
    let hasEscapes = false;
    for (;;) {
      const limit = Math.min(position + INLINE_SCAN_LENGTH, bytes.length);
      while (position < limit) {
        const byte = bytes[position];
        if (byte === QUOTE) {
          this.position = position + 1;
          return hasEscapes;
        }
        if (byte === BACKSLASH) break;
        if (byte < SPACE) throw controlCharacterError(byte, position);
        position++;
      }
      if (position < limit) {
        position = this.skipEscape(position);
        hasEscapes = true;
      } else {
        position = this.findStringStop(position);
      }
    }
  }

  /** Returns the next quote or backslash at or after `start`, checking the bytes before it. */
  private findStringStop(start: number): number {
    const bytes = this.bytes;
    if (this.nextQuote < start) this.nextQuote = bytes.indexOf(QUOTE, start);
    if (this.nextQuote === END) throw new JsonSyntaxError(`unterminated string starting at byte ${this.position}`);
    if (this.nextBackslash < start) {
      const found = bytes.indexOf(BACKSLASH, start);
      this.nextBackslash = found === END ? bytes.length : found;
    }
    const stop = Math.min(this.nextQuote, this.nextBackslash);
    this.checkNoControlCharacter(start, stop);
    return stop;
  }

  /** Validates the escape at `backslash` and returns the position just past it. */
  private skipEscape(backslash: number): number {
    const bytes = this.bytes;
    const kind = backslash + 1 < bytes.length ? bytes[backslash + 1] : END;
    if (kind === END) throw this.unexpected(backslash + 1);
    if (kind < 128 && SIMPLE_ESCAPES[kind] === 1) return backslash + 2;
    if (kind !== LOWER_U) throw new JsonSyntaxError(`invalid escape sequence at byte ${backslash}`);
    for (let position = backslash + 2; position < backslash + 6; position++) {
      if (position >= bytes.length) throw this.unexpected(position);
      if (!isHexDigit(bytes[position])) throw new JsonSyntaxError(`invalid \\u escape sequence at byte ${backslash}`);
    }
    return backslash + 6;
  }

  private checkNoControlCharacter(from: number, to: number): void {
    const bytes = this.bytes;
    let position = to - from >= WORD_CHECK_MINIMUM ? this.skipCleanWords(from, to) : from;
    for (; position < to; position++) {
      if (bytes[position] < SPACE) throw controlCharacterError(bytes[position], position);
    }
  }

  /**
   * Checks aligned 4-byte words with the "has a byte below n" bit trick and returns where the
   * byte loop must resume: at the first word holding a control character, or at the tail.
   * A byte loop over 30 MiB of base64 would cost several times more.
   */
  private skipCleanWords(from: number, to: number): number {
    const bytes = this.bytes;
    const words = this.wordView();
    const base = this.wordBase;
    let word = (Math.max(from - base, 0) + 3) >> 2;
    const headEnd = base + word * 4;
    for (let position = from; position < headEnd; position++) if (bytes[position] < SPACE) return position;
    const endWord = (to - base) >> 2;
    // Four words per turn: one branch per 16 bytes roughly halves the time on large strings.
    while (word + 4 <= endWord) {
      const first = words[word];
      const second = words[word + 1];
      const third = words[word + 2];
      const fourth = words[word + 3];
      const below =
        ((first - BELOW_SPACE) & ~first) | ((second - BELOW_SPACE) & ~second) | ((third - BELOW_SPACE) & ~third) | ((fourth - BELOW_SPACE) & ~fourth);
      if ((below & HIGH_BITS) !== 0) break;
      word += 4;
    }
    while (word < endWord && ((words[word] - BELOW_SPACE) & ~words[word] & HIGH_BITS) === 0) word++;
    return base + word * 4;
  }

  private wordView(): Int32Array {
    if (this.words === undefined) {
      const bytes = this.bytes;
      this.wordBase = (4 - (bytes.byteOffset & 3)) & 3;
      this.words = new Int32Array(bytes.buffer, bytes.byteOffset + this.wordBase, (bytes.length - this.wordBase) >> 2);
    }
    return this.words;
  }

  private scanNumber(): void {
    const bytes = this.bytes;
    let position = this.position;
    if (bytes[position] === MINUS) position++;
    if (bytes[position] === ZERO) position++;
    else position = this.skipDigits(position);
    if (bytes[position] === DOT) position = this.skipDigits(position + 1);
    if (bytes[position] === LOWER_E || bytes[position] === UPPER_E) {
      position++;
      if (bytes[position] === PLUS || bytes[position] === MINUS) position++;
      position = this.skipDigits(position);
    }
    this.position = position;
  }

  /** Skips one or more digits; a number part without any is an error. */
  private skipDigits(start: number): number {
    const bytes = this.bytes;
    if (!isDigit(bytes[start])) throw this.unexpected(start);
    let position = start + 1;
    while (isDigit(bytes[position])) position++;
    return position;
  }

  private expectLiteral(literal: string): void {
    const bytes = this.bytes;
    for (let index = 0; index < literal.length; index++) {
      if (bytes[this.position + index] !== literal.charCodeAt(index)) throw this.unexpected(this.position + index);
    }
    this.position += literal.length;
  }
}

/** Validates `body` as one JSON object and returns its top-level members as byte ranges. */
export function scanTopLevel(body: Buffer): ScanResult {
  const scanner = new Scanner(body);
  let isObject: boolean;
  try {
    const first = scanner.skipWhitespace();
    if (first === END) throw new JsonSyntaxError('the body is empty');
    isObject = first === OPEN_BRACE;
    if (isObject) scanner.scanObject(1, true);
    else scanner.scanValue(0);
    if (scanner.skipWhitespace() !== END) throw scanner.unexpected();
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    return { ok: false, reason: 'not_json', message: `Request body is not valid JSON: ${error.message}.` };
  }
  if (!isObject) return { ok: false, reason: 'not_object', message: 'Request body must be a JSON object.' };
  const key = scanner.duplicateKey;
  if (key !== undefined) {
    return { ok: false, reason: 'duplicate_key', message: `Request body repeats the top-level field ${JSON.stringify(key)}.`, key };
  }
  return { ok: true, fields: scanner.fields };
}
