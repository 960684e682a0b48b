import { isUtf8 as isUtf8Bytes } from 'node:buffer';
import {
  BACKSLASH,
  BELOW_SPACE,
  CARRIAGE_RETURN,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COMMA,
  HIGH_BITS,
  isHexDigit,
  LINE_FEED,
  LOWER_U,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  SIMPLE_ESCAPES,
  SPACE,
  TAB,
} from './json-scan';

/**
 * The skeleton of a large request body: the body with the long stretches nobody reads left out,
 * built chunk by chunk while the body itself goes to a file (body-spool.ts). A 30 MiB chat
 * message or image edit is mostly one base64 string or one file part; its skeleton is a few
 * kilobytes, yet the guards scan it, read `model` from it and splice into it exactly as they do a
 * whole body, and `SkeletonMap` turns every range of it back into a range of the body.
 *
 * JSON: the content of a string value past its first JSON_KEEP_BYTES is left out up to its closing
 * quote. What is left out is checked here as the scanner would (no control character, valid
 * escapes, UTF-8 for the whole body), so the skeleton is valid JSON exactly when the body is, with
 * the same members in the same order. Keys are kept whole.
 * Forms: each part (what follows a delimiter) is kept for its first FORM_KEEP_BYTES, which hold its
 * header section (at most 16 KiB, multipart-form.ts) and the value of any ordinary field; the rest
 * of a file's content is left out. Delimiters are always kept.
 */

export const JSON_KEEP_BYTES = 4096;
export const FORM_KEEP_BYTES = 64 * 1024;

/** A body that is not valid JSON, found in a part the skeleton leaves out. */
export interface SkeletonFault {
  message: string;
  /** Byte offset in the body. */
  position: number;
}

/**
 * Kept piece `i` starts at skeleton offset `skeletonStarts[i]` and body offset `bodyStarts[i]`
 * and runs to the next piece's start in the skeleton; between two pieces the body has bytes the
 * skeleton left out.
 */
export class SkeletonMap {
  constructor(
    private readonly skeletonStarts: readonly number[],
    private readonly bodyStarts: readonly number[],
    private readonly skeletonLength: number,
    readonly bodyLength: number,
  ) {}

  /**
   * The body offset of the skeleton byte at `position` (the body's length for the skeleton's
   * end). A skeleton range [a, b) is the body range [bodyOffset(a), bodyOffset(b)): with what
   * was left out inside it, and without a left-out stretch just before `a`.
   */
  bodyOffset(position: number): number {
    if (position >= this.skeletonLength) return this.bodyLength;
    let low = 0;
    let high = this.skeletonStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.skeletonStarts[middle] <= position) low = middle;
      else high = middle - 1;
    }
    return this.bodyStarts[low] + (position - this.skeletonStarts[low]);
  }
}

export interface Skeleton {
  /** Its own ArrayBuffer: a piece cut from it is recognised by `buffer` (body-spool.ts). */
  bytes: Buffer;
  map: SkeletonMap;
}

/** Collects the kept bytes (copied: the socket's chunks are not held) and where they came from. */
abstract class SkeletonBuilder {
  private bytes = Buffer.allocUnsafeSlow(16 * 1024);
  private length = 0;
  private readonly skeletonStarts: number[] = [];
  private readonly bodyStarts: number[] = [];
  private keptUntil = -1;
  /** Body offset of the current chunk's first byte. */
  protected chunkStart = 0;

  push(chunk: Buffer): void {
    this.consume(chunk);
    this.chunkStart += chunk.length;
  }

  finish(): Skeleton {
    this.flush();
    const bytes = Buffer.allocUnsafeSlow(this.length);
    this.bytes.copy(bytes, 0, 0, this.length);
    return { bytes, map: new SkeletonMap(this.skeletonStarts, this.bodyStarts, this.length, this.chunkStart) };
  }

  protected abstract consume(chunk: Buffer): void;

  /** Called once at the end, for bytes held back until then. */
  protected flush(): void {}

  /** Keeps `chunk[from, to)`, which starts at body offset `bodyStart`. */
  protected keep(chunk: Buffer, from: number, to: number, bodyStart = this.chunkStart + from): void {
    if (to <= from) return;
    if (bodyStart !== this.keptUntil) {
      this.skeletonStarts.push(this.length);
      this.bodyStarts.push(bodyStart);
    }
    const needed = this.length + (to - from);
    if (needed > this.bytes.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(needed, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.length);
      this.bytes = grown;
    }
    chunk.copy(this.bytes, this.length, from, to);
    this.length = needed;
    this.keptUntil = bodyStart + (to - from);
  }
}

/** Container nesting followed for telling keys from values; deeper documents are refused by the scan anyway. */
const TRACKED_DEPTH = 1024;

export class JsonSkeletonBuilder extends SkeletonBuilder {
  fault: SkeletonFault | undefined;
  private readonly utf8 = new Utf8Check();
  private inString = false;
  private isKey = false;
  /** Content bytes of the current string so far. */
  private stringBytes = 0;
  private leavingOut = false;
  private afterBackslash = false;
  private hexLeft = 0;
  private readonly containers = new Uint8Array(TRACKED_DEPTH);
  private depth = 0;
  /** Last byte outside strings that was not whitespace. */
  private lastSignificant = 0;
  private quoteChunk: Buffer | undefined;
  private quoteAt = -1;
  /** Body offset of the backslash of the escape under way. */
  private escapeStart = 0;

  /** Whether every byte so far is UTF-8 (checked to the end by `finish`). */
  get isUtf8(): boolean {
    return this.utf8.valid;
  }

  override finish(): Skeleton {
    this.utf8.end();
    return super.finish();
  }

  protected consume(chunk: Buffer): void {
    this.utf8.push(chunk);
    if (this.fault) return;
    let keepFrom = 0;
    let position = 0;
    const length = chunk.length;
    while (position < length) {
      if (!this.inString) {
        position = this.structure(chunk, position);
      } else if (this.afterBackslash || this.hexLeft > 0) {
        if (!this.escapeByte(chunk[position])) return;
        position++;
      } else if (this.leavingOut) {
        const stop = this.stringStop(chunk, position);
        const control = firstControlCharacter(chunk, position, stop);
        if (control !== -1) return this.fail(controlMessage(chunk[control]), control);
        position = stop;
        if (position === length) break;
        if (chunk[position] === QUOTE) {
          this.leavingOut = false;
          this.inString = false;
          keepFrom = position;
        } else {
          this.backslash(position);
        }
        position++;
      } else {
        const byte = chunk[position];
        if (byte === QUOTE) {
          this.inString = false;
        } else if (this.stringBytes >= JSON_KEEP_BYTES && !this.isKey && (byte & 0xc0) !== 0x80) {
          // A character or escape boundary past the kept head of a value: the rest goes to the file only.
          this.keep(chunk, keepFrom, position);
          this.leavingOut = true;
          continue;
        } else if (byte === BACKSLASH) {
          this.backslash(position);
          this.stringBytes++;
        } else if (byte < SPACE) {
          return this.fail(controlMessage(byte), position);
        } else {
          this.stringBytes++;
        }
        position++;
      }
    }
    if (!this.leavingOut) this.keep(chunk, keepFrom, length);
  }

  /** Walks bytes outside strings up to and including an opening quote. */
  private structure(chunk: Buffer, start: number): number {
    for (let position = start; position < chunk.length; position++) {
      const byte = chunk[position];
      if (byte === QUOTE) {
        this.inString = true;
        this.stringBytes = 0;
        this.isKey =
          this.depth > 0 &&
          this.containers[Math.min(this.depth, TRACKED_DEPTH) - 1] === OPEN_BRACE &&
          (this.lastSignificant === OPEN_BRACE || this.lastSignificant === COMMA);
        // The string as a whole counts as significant (a value or a key), not its quote.
        this.lastSignificant = QUOTE;
        return position + 1;
      }
      if (byte === SPACE || byte === LINE_FEED || byte === CARRIAGE_RETURN || byte === TAB) continue;
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        if (this.depth < TRACKED_DEPTH) this.containers[this.depth] = byte;
        this.depth++;
      } else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && this.depth > 0) {
        this.depth--;
      }
      this.lastSignificant = byte;
    }
    return chunk.length;
  }

  private backslash(position: number): void {
    this.afterBackslash = true;
    this.escapeStart = this.chunkStart + position;
  }

  /**
   * The byte after a backslash, or one of the four hex digits of `\u`; false when it is invalid
   * (reported at the backslash, as the scanner does).
   */
  private escapeByte(byte: number): boolean {
    if (this.hexLeft > 0) {
      if (!isHexDigit(byte)) {
        this.fault = { message: 'invalid \\u escape sequence', position: this.escapeStart };
        return false;
      }
      this.hexLeft--;
    } else {
      this.afterBackslash = false;
      if (byte === LOWER_U) {
        this.hexLeft = 4;
      } else if (byte >= 128 || SIMPLE_ESCAPES[byte] !== 1) {
        this.fault = { message: 'invalid escape sequence', position: this.escapeStart };
        return false;
      }
    }
    this.stringBytes++;
    return true;
  }

  /**
   * The next quote or backslash at or after `from`, or the chunk's end. The quote's position is
   * kept for the chunk: a string full of escapes must not search the same stretch again for each.
   */
  private stringStop(chunk: Buffer, from: number): number {
    if (this.quoteChunk !== chunk || (this.quoteAt !== -1 && this.quoteAt < from)) {
      this.quoteChunk = chunk;
      this.quoteAt = chunk.indexOf(QUOTE, from);
    }
    const quote = this.quoteAt === -1 ? chunk.length : this.quoteAt;
    const backslash = chunk.indexOf(BACKSLASH, from);
    return backslash === -1 || backslash > quote ? quote : backslash;
  }

  private fail(message: string, position: number): void {
    this.fault = { message, position: this.chunkStart + position };
  }
}

function controlMessage(byte: number): string {
  return `unescaped control character 0x${byte.toString(16).padStart(2, '0')} in a string`;
}

/** The first byte below 0x20 in `bytes[from, to)`, or -1; four bytes at a time where aligned. */
export function firstControlCharacter(bytes: Buffer, from: number, to: number): number {
  let position = from;
  const aligned = Math.min(to, from + ((4 - ((bytes.byteOffset + from) & 3)) & 3));
  for (; position < aligned; position++) if (bytes[position] < SPACE) return position;
  const words = Math.max(0, (to - position) >> 2);
  if (words > 0) {
    const view = new Int32Array(bytes.buffer, bytes.byteOffset + position, words);
    let word = 0;
    while (word < words && ((view[word] - BELOW_SPACE) & ~view[word] & HIGH_BITS) === 0) word++;
    position += word * 4;
  }
  for (; position < to; position++) if (bytes[position] < SPACE) return position;
  return -1;
}

/** UTF-8 validity of a body that arrives in chunks (a character may be split between two). */
class Utf8Check {
  valid = true;
  private carry: Buffer | undefined;

  push(chunk: Buffer): void {
    if (!this.valid) return;
    const whole = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    const open = openSequenceLength(whole);
    this.carry = open > 0 ? Buffer.from(whole.subarray(whole.length - open)) : undefined;
    if (!isUtf8Bytes(whole.subarray(0, whole.length - open))) this.valid = false;
  }

  end(): void {
    if (this.carry) this.valid = false;
    this.carry = undefined;
  }
}

/** How many bytes at the end of `bytes` start a character that is not complete yet (0 to 3). */
function openSequenceLength(bytes: Buffer): number {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const byte = bytes[bytes.length - back];
    if ((byte & 0xc0) === 0x80) continue;
    if (byte < 0xc0) return 0;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return needed > back ? back : 0;
  }
  return 0;
}

/**
 * A `multipart/form-data` body: delimiters are found across chunk boundaries (the last bytes of a
 * chunk wait for the next one), each part is kept for its first FORM_KEEP_BYTES.
 */
export class FormSkeletonBuilder extends SkeletonBuilder {
  private readonly delimiter: Buffer;
  /** Bytes at the end of the previous chunk that could begin a delimiter. */
  private held = Buffer.alloc(0);
  /** Bytes of the current part seen so far. */
  private partBytes = 0;

  constructor(boundary: string) {
    super();
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  protected consume(chunk: Buffer): void {
    const window = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const windowStart = this.chunkStart - this.held.length;
    let position = 0;
    for (;;) {
      const found = window.indexOf(this.delimiter, position);
      if (found === -1) break;
      this.content(window, position, found, windowStart);
      this.keep(window, found, found + this.delimiter.length, windowStart + found);
      this.partBytes = 0;
      position = found + this.delimiter.length;
    }
    const undecided = Math.max(position, window.length - (this.delimiter.length - 1));
    this.content(window, position, undecided, windowStart);
    this.held = Buffer.from(window.subarray(undecided));
  }

  protected override flush(): void {
    this.content(this.held, 0, this.held.length, this.chunkStart - this.held.length);
    this.held = Buffer.alloc(0);
  }

  private content(window: Buffer, from: number, to: number, windowStart: number): void {
    const kept = Math.min(to - from, Math.max(0, FORM_KEEP_BYTES - this.partBytes));
    this.keep(window, from, from + kept, windowStart + from);
    this.partBytes += to - from;
  }
}
