import { randomBytes } from 'node:crypto';
import { type FormParse, type FormPart, formBoundary, parseForm, partText, replacePart } from './multipart-form';

const BOUNDARY = 'gw-test-7MA4YWxkTrZu0gW';

/** One part as it appears on the wire, opening delimiter line included (without its leading CRLF). */
function part(headers: string[], content: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n${headers.join('\r\n')}\r\n\r\n`, 'utf8'), Buffer.from(content), Buffer.from('\r\n')]);
}

function field(name: string, value: string | Buffer): Buffer {
  return part([`Content-Disposition: form-data; name="${name}"`], value);
}

function file(name: string, filename: string, content: Buffer, type = 'image/png'): Buffer {
  return part([`Content-Disposition: form-data; name="${name}"; filename="${filename}"`, `Content-Type: ${type}`], content);
}

/** The parts, then the close delimiter. */
function form(...parts: Buffer[]): Buffer {
  return Buffer.concat([...parts, Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

function partsOf(result: FormParse): FormPart[] {
  if (!result.ok) throw new Error(`expected a valid form, got: ${result.message}`);
  return result.parts;
}

/** name → text of every part, in order. */
function entries(body: Buffer, boundary = BOUNDARY): Array<[string, string]> {
  return partsOf(parseForm(body, boundary)).map((found) => [found.name, partText(body, found)]);
}

function refusal(body: Buffer, boundary = BOUNDARY): string {
  const result = parseForm(body, boundary);
  if (result.ok) throw new Error(`expected a refusal, got ${result.parts.length} parts`);
  return result.message;
}

/** A platform `Request` carrying `body` as the given multipart content type. */
function platformRequest(body: Buffer | FormData, contentType?: string): Request {
  return new Request('http://gateway.test/v1/images/edits', {
    method: 'POST',
    ...(contentType ? { headers: { 'content-type': contentType } } : {}),
    body,
  });
}

describe(formBoundary.name, () => {
  it.each([
    ['multipart/form-data; boundary=abc123', 'abc123'],
    ['multipart/form-data;boundary=abc123', 'abc123'],
    ['multipart/form-data; boundary="quoted value:with=specials"', 'quoted value:with=specials'],
    ['Multipart/Form-Data; BOUNDARY=CaseKept', 'CaseKept'],
    ['  multipart/form-data  ; charset=utf-8; boundary=after-charset', 'after-charset'],
    ['multipart/form-data; boundary=first; boundary=second', 'first'],
    ['multipart/form-data; boundary==starts-with-equals', '=starts-with-equals'],
    [`multipart/form-data; boundary=${'b'.repeat(70)}`, 'b'.repeat(70)],
  ])('reads %j as %j', (contentType, boundary) => {
    expect(formBoundary(contentType)).toBe(boundary);
  });

  it.each([
    ['no boundary parameter', 'multipart/form-data'],
    ['a parameter without a value', 'multipart/form-data; boundary'],
    ['an empty boundary', 'multipart/form-data; boundary='],
    ['an empty quoted boundary', 'multipart/form-data; boundary=""'],
    ['a boundary over 70 characters', `multipart/form-data; boundary=${'b'.repeat(71)}`],
    ['a quoted boundary over 70 characters', `multipart/form-data; boundary="${'b'.repeat(71)}"`],
  ])('gives an empty boundary (a form without a valid boundary) for %s', (_case, contentType) => {
    expect(formBoundary(contentType)).toBe('');
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['JSON', 'application/json'],
    ['JSON with a boundary-like parameter', 'application/json; boundary=abc'],
    ['another multipart type', 'multipart/mixed; boundary=abc'],
    ['url-encoded form', 'application/x-www-form-urlencoded'],
  ])('gives undefined (not a form) for a content type that is %s', (_case, contentType) => {
    expect(formBoundary(contentType)).toBeUndefined();
  });

  it('feeds parseForm: an empty boundary is refused', () => {
    expect(refusal(form(field('model', 'm')), formBoundary('multipart/form-data; boundary=')!)).toMatch(/boundary/);
  });
});

describe(parseForm.name, () => {
  it('records each part with its name, file name and exact content range', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00]);
    const body = form(field('model', 'gpt-image-1'), field('prompt', 'a red fox'), file('image[]', 'fox.png', png));

    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(parts.map(({ name, filename }) => ({ name, filename }))).toEqual([
      { name: 'model', filename: undefined },
      { name: 'prompt', filename: undefined },
      { name: 'image[]', filename: 'fox.png' },
    ]);
    expect(Object.keys(parts[0])).not.toContain('filename');
    expect(partText(body, parts[0])).toBe('gpt-image-1');
    expect(partText(body, parts[1])).toBe('a red fox');
    expect(body.subarray(parts[2].contentStart, parts[2].contentEnd)).toEqual(png);
    // The range is exact: the bytes around it are the header end and the next delimiter.
    expect(body.toString('latin1', parts[0].contentStart - 4, parts[0].contentStart)).toBe('\r\n\r\n');
    expect(body.toString('latin1', parts[0].contentEnd, parts[0].contentEnd + 4 + BOUNDARY.length)).toBe(`\r\n--${BOUNDARY}`);
  });

  it('ignores a preamble and an epilogue', () => {
    const body = Buffer.concat([
      Buffer.from(`This is the preamble; it may mention --${BOUNDARY}X without a line break before it.\r\n`),
      form(field('model', 'm'), field('prompt', 'p')),
      Buffer.from(`epilogue\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="hidden"\r\n\r\nafter the end\r\n`),
    ]);

    expect(entries(body)).toEqual([
      ['model', 'm'],
      ['prompt', 'p'],
    ]);
  });

  it('accepts a first delimiter at the very start and one after a line break', () => {
    const body = form(field('model', 'm'));
    expect(entries(body)).toEqual([['model', 'm']]);
    expect(entries(Buffer.concat([Buffer.from('\r\n'), body]))).toEqual([['model', 'm']]);
  });

  it('does not take a delimiter that is not at a line start for the first one', () => {
    const body = Buffer.concat([Buffer.from('x'), form(field('model', 'm'))]);
    // "x--boundary" is preamble text; the first real delimiter is the close delimiter.
    expect(refusal(body)).toMatch(/no parts/);
  });

  it('accepts transport padding (spaces and tabs) after a delimiter', () => {
    const body = Buffer.from(
      [
        `--${BOUNDARY} \t `,
        'Content-Disposition: form-data; name="model"',
        '',
        'm',
        `--${BOUNDARY}\t`,
        'Content-Disposition: form-data; name="prompt"',
        '',
        'p',
        `--${BOUNDARY}--  `,
        '',
      ].join('\r\n'),
    );

    expect(entries(body)).toEqual([
      ['model', 'm'],
      ['prompt', 'p'],
    ]);
  });

  it('accepts a close delimiter that ends the body without a line break', () => {
    const body = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--${BOUNDARY}--`);
    expect(entries(body)).toEqual([['model', 'm']]);
  });

  it('reads empty part contents as empty ranges', () => {
    const body = form(field('model', 'm'), field('prompt', ''), file('image', 'empty.png', Buffer.alloc(0)));
    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(parts.map((found) => found.contentEnd - found.contentStart)).toEqual([1, 0, 0]);
    expect(partText(body, parts[1])).toBe('');
    expect(parts[2].filename).toBe('empty.png');
  });

  it('reads UTF-8 names and file names', () => {
    const body = form(field('légende', 'été'), file('画像', 'ñandú 🦤.png', Buffer.from([1, 2, 3])));
    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(parts.map((found) => found.name)).toEqual(['légende', '画像']);
    expect(parts[1].filename).toBe('ñandú 🦤.png');
    expect(partText(body, parts[0])).toBe('été');
  });

  it('reads quoted names with escaped quotes and semicolons, and parameters in any order and case', () => {
    const body = form(
      part(['Content-Disposition: form-data; name="a\\"b;c=d"'], 'one'),
      part(['content-disposition:Form-Data;FILENAME="x;y.png";  NAME = "pic" '], 'two'),
      part(['Content-Type: text/plain', 'Content-Disposition: form-data; name=unquoted'], 'three'),
    );
    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(parts.map(({ name, filename }) => [name, filename])).toEqual([
      ['a"b;c=d', undefined],
      ['pic', 'x;y.png'],
      ['unquoted', undefined],
    ]);
    expect(parts.map((found) => partText(body, found))).toEqual(['one', 'two', 'three']);
  });

  it('keeps binary content with CR, LF, "--" and near-boundaries that are not the delimiter', () => {
    const tricky = Buffer.concat([
      Buffer.from([0x00, 0xff, 0x0d, 0x0a, 0x0d, 0x0a, 0x00]),
      Buffer.from(`--${BOUNDARY}`), // no line break right before: not a delimiter
      Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}`), // a line starting with a shorter boundary
      Buffer.from('\r\n----\r\n--\r\n\r\n'),
      Buffer.from(`\r\n-${BOUNDARY}`),
      Buffer.from([0x0d, 0x0a]),
    ]);
    const body = form(field('model', 'm'), file('image', 'x.bin', tricky, 'application/octet-stream'), field('prompt', 'after'));
    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(parts.map((found) => found.name)).toEqual(['model', 'image', 'prompt']);
    expect(body.subarray(parts[1].contentStart, parts[1].contentEnd)).toEqual(tricky);
    expect(partText(body, parts[2])).toBe('after');
  });

  it('finds the parts of a large body of random bytes', () => {
    const random = randomBytes(3 * 1024 * 1024);
    const body = form(field('model', 'm'), file('image', 'big.bin', random), field('prompt', 'p'));
    const parts = partsOf(parseForm(body, BOUNDARY));

    expect(body.subarray(parts[1].contentStart, parts[1].contentEnd).equals(random)).toBe(true);
    expect(partText(body, parts[2])).toBe('p');
  });

  it.each<[string, string | Buffer, RegExp]>([
    ['an empty body', '', /no part delimited by its boundary/],
    ['a body without the boundary', 'model=m&prompt=p', /no part delimited by its boundary/],
    ['a body with another boundary', '--other\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--other--', /no part delimited/],
    ['only a close delimiter', `--${BOUNDARY}--\r\n`, /no parts/],
    [
      'a delimiter followed by text',
      `--${BOUNDARY}X\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--${BOUNDARY}--`,
      /not followed by a line break/,
    ],
    ['a delimiter followed by a bare LF', `--${BOUNDARY}\nContent-Disposition: form-data; name="model"\n\nm\n--${BOUNDARY}--`, /./],
    ['no closing delimiter', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n`, /does not end with the closing boundary/],
    [
      'a body that ends right after a delimiter',
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--${BOUNDARY}`,
      /not followed by a line break/,
    ],
    [
      'a body that ends after a delimiter line',
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--${BOUNDARY}\r\n`,
      /no complete header section/,
    ],
    ['a part without a header section end', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\nm`, /no complete header section/],
    ['a part without headers', `--${BOUNDARY}\r\n\r\nm\r\n--${BOUNDARY}--`, /Content-Disposition/],
    ['a part without Content-Disposition', `--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nm\r\n--${BOUNDARY}--`, /Content-Disposition/],
    [
      'a Content-Disposition without a name',
      `--${BOUNDARY}\r\nContent-Disposition: form-data; filename="a.png"\r\n\r\nm\r\n--${BOUNDARY}--`,
      /Content-Disposition/,
    ],
    [
      'a Content-Disposition that is not form-data',
      `--${BOUNDARY}\r\nContent-Disposition: attachment; name="model"\r\n\r\nm\r\n--${BOUNDARY}--`,
      /Content-Disposition/,
    ],
    [
      'a second part without a name',
      Buffer.concat([field('model', 'm'), part(['Content-Disposition: form-data'], 'x'), Buffer.from(`--${BOUNDARY}--`)]),
      /Content-Disposition/,
    ],
  ])('refuses %s', (_case, body, message) => {
    const text = refusal(Buffer.isBuffer(body) ? body : Buffer.from(body));
    expect(text).toMatch(/^The multipart\/form-data body /);
    expect(text).toMatch(message);
  });

  it('refuses an empty boundary', () => {
    expect(refusal(form(field('model', 'm')), '')).toBe('The multipart/form-data body has no valid boundary parameter.');
  });

  it('accepts a header section of 16 KiB and refuses a longer one', () => {
    const headerOf = (length: number) => {
      const disposition = 'Content-Disposition: form-data; name="model"\r\nX-Padding: ';
      return disposition + 'p'.repeat(length - disposition.length);
    };
    const atLimit = form(part([headerOf(16 * 1024)], 'm'));
    const overLimit = form(part([headerOf(16 * 1024 + 1)], 'm'));

    expect(entries(atLimit)).toEqual([['model', 'm']]);
    expect(refusal(overLimit)).toMatch(/no complete header section/);
  });

  it('refuses a header section that runs over the next delimiter instead of merging two parts', () => {
    // The first part lacks the blank line ending its headers. A form parser that cuts at
    // delimiters first (as the upstream's does) never lets one part's headers swallow the next
    // part; reading on would let a `stream` or `tools` part hide under the name "x".
    const body = Buffer.from(
      [
        `--${BOUNDARY}`,
        'Content-Disposition: form-data; name="x"',
        'not a header',
        `--${BOUNDARY}`,
        'Content-Disposition: form-data; name="stream"',
        '',
        'true',
        `--${BOUNDARY}--`,
        '',
      ].join('\r\n'),
    );

    expect(parseForm(body, BOUNDARY).ok).toBe(false);
  });

  it('refuses a part with two Content-Disposition headers, which parsers resolve differently', () => {
    // The gateway would read the first ("x"); undici's and Starlette's form parsers keep the last ("tools").
    const body = form(
      part(['Content-Disposition: form-data; name="x"', 'Content-Disposition: form-data; name="tools"'], '[{"type":"web_search"}]'),
      field('model', 'm'),
    );

    expect(parseForm(body, BOUNDARY).ok).toBe(false);
  });

  it('refuses a Content-Disposition that repeats its name parameter (invalid per RFC 6266 section 4.1)', () => {
    // Which one counts differs between parsers; the gateway would read "x" while a first-wins parser reads "stream".
    const body = form(part(['Content-Disposition: form-data; name="stream"; name="x"'], 'true'), field('model', 'm'));

    expect(parseForm(body, BOUNDARY).ok).toBe(false);
  });
});

describe(replacePart.name, () => {
  it('replaces one part content and keeps every other byte', () => {
    const image = randomBytes(64 * 1024);
    const body = form(file('image', 'a.png', image), field('model', 'client-model'), field('prompt', 'p'));
    const model = partsOf(parseForm(body, BOUNDARY)).find((found) => found.name === 'model')!;

    const pieces = replacePart(body, model, 'upstream-modèle-2025');
    const replaced = Buffer.concat(pieces);
    const inserted = Buffer.from('upstream-modèle-2025', 'utf8');

    expect(replaced.subarray(0, model.contentStart).equals(body.subarray(0, model.contentStart))).toBe(true);
    expect(replaced.subarray(model.contentStart, model.contentStart + inserted.length)).toEqual(inserted);
    expect(replaced.subarray(model.contentStart + inserted.length).equals(body.subarray(model.contentEnd))).toBe(true);
    expect(replaced.length).toBe(body.length - 'client-model'.length + inserted.length);
    expect(entries(replaced)).toEqual([
      ['image', image.toString('utf8')],
      ['model', 'upstream-modèle-2025'],
      ['prompt', 'p'],
    ]);
  });

  it('shares memory with the original body instead of copying it', () => {
    // Large enough not to come from the shared allocation pool, which small copies would share too.
    const body = form(field('model', 'm'), file('image', 'a.png', randomBytes(64 * 1024)));
    const model = partsOf(parseForm(body, BOUNDARY))[0];
    const [before, , after] = replacePart(body, model, 'up');

    expect(before.buffer).toBe(body.buffer);
    expect(before.byteOffset).toBe(body.byteOffset);
    expect(after.buffer).toBe(body.buffer);
    expect(after.byteOffset).toBe(body.byteOffset + model.contentEnd);
  });

  it('replaces an empty content', () => {
    const body = form(field('model', ''), field('prompt', 'p'));
    const replaced = Buffer.concat(replacePart(body, partsOf(parseForm(body, BOUNDARY))[0], 'up'));
    expect(entries(replaced)).toEqual([
      ['model', 'up'],
      ['prompt', 'p'],
    ]);
  });
});

describe('multipart forms of the platform encoder and parser', () => {
  const files = [
    { field: 'image[]', name: 'fox.png', type: 'image/png', bytes: randomBytes(256 * 1024) },
    // CR, LF and dashes inside the file, as binary images have.
    { field: 'image[]', name: 'ñandú 🦤.webp', type: 'image/webp', bytes: Buffer.from(`\r\n--\r\n----x\r\n\r\n${'-'.repeat(40)}\r\n`) },
    { field: 'mask', name: 'mask.png', type: 'image/png', bytes: Buffer.alloc(0) },
  ];

  function platformForm(): FormData {
    const data = new FormData();
    data.append('model', 'client-model');
    data.append('prompt', 'Add a hat — «très chic» 🎩\nsecond line');
    for (const entry of files) data.append(entry.field, new File([entry.bytes], entry.name, { type: entry.type }));
    data.append('légende', 'été');
    data.append('n', '');
    return data;
  }

  async function encoded(): Promise<{ body: Buffer; contentType: string }> {
    const request = platformRequest(platformForm());
    return { body: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type')! };
  }

  it('parses the platform encoder output to the same names, values and file bytes', async () => {
    const { body, contentType } = await encoded();
    const boundary = formBoundary(contentType);
    expect(boundary).toBeTruthy();

    const parts = partsOf(parseForm(body, boundary!));

    expect(parts.map((found) => found.name)).toEqual(['model', 'prompt', 'image[]', 'image[]', 'mask', 'légende', 'n']);
    const texts = parts.filter((found) => found.filename === undefined).map((found) => [found.name, partText(body, found)]);
    expect(texts).toEqual([
      ['model', 'client-model'],
      ['prompt', 'Add a hat — «très chic» 🎩\r\nsecond line'], // the encoder normalises line breaks to CRLF
      ['légende', 'été'],
      ['n', ''],
    ]);
    const fileParts = parts.filter((found) => found.filename !== undefined);
    expect(fileParts.map((found) => found.filename)).toEqual(files.map((entry) => entry.name));
    fileParts.forEach((found, index) => {
      expect(body.subarray(found.contentStart, found.contentEnd).equals(files[index].bytes)).toBe(true);
    });
  });

  it('gives a body whose new model the platform parser reads, with identical files, after replacePart', async () => {
    const { body, contentType } = await encoded();
    const parts = partsOf(parseForm(body, formBoundary(contentType)!));
    const model = parts.find((found) => found.name === 'model')!;

    const upstream = Buffer.concat(replacePart(body, model, 'vendor/gpt-image-1-2025'));
    const read = await platformRequest(upstream, contentType).formData();

    expect(read.getAll('model')).toEqual(['vendor/gpt-image-1-2025']);
    expect(read.get('prompt')).toBe('Add a hat — «très chic» 🎩\r\nsecond line');
    expect(read.get('légende')).toBe('été');
    expect(read.get('n')).toBe('');
    const readFiles = [...read.getAll('image[]'), ...read.getAll('mask')] as File[];
    expect(readFiles.map((entry) => [entry.name, entry.type])).toEqual(files.map((entry) => [entry.name, entry.type]));
    for (const [index, entry] of readFiles.entries()) {
      expect(Buffer.from(await entry.arrayBuffer()).equals(files[index].bytes)).toBe(true);
    }
  });
});
