import type { UsageDraft } from './usage-draft';
import { timestampText } from '../database/timestamp-text';

/**
 * A usage record as a line of COPY's text format, the form in which it waits for its batch and
 * goes to the database: tab-separated fields in the order of USAGE_COLUMNS, `\N` for NULL,
 * backslash, tab, newline and carriage return escaped with a backslash, the line ended by a
 * newline. Encoded once, when the call ends, the record leaves no objects behind for the
 * garbage collector to carry from the young generation to the old one while it waits.
 */
export const USAGE_COLUMNS = [
  'request_id',
  'client_request_id',
  'key_id',
  'owner_id',
  'model',
  'interface',
  'line',
  'translated_to',
  'status',
  'error_code',
  'stream',
  'usage',
  'cost_nano',
  'started_at',
  'duration_ms',
  'upstream_headers_ms',
  'tags',
  'end_user',
  'lines_tried',
  'price_sheet',
  'price_basis',
] as const;

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const NULL = '\\N';

function text(value: string | null): string {
  if (value === null) return NULL;
  return COPY_SPECIAL.test(value) ? value.replace(COPY_SPECIALS, (character) => COPY_ESCAPES[character]) : value;
}

const ARRAY_SPECIAL = /["\\]/;
const ARRAY_SPECIALS = /["\\]/g;
const ARRAY_ELEMENT = /"((?:[^"\\]|\\.)*)"/g;
const ARRAY_ESCAPED = /\\(.)/g;

/**
 * A text[] as COPY reads it: NULL for none (an empty list too), else an array literal with every
 * element quoted (unquoted, a tag spelled NULL would be a NULL element) and `"` and `\` escaped
 * inside the quotes; the literal is then escaped for COPY like any text.
 */
function textArray(values: readonly string[] | null): string {
  if (values === null || values.length === 0) return NULL;
  let literal = '{';
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    literal += `${index === 0 ? '"' : ',"'}${ARRAY_SPECIAL.test(value) ? value.replace(ARRAY_SPECIALS, '\\$&') : value}"`;
  }
  return text(`${literal}}`);
}

/** The elements of an array literal textArray wrote. */
function arrayOf(literal: string | null): string[] | null {
  if (literal === null) return null;
  return Array.from(literal.matchAll(ARRAY_ELEMENT), (match) => match[1].replace(ARRAY_ESCAPED, '$1'));
}

/** The record's line, newline included. Written out as one template: one string, one pass. */
export function usageLine(draft: UsageDraft): string {
  const usage = draft.usage ? text(JSON.stringify(draft.usage)) : NULL;
  const headersMs = draft.upstreamHeadersMs === null ? NULL : draft.upstreamHeadersMs;
  return `${text(draft.requestId)}\t${text(draft.clientRequestId)}\t${text(draft.keyId)}\t${text(draft.ownerId)}\t${text(draft.model)}\t${text(draft.interface)}\t${text(draft.line)}\t${text(draft.translatedTo)}\t${draft.status}\t${text(draft.errorCode)}\t${draft.stream ? 't' : 'f'}\t${usage}\t${draft.costNano}\t${timestampText(draft.startedAt)}\t${draft.durationMs}\t${headersMs}\t${textArray(draft.tags)}\t${text(draft.endUser)}\t${textArray(draft.linesTried)}\t${text(draft.priceSheet)}\t${draft.priceBasis ? text(JSON.stringify(draft.priceBasis)) : NULL}\n`;
}

const ESCAPED = /\\(.)/g;
const UNESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r' };

function field(raw: string): string | null {
  if (raw === NULL) return null;
  return raw.includes('\\') ? raw.replace(ESCAPED, (_, character: string) => UNESCAPES[character] ?? character) : raw;
}

/** The record a line holds (for the rare reader of a queued record: a lookup, a refusal, shutdown). */
export function draftOfLine(line: string): UsageDraft {
  const end = line.endsWith('\n') ? line.length - 1 : line.length;
  const fields = line.slice(0, end).split('\t').map(field);
  if (fields.length !== USAGE_COLUMNS.length) throw new Error(`a usage line has ${fields.length} fields, not ${USAGE_COLUMNS.length}`);
  const [
    requestId,
    clientRequestId,
    keyId,
    ownerId,
    model,
    interfaceName,
    lineName,
    translatedTo,
    status,
    errorCode,
    stream,
    usage,
    cost,
    startedAt,
    durationMs,
    headersMs,
    tags,
    endUser,
    linesTried,
    priceSheet,
    priceBasis,
  ] = fields;
  return {
    requestId: requestId!,
    clientRequestId,
    keyId: keyId!,
    ownerId: ownerId!,
    model: model!,
    interface: interfaceName!,
    line: lineName,
    translatedTo,
    status: Number(status),
    errorCode,
    stream: stream === 't',
    usage: usage === null ? undefined : JSON.parse(usage),
    costNano: BigInt(cost!),
    startedAt: new Date(startedAt!),
    durationMs: Number(durationMs),
    upstreamHeadersMs: headersMs === null ? null : Number(headersMs),
    tags: arrayOf(tags),
    endUser,
    linesTried: arrayOf(linesTried),
    priceSheet,
    priceBasis: priceBasis === null ? null : JSON.parse(priceBasis),
  };
}

/** Where a page's buffer starts (~500 lines of ~250 bytes); it doubles as lines come. */
const PAGE_BYTES = 128 * 1024;

/** Budget periods start at whole quarter hours in every time zone: a quarter's calls share their period. */
export const SPEND_SLOT_MS = 15 * 60_000;

/** What a page's calls of one key that started in one quarter hour cost. */
export interface SlotSpend {
  ownerId: string;
  keyId: string;
  /** The quarter hour's start (ms since the epoch). */
  slot: number;
  costNano: bigint;
}

/**
 * Up to a batch of lines in one byte buffer, with where each ends, and the cost summed as the
 * lines come (what the batch adds to spend when all of it is new): per owner, and per key and
 * quarter hour of the calls' start, from which each cost finds its budget period.
 */
export class UsagePage {
  private bytes: Buffer;
  private size = 0;
  private readonly ends: number[] = [];
  /** Lines before it were written one by one (a batch the database refused a record of). */
  private first = 0;
  readonly costs = new Map<string, bigint>();
  /** Per key and quarter hour: `<key id> <slot>` → its spend. */
  readonly slots = new Map<string, SlotSpend>();
  /** Taken for a write: lines that come later go to the next page. */
  sealed = false;

  constructor(bytes: Buffer = Buffer.allocUnsafe(PAGE_BYTES)) {
    this.bytes = bytes;
  }

  /** A page of the one line (the record it holds given), for a record written by itself. */
  static of(line: string, draft: UsageDraft): UsagePage {
    const page = new UsagePage(Buffer.allocUnsafe(line.length * 3));
    page.add(line, draft);
    return page;
  }

  get count(): number {
    return this.ends.length - this.first;
  }

  add(line: string, draft: UsageDraft): void {
    // At most three bytes per UTF-16 unit: room checked without measuring the line first.
    const room = line.length * 3;
    if (this.size + room > this.bytes.length) this.grow(this.size + room);
    this.size += this.bytes.write(line, this.size);
    this.ends.push(this.size);
    this.charge(draft, draft.costNano);
  }

  private charge(draft: UsageDraft, costNano: bigint): void {
    if (costNano === 0n) return;
    this.costs.set(draft.ownerId, (this.costs.get(draft.ownerId) ?? 0n) + costNano);
    const slot = draft.startedAt.getTime() - (draft.startedAt.getTime() % SPEND_SLOT_MS);
    const name = `${draft.keyId} ${slot}`;
    const spend = this.slots.get(name);
    if (spend) spend.costNano += costNano;
    else this.slots.set(name, { ownerId: draft.ownerId, keyId: draft.keyId, slot, costNano });
  }

  /** Every line, as the bytes COPY reads. */
  content(): Buffer {
    return this.bytes.subarray(this.start(this.first), this.size);
  }

  /** The index-th line still on the page. */
  line(index: number): string {
    const at = this.first + index;
    return this.bytes.toString('utf8', this.start(at), this.ends[at]);
  }

  /** Takes the first line off the page (written by itself, or set aside). */
  dropFirst(): void {
    const draft = draftOfLine(this.line(0));
    this.charge(draft, -draft.costNano);
    this.first += 1;
  }

  /** The line whose request id this is, if the page holds one. */
  find(requestId: string): string | undefined {
    const needle = `${text(requestId)}\t`;
    const start = this.start(this.first);
    let from = start;
    for (;;) {
      const at = this.bytes.indexOf(needle, from);
      if (at < 0 || at >= this.size) return undefined;
      if (at === start || this.bytes[at - 1] === 0x0a) return this.bytes.toString('utf8', at, this.bytes.indexOf(0x0a, at) + 1);
      from = at + 1;
    }
  }

  /** The page's buffer, for another page once this one is written. */
  release(): Buffer {
    const bytes = this.bytes;
    this.bytes = Buffer.alloc(0);
    return bytes;
  }

  private start(index: number): number {
    return index === 0 ? 0 : this.ends[index - 1];
  }

  private grow(needed: number): void {
    let length = this.bytes.length * 2;
    while (length < needed) length *= 2;
    const bytes = Buffer.allocUnsafe(length);
    this.bytes.copy(bytes, 0, 0, this.size);
    this.bytes = bytes;
  }
}

/** Buffers of written pages kept for new ones: a round of the writer makes a page or a few. */
const SPARE_BUFFERS = 4;

/**
 * Usage lines waiting for their batch: pages of at most `batchSize` lines, oldest first. The
 * pages' buffers are used again: a new buffer per batch would live through a few
 * young-generation collections, so it would be freed only by a full one, and V8, counting the
 * freed-to-be buffers as external memory, runs a full collection for them
 * (--trace-incremental-marking: "external memory pressure") and then keeps the old generation's
 * limit low, marking over and over.
 */
export class UsageQueue {
  private readonly pages: UsagePage[] = [];
  private readonly spare: Buffer[] = [];
  private queued = 0;

  constructor(private readonly batchSize: number) {}

  get depth(): number {
    return this.queued;
  }

  add(draft: UsageDraft): void {
    let page = this.pages[this.pages.length - 1];
    if (!page || page.sealed || page.count >= this.batchSize) {
      page = new UsagePage(this.spare.pop());
      this.pages.push(page);
    }
    page.add(usageLine(draft), draft);
    this.queued += 1;
  }

  /** The next batch: the oldest page, sealed so that it stays as it is while it is written. */
  next(): UsagePage | undefined {
    const page = this.pages[0];
    if (page) page.sealed = true;
    return page;
  }

  /**
   * The oldest page is written: off the queue, its buffer kept for a new page. (COPY has read it
   * by then: the embedded engine's Blob holds a copy, and on PostgreSQL the COPY finishes when
   * the server has taken every byte.)
   */
  dropNext(): void {
    const page = this.pages.shift();
    if (!page) return;
    this.queued -= page.count;
    if (this.spare.length < SPARE_BUFFERS) this.spare.push(page.release());
  }

  /** The oldest line is written or set aside: off the queue. */
  dropFirstLine(): void {
    const page = this.pages[0];
    if (!page) return;
    page.dropFirst();
    this.queued -= 1;
    if (page.count === 0) this.pages.shift();
  }

  find(requestId: string): string | undefined {
    for (const page of this.pages) {
      const line = page.find(requestId);
      if (line !== undefined) return line;
    }
    return undefined;
  }

  /** Every queued line, oldest first. */
  *lines(): Generator<string> {
    for (const page of this.pages) for (let index = 0; index < page.count; index++) yield page.line(index);
  }
}
