import { FORM_KEEP_BYTES, FormSkeletonBuilder, JSON_KEEP_BYTES, JsonSkeletonBuilder, Skeleton, firstControlCharacter } from './body-skeleton';
import { scanTopLevel } from './json-scan';
import { splicedParts } from './json-splice';
import { parseForm, partText, replacePart } from './multipart-form';

/** Feeds `body` in chunks of the given sizes (cycled), as a socket would. */
function pushed<T extends JsonSkeletonBuilder | FormSkeletonBuilder>(builder: T, body: Buffer, sizes: number[]): T {
  for (let position = 0, turn = 0; position < body.length; turn++) {
    const size = sizes[turn % sizes.length];
    builder.push(body.subarray(position, position + size));
    position += size;
  }
  return builder;
}

/** The body a set of skeleton pieces stands for: pieces cut from the skeleton become the body's ranges. */
function expand(skeleton: Skeleton, body: Buffer, parts: Buffer[]): Buffer {
  return Buffer.concat(
    parts.map((part) => {
      if (part.buffer !== skeleton.bytes.buffer) return part;
      const offset = part.byteOffset - skeleton.bytes.byteOffset;
      return body.subarray(skeleton.map.bodyOffset(offset), skeleton.map.bodyOffset(offset + part.length));
    }),
  );
}

/**
 * Byte equality of two buffers. Jest's `toEqual` walks a Buffer element by element, which on
 * these megabyte bodies costs minutes; on a mismatch this still names where the bytes part.
 */
function expectSameBytes(actual: Buffer, expected: Buffer): void {
  if (actual.equals(expected)) return;
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  const around = (bytes: Buffer): string => bytes.subarray(at, at + 40).toString('latin1');
  expect({ length: actual.length, differsAt: at, around: around(actual) }).toEqual({ length: expected.length, differsAt: -1, around: around(expected) });
}

const CHUNKINGS = [[1 << 16], [1], [7, 4093, 3], [JSON_KEEP_BYTES - 1, 2], [100_000]];

const LONG = 'QUJD'.repeat(50_000);

/** Bodies with long strings in every place the skeleton must handle. */
const VALID_BODIES: Array<[string, string]> = [
  [
    'a base64 data URL in a message',
    JSON.stringify({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${LONG}` } }] }] }),
  ],
  ['a long top-level string before model', `{"prompt":"${LONG}","model":"m","stream":true}`],
  ['escapes all through a long string', JSON.stringify({ model: 'm', text: 'a\\/b\n\u00e9\u{1f600}"'.repeat(30_000) })],
  ['escaped slashes every 64 bytes (PHP style)', `{"model":"m","image":"${('A'.repeat(62) + '\\/').repeat(20_000)}"}`],
  ['multi-byte characters at every offset', JSON.stringify({ model: 'm', text: '\u00e9\u4e2d\u{1f600}x'.repeat(40_000) })],
  ['\\u escapes straddling the cut', `{"model":"m","t":"${'x'.repeat(JSON_KEEP_BYTES - 3)}${'\\u00e9'.repeat(20_000)}"}`],
  ['a long key kept whole', `{"${'k'.repeat(JSON_KEEP_BYTES * 3)}":"${LONG}","model":"m"}`],
  ['long strings in arrays and nested objects', JSON.stringify({ model: 'm', a: [LONG, { b: LONG, c: [LONG] }], d: LONG })],
  ['whitespace everywhere', `{ \n"model" : "m" ,\t"x" : [ "${LONG}" , "${LONG}" ] \r\n}`],
  ['a top-level string (valid JSON, not an object)', JSON.stringify(LONG)],
];

const INVALID_BODIES: Array<[string, string]> = [
  ['a control character deep in a long string', `{"model":"m","t":"${LONG}\u0001${LONG}"}`],
  ['an invalid escape deep in a long string', `{"model":"m","t":"${LONG}\\q${LONG}"}`],
  ['an invalid \\u escape deep in a long string', `{"model":"m","t":"${LONG}\\u12G4"}`],
  ['an unterminated long string', `{"model":"m","t":"${LONG}`],
  ['a repeated key after a long string', `{"model":"m","t":"${LONG}","model":"n"}`],
  ['a missing comma after a long string', `{"t":"${LONG}" "model":"m"}`],
];

describe('JsonSkeletonBuilder', () => {
  describe.each(VALID_BODIES)('with %s', (_, text) => {
    const body = Buffer.from(text);
    const whole = scanTopLevel(body);

    it.each(CHUNKINGS)('gives a small skeleton that scans like the body, chunks of %p', (...sizes) => {
      const builder = pushed(new JsonSkeletonBuilder(), body, sizes);
      const skeleton = builder.finish();
      expect(builder.fault).toBeUndefined();
      expect(builder.isUtf8).toBe(true);
      const scan = scanTopLevel(skeleton.bytes);
      expect(scan.ok).toBe(whole.ok);
      if (!scan.ok || !whole.ok) return;
      expect([...scan.fields.keys()]).toEqual([...whole.fields.keys()]);
      for (const [key, field] of scan.fields) {
        const original = whole.fields.get(key)!;
        expect([skeleton.map.bodyOffset(field.valueStart), skeleton.map.bodyOffset(field.valueEnd)]).toEqual([original.valueStart, original.valueEnd]);
      }
      if (whole.fields.has('model')) {
        const replaced = new Map([['model', '"upstream-model"']]);
        expectSameBytes(expand(skeleton, body, splicedParts(skeleton.bytes, scan.fields, replaced)), Buffer.concat(splicedParts(body, whole.fields, replaced)));
        expect(skeleton.bytes.length).toBeLessThan(body.length);
      }
    });
  });

  it('leaves out the rest of a long string value, not its head', () => {
    const body = Buffer.from(`{"model":"m","image":"data:image/png;base64,${LONG}"}`);
    const skeleton = pushed(new JsonSkeletonBuilder(), body, [1 << 16]).finish();
    expect(skeleton.bytes.length).toBeLessThan(JSON_KEEP_BYTES + 64);
    expect(skeleton.bytes.toString()).toContain('"image":"data:image/png;base64,QUJD');
    expect(JSON.parse(skeleton.bytes.toString()).model).toBe('m');
  });

  describe.each(INVALID_BODIES)('with %s', (_, text) => {
    const body = Buffer.from(text);

    it.each(CHUNKINGS)('is refused as the body would be, chunks of %p', (...sizes) => {
      expect(scanTopLevel(body).ok).toBe(false);
      const builder = pushed(new JsonSkeletonBuilder(), body, sizes);
      const skeleton = builder.finish();
      expect(builder.fault !== undefined || !scanTopLevel(skeleton.bytes).ok).toBe(true);
    });
  });

  it('names the body offset of a fault it finds in what it leaves out', () => {
    const text = `{"model":"m","t":"${LONG}\u0001"}`;
    const builder = pushed(new JsonSkeletonBuilder(), Buffer.from(text), [1000]);
    builder.finish();
    expect(builder.fault).toEqual({ message: 'unescaped control character 0x01 in a string', position: text.indexOf('\u0001') });
  });

  it.each([
    ['\\q', 'invalid escape sequence'],
    ['\\u12G4', 'invalid \\u escape sequence'],
  ])('names the backslash of an invalid escape %s it leaves out, as the scanner does, however the chunks fall', (escape, message) => {
    const text = `{"model":"m","t":"${LONG}${escape}"}`;
    const at = text.indexOf('\\');
    for (const sizes of [[at + 1], [at + 2], [3], [1 << 16]]) {
      const builder = pushed(new JsonSkeletonBuilder(), Buffer.from(text), sizes);
      builder.finish();
      expect(builder.fault).toEqual({ message, position: at });
      expect(scanTopLevel(Buffer.from(text))).toMatchObject({ message: `Request body is not valid JSON: ${message} at byte ${at}.` });
    }
  });

  it.each([
    ['a byte that is never UTF-8', Buffer.concat([Buffer.from(`{"model":"m","t":"${LONG}`), Buffer.from([0xff]), Buffer.from('"}')])],
    ['a truncated character at the end of a chunk', Buffer.concat([Buffer.from(`{"model":"m","t":"${LONG}`), Buffer.from([0xe4, 0xb8]), Buffer.from('"}')])],
    ['a body ending inside a character', Buffer.concat([Buffer.from(`{"model":"m","t":"${LONG}"}`), Buffer.from([0xe4])])],
  ])('finds %s in the whole body', (_, body) => {
    for (const sizes of CHUNKINGS) {
      const builder = pushed(new JsonSkeletonBuilder(), body, sizes);
      builder.finish();
      expect(builder.isUtf8).toBe(false);
    }
  });

  it('keeps characters split between chunks valid', () => {
    const body = Buffer.from(JSON.stringify({ model: 'm', t: '\u{1f600}'.repeat(100_000) }));
    const builder = pushed(new JsonSkeletonBuilder(), body, [3, 5, 7]);
    builder.finish();
    expect(builder.isUtf8).toBe(true);
  });
});

const BOUNDARY = '----spooled-form';
function form(parts: Array<{ name: string; filename?: string; content: Buffer | string }>, options: { preamble?: string } = {}): Buffer {
  const pieces: Buffer[] = [Buffer.from(options.preamble ?? '')];
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`;
    pieces.push(
      Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="${part.name}"${filename}\r\n\r\n`),
      Buffer.from(part.content),
      Buffer.from('\r\n'),
    );
  }
  pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(pieces);
}

/** File content with near-misses of the delimiter, split across chunk boundaries by some chunkings. */
const FILE = Buffer.concat([Buffer.alloc(300_000, 0x5a), Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}X`), Buffer.alloc(200_000, 0x01), Buffer.from('\r\n-')]);

const FORMS: Array<[string, Buffer]> = [
  [
    'a large file after the fields',
    form([
      { name: 'model', content: 'image-a' },
      { name: 'prompt', content: 'Make it blue.' },
      { name: 'image', filename: 'a.png', content: FILE },
    ]),
  ],
  [
    'the model after two large files',
    form([
      { name: 'image[]', filename: 'a.png', content: FILE },
      { name: 'image[]', filename: 'b.png', content: FILE },
      { name: 'model', content: 'image-a' },
    ]),
  ],
  [
    'a preamble and a long text field',
    form(
      [
        { name: 'model', content: 'image-a' },
        { name: 'prompt', content: 'p'.repeat(FORM_KEEP_BYTES / 2) },
        { name: 'mask', filename: 'm.png', content: FILE },
      ],
      { preamble: 'preamble\r\n' },
    ),
  ],
  [
    'a file longer than the kept head by one byte',
    form([
      { name: 'model', content: 'image-a' },
      { name: 'image', filename: 'a.png', content: Buffer.alloc(FORM_KEEP_BYTES + 1, 0x41) },
    ]),
  ],
];

describe('FormSkeletonBuilder', () => {
  describe.each(FORMS)('with %s', (_, body) => {
    const whole = parseForm(body, BOUNDARY);

    it.each([...CHUNKINGS, [BOUNDARY.length + 3]])('parses like the body and splices to the same bytes, chunks of %p', (...sizes) => {
      const skeleton = pushed(new FormSkeletonBuilder(BOUNDARY), body, sizes).finish();
      const parsed = parseForm(skeleton.bytes, BOUNDARY);
      expect(whole.ok && parsed.ok).toBe(true);
      if (!whole.ok || !parsed.ok) return;
      expect(parsed.parts.map(({ name, filename }) => ({ name, filename }))).toEqual(whole.parts.map(({ name, filename }) => ({ name, filename })));
      parsed.parts.forEach((part, index) => {
        const original = whole.parts[index];
        expect([skeleton.map.bodyOffset(part.contentStart), skeleton.map.bodyOffset(part.contentEnd)]).toEqual([original.contentStart, original.contentEnd]);
        if (part.filename === undefined) expect(partText(skeleton.bytes, part)).toBe(partText(body, original));
      });
      const model = parsed.parts.find((part) => part.name === 'model')!;
      const originalModel = whole.parts.find((part) => part.name === 'model')!;
      expectSameBytes(
        expand(skeleton, body, replacePart(skeleton.bytes, model, 'vendor-image')),
        Buffer.concat(replacePart(body, originalModel, 'vendor-image')),
      );
      expect(skeleton.bytes.length).toBeLessThan(body.length);
    });
  });

  it('gives a skeleton that fails to parse when the body does', () => {
    const body = form([
      { name: 'model', content: 'image-a' },
      { name: 'image', filename: 'a.png', content: FILE },
    ]).subarray(0, -30);
    expect(parseForm(body, BOUNDARY).ok).toBe(false);
    expect(parseForm(pushed(new FormSkeletonBuilder(BOUNDARY), body, [4096]).finish().bytes, BOUNDARY).ok).toBe(false);
  });
});

describe(firstControlCharacter.name, () => {
  it('finds the first byte below 0x20 at any alignment, or -1', () => {
    const bytes = Buffer.alloc(300, 0x41);
    expect(firstControlCharacter(bytes, 0, bytes.length)).toBe(-1);
    for (const at of [0, 1, 2, 3, 4, 5, 63, 64, 150, 298, 299]) {
      const copy = Buffer.from(bytes);
      copy[at] = 0x1f;
      for (const from of [0, 1, 2, 3]) expect(firstControlCharacter(copy, from, copy.length)).toBe(at >= from ? at : -1);
      expect(firstControlCharacter(copy, 0, at)).toBe(-1);
    }
    const high = Buffer.alloc(64, 0xe9);
    expect(firstControlCharacter(high, 0, 64)).toBe(-1);
  });
});
