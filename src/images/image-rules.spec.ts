import type { ModelConfig } from '../config/gateway-config';
import { scanTopLevel } from '../request-body/json-scan';
import { readValue } from '../request-body/json-splice';
import { parseForm, partText } from '../request-body/multipart-form';
import type { AdmittedCall } from '../forwarding/request-state';
import { type ImageFormat, imageRefusal, upstreamFileReference } from './image-rules';

const MODEL = { id: 'image-model', upstreamModel: 'vendor-image-1' } as ModelConfig;
const FORMATS: ImageFormat[] = ['a', 'b', 'c'];
const BOUNDARY = 'image-rules-boundary';

const FILE_REFERENCE = /^Files stored upstream cannot be referenced/;
const TOOLS = /^Tools are not supported/;
const STREAM = /^Image generation is not streamed/;
const LAYERS = /^Layer decomposition is not supported/;

/** A JSON call as the admission guard builds it: top-level fields scanned, `stream` read when exactly `true`. */
function jsonCall(json: string | Record<string, unknown>): AdmittedCall {
  const body = Buffer.from(typeof json === 'string' ? json : JSON.stringify(json));
  const scan = scanTopLevel(body);
  if (!scan.ok) throw new Error(`test body is not a valid JSON object: ${scan.message}`);
  const stream = scan.fields.get('stream');
  return { entry: 'images_a', model: MODEL, body, fields: scan.fields, stream: stream !== undefined && readValue(body, stream) === true };
}

type FormEntry = [name: string, value: string] | [name: string, value: Buffer, filename: string];

/** A form call as the admission guard builds it: parts parsed, `stream` true when a "stream" field says "true". */
function formCall(...entries: FormEntry[]): AdmittedCall {
  const body = Buffer.concat([
    ...entries.map(([name, value, filename]) =>
      Buffer.concat([
        Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"\r\nContent-Type: image/png`}\r\n\r\n`,
        ),
        Buffer.from(value),
        Buffer.from('\r\n'),
      ]),
    ),
    Buffer.from(`--${BOUNDARY}--\r\n`),
  ]);
  const form = parseForm(body, BOUNDARY);
  if (!form.ok) throw new Error(`test body is not a valid form: ${form.message}`);
  const stream = form.parts.some((part) => part.name === 'stream' && partText(body, part).trim().toLowerCase() === 'true');
  return { entry: 'images_a', model: MODEL, body, fields: new Map(), form: form.parts, stream };
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe(imageRefusal.name, () => {
  describe('stream', () => {
    it.each(FORMATS)('refuses stream true on format %s', (format) => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', stream: true }), format)).toMatch(STREAM);
    });

    it.each(FORMATS)('allows stream false on format %s', (format) => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', stream: false }), format)).toBeUndefined();
    });

    it('refuses a stream form field that says true', () => {
      expect(imageRefusal(formCall(['model', 'm'], ['stream', 'true'], ['image', PNG, 'a.png']), 'a')).toMatch(STREAM);
      expect(imageRefusal(formCall(['model', 'm'], ['stream', 'false'], ['image', PNG, 'a.png']), 'a')).toBeUndefined();
    });
  });

  describe('tools', () => {
    it.each<[ImageFormat, string]>([
      ['a', '{"model":"m","prompt":"p","tools":[]}'],
      ['a', '{"model":"m","prompt":"p","tools":[{"type":"image_generation"}]}'],
      ['b', '{"model":"m","prompt":"p","tools":{}}'],
      ['b', '{"model":"m","prompt":"p","tools":null}'],
      ['c', '{"contents":[{"parts":[{"text":"p"}]}],"tools":[{"googleSearch":{}}]}'],
      ['c', '{"contents":[],"tools":[]}'],
    ])('refuses tools present on format %s: %s', (format, json) => {
      expect(imageRefusal(jsonCall(json), format)).toMatch(TOOLS);
    });

    it('looks for tools at the top level only', () => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'tools', metadata: { tools: [] } }), 'a')).toBeUndefined();
    });
  });

  describe('layer_decomposition (format B)', () => {
    it.each([true, 'enabled', {}, { enabled: true }, { type: 'enabled' }, 1])('refuses %j', (value) => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', layer_decomposition: value }), 'b')).toMatch(LAYERS);
    });

    it.each([false, null, 'disabled', { enabled: false }, { type: 'disabled' }])('allows %j', (value) => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', layer_decomposition: value }), 'b')).toBeUndefined();
    });

    it('allows it absent', () => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', size: '2048x2048' }), 'b')).toBeUndefined();
    });

    it.each<ImageFormat>(['a', 'c'])('does not judge it on format %s', (format) => {
      expect(imageRefusal(jsonCall({ model: 'm', prompt: 'p', layer_decomposition: true }), format)).toBeUndefined();
    });
  });

  describe('files stored upstream in JSON', () => {
    it.each<[string, string]>([
      ['a top-level file_id', '{"model":"m","prompt":"p","file_id":"file-abc"}'],
      ['a file_id in an image list', '{"model":"m","prompt":"p","images":[{"file_id":"file-abc"}]}'],
      ['a deep file_id', '{"model":"m","a":{"b":[[{"c":{"file_id":null}}]]}}'],
      ['a file_id with whitespace before its colon', '{"model":"m","mask":{"file_id"  \r\n\t : "file-abc"}}'],
      ['an asset:// address', '{"model":"m","prompt":"p","image":"asset://img-123"}'],
      ['an upper-case ASSET:// address', '{"model":"m","prompt":"p","image":"ASSET://img-123"}'],
      ['a mixed-case Asset:// address deep in a list', '{"model":"m","content":[{"image_url":{"url":"Asset://img-123"}}]}'],
      ['an escaped key file\\u005fid', String.raw`{"model":"m","images":[{"file\u005fid":"file-abc"}]}`],
      ['an escaped key \\u0066ile_id', String.raw`{"model":"m","images":[{"\u0066ile_id":"file-abc"}]}`],
      ['an address with escaped slashes asset:\\/\\/', String.raw`{"model":"m","image":"asset:\/\/img-123"}`],
      ['an address with an escaped letter', String.raw`{"model":"m","image":"\u0061sset://img-123"}`],
      ['a file_id in a body that also holds an escape', String.raw`{"model":"m","prompt":"caf\u00e9","images":[{"file_id":"f"}]}`],
    ])('refuses %s on every format', (_case, json) => {
      for (const format of FORMATS) expect(imageRefusal(jsonCall(json), format)).toMatch(FILE_REFERENCE);
    });

    it.each<[string, string]>([
      ['"file_id" as a string value', '{"model":"m","prompt":"file_id","tags":["file_id", "file_id"]}'],
      ['"file_id" quoted inside a prompt', JSON.stringify({ model: 'm', prompt: 'say "file_id": here' })],
      ['a key that ends in an escaped quote and file_id', String.raw`{"model":"m","say \"file_id": 1}`],
      ['a key that only contains file_id', '{"model":"m","my_file_id":"x","file_ids":["x"]}'],
      ['asset:// in the middle of a prompt', '{"model":"m","prompt":"draw what asset://img-1 would show"}'],
      ['asset:// quoted inside a prompt', JSON.stringify({ model: 'm', prompt: 'say "asset://img-1"' })],
      ['an https address with asset:// in its path', '{"model":"m","image":"https://cdn.example.com/asset://x.png"}'],
      ['a scheme that only ends in asset', '{"model":"m","image":"myasset://x"}'],
      ['asset:/ with one slash', '{"model":"m","image":"asset:/x"}'],
      ['a body with escapes and no reference', String.raw`{"model":"m","prompt":"caf\u00e9 \"file_id\": asset://x","x":"file_id","u":"http:\/\/a"}`],
      ['base64 data', JSON.stringify({ model: 'm', image: `data:image/png;base64,${Buffer.alloc(3000, 7).toString('base64')}` })],
    ])('allows %s', (_case, json) => {
      for (const format of FORMATS) expect(imageRefusal(jsonCall(json), format)).toBeUndefined();
    });

    it.each([
      ['fileData', '{"contents":[{"parts":[{"text":"p"},{"fileData":{"mimeType":"image/png","fileUri":"https://x/y.png"}}]}]}'],
      ['file_data', '{"contents":[{"parts":[{"file_data":{"mime_type":"image/png","file_uri":"gs://b/y.png"}}]}]}'],
      ['fileData spelled with an escape', String.raw`{"contents":[{"parts":[{"file\u0044ata":{"fileUri":"x"}}]}]}`],
    ])('refuses %s on format C only', (_key, json) => {
      expect(imageRefusal(jsonCall(json), 'c')).toMatch(FILE_REFERENCE);
      expect(imageRefusal(jsonCall(json), 'a')).toBeUndefined();
      expect(imageRefusal(jsonCall(json), 'b')).toBeUndefined();
    });

    it('allows inline image data on format C', () => {
      const json = JSON.stringify({
        contents: [{ parts: [{ text: 'p' }, { inlineData: { mimeType: 'image/png', data: PNG.toString('base64') } }] }],
        generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
      });
      expect(imageRefusal(jsonCall(json), 'c')).toBeUndefined();
    });

    it('finds a reference after megabytes of base64', () => {
      const json = `{"model":"m","images":[{"b64_json":"${Buffer.alloc(3 * 1024 * 1024, 1).toString('base64')}"},{"file_id":"f"}]}`;
      expect(imageRefusal(jsonCall(json), 'a')).toMatch(FILE_REFERENCE);
    });
  });

  describe('forms', () => {
    const image: FormEntry = ['image', PNG, 'cat.png'];

    it('allows a plain edit form', () => {
      expect(imageRefusal(formCall(['model', 'm'], ['prompt', 'add a hat'], image, ['mask', PNG, 'mask.png']), 'a')).toBeUndefined();
    });

    it.each(['tools', 'tools[]', 'tools[0][type]'])('refuses a %s field', (name) => {
      expect(imageRefusal(formCall(['model', 'm'], [name, 'image_generation'], image), 'a')).toMatch(TOOLS);
    });

    it.each(['file_id', 'image[file_id]', 'images[0][file_id]', 'mask[file_id]'])('refuses a %s field', (name) => {
      expect(imageRefusal(formCall(['model', 'm'], [name, 'file-abc']), 'a')).toMatch(FILE_REFERENCE);
    });

    it.each(['asset://img-1', 'ASSET://img-1', '  asset://img-1\r\n'])('refuses a text field %j', (value) => {
      expect(imageRefusal(formCall(['model', 'm'], ['image', value]), 'a')).toMatch(FILE_REFERENCE);
    });

    it('allows asset:// in the middle of a text field', () => {
      expect(imageRefusal(formCall(['model', 'm'], ['prompt', 'what would asset://img-1 show'], image), 'a')).toBeUndefined();
    });

    it('allows a file part whose content starts with asset://', () => {
      expect(imageRefusal(formCall(['model', 'm'], ['image', Buffer.from('asset://img-1'), 'notes.txt']), 'a')).toBeUndefined();
    });

    it('allows fields whose names only resemble the refused ones', () => {
      expect(imageRefusal(formCall(['model', 'm'], ['toolset', 'x'], ['file_ids', 'x'], ['my_file_id', 'x'], image), 'a')).toBeUndefined();
    });
  });
});

describe(upstreamFileReference.name, () => {
  it('names the key it found', () => {
    expect(upstreamFileReference(Buffer.from('{"a":{"fileData":{}}}'), ['file_id', 'fileData'])).toBe('"fileData"');
    expect(upstreamFileReference(Buffer.from(String.raw`{"a":{"file\u0044ata":{}}}`), ['file_id', 'fileData'])).toBe('"fileData"');
  });

  it('names an asset address', () => {
    expect(upstreamFileReference(Buffer.from('{"a":["asset://x"]}'), ['file_id'])).toBe('an asset:// address');
    expect(upstreamFileReference(Buffer.from(String.raw`{"a":["asset:\/\/x"]}`), ['file_id'])).toBe('an asset:// address');
  });

  it('looks only for the keys it is given', () => {
    expect(upstreamFileReference(Buffer.from('{"fileData":{}}'), ['file_id'])).toBeUndefined();
    expect(upstreamFileReference(Buffer.from(String.raw`{"fileData":{"u":"\u00e9"}}`), ['file_id'])).toBeUndefined();
  });

  it('finds nothing in a body without references', () => {
    expect(upstreamFileReference(Buffer.from('{"model":"m","prompt":"p","n":1,"size":"1024x1024"}'), ['file_id'])).toBeUndefined();
  });
});
