/**
 * Server-sent events, read side, in layers (STYLE.md "SSE in layers"):
 * bytes → raw events (`SseEventSplitter`, for pass-through piping) → fields (`parseSseEvent`)
 * → events a chunk at a time (`SseDecoder`, for translation) or as an async stream (`decodeSse`).
 * JSON and meaning belong to the protocol decoders above this file.
 *
 * Everything below the parse step works on bytes, so a multi-byte UTF-8 character split across
 * chunks is only decoded once its event is complete.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */

export interface SseEvent {
  /** The `event:` field; absent means the default type, "message". */
  event?: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  id?: string;
  /** Reconnection time in milliseconds. */
  retry?: number;
}

const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const BYTE_ORDER_MARK = 0xfeff;
const COLON = 0x3a;
const SPACE = 0x20;
const DIGIT_ZERO = 0x30;
const DIGIT_NINE = 0x39;

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function indexOrLength(chunk: Buffer, byte: number, from: number): number {
  const found = chunk.indexOf(byte, from);
  return found === -1 ? chunk.length : found;
}

/**
 * Cuts a byte stream into complete raw events, each with its terminating blank line and bytes
 * exactly as received: concatenating every output (flush included) reproduces the input.
 *
 * Returned buffers may share memory with the pushed chunks (an event inside one chunk is a view,
 * not a copy), so chunks must not be reused by the caller afterwards.
 *
 * When a CR ends a chunk and closes an event, that event is handed out at once rather than held
 * back to see whether a LF follows; if one does, it comes out alone as a one-byte buffer "\n",
 * which carries no event (`parseSseEvent` returns undefined for it).
 */
export class SseEventSplitter {
  /** Bytes of the event in progress: views into earlier chunks, copied once when it completes. */
  private pending: Buffer[] = [];
  /** Nothing has been seen since the last line end, so a line end now makes a blank line. */
  private lineIsEmpty = true;
  /** The previous chunk ended with CR: a LF opening the next chunk belongs to that line end. */
  private endedWithCarriageReturn = false;

  push(input: Uint8Array): Buffer[] {
    const chunk = asBuffer(input);
    const events: Buffer[] = [];
    if (chunk.length === 0) return events;
    let position = 0;
    let eventStart = 0;
    if (this.endedWithCarriageReturn) {
      this.endedWithCarriageReturn = false;
      if (chunk[0] === LINE_FEED) {
        position = 1;
        if (this.pending.length === 0) {
          events.push(chunk.subarray(0, 1));
          eventStart = 1;
        }
      }
    }
    // Cached so that each line costs one native search, not two.
    let nextLineFeed = -1;
    let nextCarriageReturn = -1;
    while (position < chunk.length) {
      if (nextLineFeed < position) nextLineFeed = indexOrLength(chunk, LINE_FEED, position);
      if (nextCarriageReturn < position) nextCarriageReturn = indexOrLength(chunk, CARRIAGE_RETURN, position);
      const lineEnd = Math.min(nextLineFeed, nextCarriageReturn);
      if (lineEnd === chunk.length) {
        this.lineIsEmpty = false;
        break;
      }
      const isBlankLine = this.lineIsEmpty && lineEnd === position;
      position = this.skipLineEnd(chunk, lineEnd);
      this.lineIsEmpty = true;
      if (isBlankLine) {
        events.push(this.takeEvent(chunk, eventStart, position));
        eventStart = position;
      }
    }
    if (eventStart < chunk.length) this.pending.push(chunk.subarray(eventStart));
    return events;
  }

  /**
   * Whether the next byte starts an event: nothing of an event waits, and no CR ended the last
   * chunk (a LF opening the next one would belong to it).
   */
  isAtEventStart(): boolean {
    return this.pending.length === 0 && !this.endedWithCarriageReturn;
  }

  /** Returns what is left at the end of the stream: an event missing its blank line, if any. */
  flush(): Buffer[] {
    const rest = this.pending;
    this.pending = [];
    this.lineIsEmpty = true;
    this.endedWithCarriageReturn = false;
    if (rest.length === 0) return [];
    return [rest.length === 1 ? rest[0] : Buffer.concat(rest)];
  }

  /** Returns the position after the line end at `lineEnd` (LF, CR or CRLF). */
  private skipLineEnd(chunk: Buffer, lineEnd: number): number {
    if (chunk[lineEnd] === LINE_FEED) return lineEnd + 1;
    if (lineEnd + 1 === chunk.length) {
      this.endedWithCarriageReturn = true;
      return lineEnd + 1;
    }
    return chunk[lineEnd + 1] === LINE_FEED ? lineEnd + 2 : lineEnd + 1;
  }

  private takeEvent(chunk: Buffer, start: number, end: number): Buffer {
    const tail = chunk.subarray(start, end);
    if (this.pending.length === 0) return tail;
    this.pending.push(tail);
    const event = Buffer.concat(this.pending);
    this.pending = [];
    return event;
  }
}

/** Fields of one event while its lines are read. */
interface EventFields {
  event: string;
  data: string | undefined;
  id: string | undefined;
  retry: number | undefined;
}

/**
 * Reads the fields of one raw event (as `SseEventSplitter` returns it). Returns undefined when
 * the event has no `data:` line, as the WHATWG algorithm dispatches nothing then (comments,
 * keep-alives, a bare `id:`). A leading byte order mark is ignored; the splitter only ever
 * leaves one at the start of the first event.
 */
export function parseSseEvent(raw: Uint8Array): SseEvent | undefined {
  const text = asBuffer(raw).toString('utf8');
  const fields: EventFields = { event: '', data: undefined, id: undefined, retry: undefined };
  let start = text.charCodeAt(0) === BYTE_ORDER_MARK ? 1 : 0;
  let nextLineFeed = -1;
  let nextCarriageReturn = -1;
  while (start < text.length) {
    if (nextLineFeed < start) nextLineFeed = textIndexOrLength(text, '\n', start);
    if (nextCarriageReturn < start) nextCarriageReturn = textIndexOrLength(text, '\r', start);
    const end = Math.min(nextLineFeed, nextCarriageReturn);
    if (end > start) applyLine(fields, text, start, end);
    start = end === nextCarriageReturn && nextLineFeed === end + 1 ? end + 2 : end + 1;
  }
  if (fields.data === undefined) return undefined;
  return { event: fields.event === '' ? undefined : fields.event, data: fields.data, id: fields.id, retry: fields.retry };
}

function textIndexOrLength(text: string, character: string, from: number): number {
  const found = text.indexOf(character, from);
  return found === -1 ? text.length : found;
}

/** Applies one non-empty line `text[start, end)`: "name:value", "name: value", "name" or ":comment". */
function applyLine(fields: EventFields, text: string, start: number, end: number): void {
  if (text.charCodeAt(start) === COLON) return;
  let colon = text.indexOf(':', start);
  if (colon === -1 || colon > end) colon = end;
  let valueStart = colon + 1;
  if (valueStart < end && text.charCodeAt(valueStart) === SPACE) valueStart++;
  const value = valueStart < end ? text.slice(valueStart, end) : '';
  const nameLength = colon - start;
  if (nameLength === 4 && text.startsWith('data', start)) {
    fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
  } else if (nameLength === 5 && text.startsWith('event', start)) {
    fields.event = value;
  } else if (nameLength === 2 && text.startsWith('id', start)) {
    if (!value.includes('\u0000')) fields.id = value;
  } else if (nameLength === 5 && text.startsWith('retry', start)) {
    if (isDigits(value)) fields.retry = Number(value);
  }
}

function isDigits(value: string): boolean {
  if (value === '') return false;
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code < DIGIT_ZERO || code > DIGIT_NINE) return false;
  }
  return true;
}

/**
 * Bytes to events, synchronously: `push` returns the events a chunk completes, `end` what the
 * end of the stream completes. The translated stream loop reads through this, with no promise
 * per event.
 *
 * At the end of the stream an event missing its blank line is still dispatched when its last
 * line is complete (some servers omit the final blank line), but not when it stops mid-line:
 * that is a cut connection, and WHATWG discards the partial event.
 */
export class SseDecoder {
  private readonly splitter = new SseEventSplitter();

  push(chunk: Uint8Array): SseEvent[] {
    const events: SseEvent[] = [];
    for (const raw of this.splitter.push(chunk)) {
      const event = parseSseEvent(raw);
      if (event !== undefined) events.push(event);
    }
    return events;
  }

  end(): SseEvent[] {
    const events: SseEvent[] = [];
    for (const raw of this.splitter.flush()) {
      const last = raw[raw.length - 1];
      if (last !== LINE_FEED && last !== CARRIAGE_RETURN) continue;
      const event = parseSseEvent(raw);
      if (event !== undefined) events.push(event);
    }
    return events;
  }
}

/**
 * Decodes a byte stream into an async stream of events (SseDecoder's rules). Returning early
 * closes `source`, which lets the caller abort the upstream request.
 */
export async function* decodeSse(source: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new SseDecoder();
  for await (const chunk of source) yield* decoder.push(chunk);
  yield* decoder.end();
}
