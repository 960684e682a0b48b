import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { UsageRecord } from '../src/metering/usage-record.entity';
import { geminiReplyText } from './simulator/generate-content-route';
import { SIMULATED_PNG, textTokens } from './simulator/image-common';
import { OUTPUT_TEXT_TOKENS_PER_IMAGE, outputImageTokens, readImageEdit } from './simulator/images-a-routes';
import { GatewayHarness } from './support/gateway-harness';
import { formBody, IMAGE_KEYS, IMAGE_PATHS, imagesConfigYaml } from './support/images-kit';
import { until } from './support/until';

/**
 * What the image endpoints refuse before anything goes upstream (SPEC.md "Images" rules 5 and
 * 6): every rejection on every endpoint it applies to (format A generations, format A edits as
 * JSON and as a form, format B, format C), each answered in the endpoint's own error shape with
 * nothing sent to the simulator and no usage record; the look-alikes that must still go through;
 * large bodies that go through intact. And rule 7: a client that leaves does not stop an image
 * generation, which is completed and billed, unlike a chat call, which is aborted.
 */

const PROMPT = 'A red fox in fresh snow, watercolour';
const PNG_DATA_URL = `data:image/png;base64,${SIMULATED_PNG.toString('base64')}`;
const BODY_LIMIT_BYTES = 32 * 1024 * 1024;
const MIB = 1024 * 1024;

type Shape = 'chat' | 'google';

interface JsonEndpoint {
  name: string;
  path: string;
  shape: Shape;
  /** A body the endpoint takes (200 from the simulator). */
  base: Record<string, unknown>;
}

const A_GENERATIONS: JsonEndpoint = {
  name: 'format A generations',
  path: IMAGE_PATHS.generations,
  shape: 'chat',
  base: { model: 'image-a', prompt: PROMPT, size: '1024x1024' },
};
const A_EDITS_JSON: JsonEndpoint = {
  name: 'format A edits (JSON)',
  path: IMAGE_PATHS.edits,
  shape: 'chat',
  base: { model: 'image-a', prompt: PROMPT, images: [{ image_url: PNG_DATA_URL }] },
};
const B: JsonEndpoint = {
  name: 'format B',
  path: IMAGE_PATHS.vendorB,
  shape: 'chat',
  base: { model: 'image-b', prompt: PROMPT, size: '1K' },
};
const C: JsonEndpoint = {
  name: 'format C',
  path: IMAGE_PATHS.generateContent('image-c'),
  shape: 'google',
  base: { contents: [{ role: 'user', parts: [{ text: PROMPT }] }], generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } },
};
const JSON_ENDPOINTS = [A_GENERATIONS, A_EDITS_JSON, B, C];
/** The endpoints whose body names the model (format C has it in the path). */
const MODEL_IN_BODY = [A_GENERATIONS, A_EDITS_JSON, B];

/** The JSON of `base` plus `extra`, with `rawMembers` (exact bytes, e.g. escapes) put first. */
function jsonOf(base: Record<string, unknown>, extra: Record<string, unknown> = {}, rawMembers: string[] = []): string {
  const text = JSON.stringify({ ...base, ...extra });
  return rawMembers.length === 0 ? text : `{${rawMembers.join(',')},${text.slice(1)}`;
}

/** A JSON case: the body sent, built from the endpoint's accepted base body. */
interface JsonCase {
  what: string;
  body: (endpoint: JsonEndpoint) => string;
}

function casesOn(endpoints: JsonEndpoint[], cases: JsonCase[]): Array<{ what: string; endpoint: JsonEndpoint; name: string; body: string }> {
  return endpoints.flatMap((endpoint) => cases.map((item) => ({ what: item.what, endpoint, name: endpoint.name, body: item.body(endpoint) })));
}

/** Refused on every JSON endpoint (SPEC.md Images rule 5). */
const REFUSED_EVERYWHERE: JsonCase[] = [
  { what: 'stream true', body: (e) => jsonOf(e.base, { stream: true }) },
  { what: 'stream true under an escaped key with spaces', body: (e) => jsonOf(e.base, {}, ['"str\\u0065am" :  true']) },
  {
    what: 'tools with a function',
    body: (e) => jsonOf(e.base, { tools: [{ type: 'function', function: { name: 'paint', parameters: { type: 'object', properties: {} } } }] }),
  },
  { what: 'tools as an empty list', body: (e) => jsonOf(e.base, { tools: [] }) },
  { what: 'tools null', body: (e) => jsonOf(e.base, { tools: null }) },
  { what: 'tools under an escaped key', body: (e) => jsonOf(e.base, {}, ['"t\\u006fols":[]']) },
  { what: 'a top-level file_id', body: (e) => jsonOf(e.base, { file_id: 'file-abc123' }) },
  { what: 'a file_id nested deep', body: (e) => jsonOf(e.base, { metadata: { refs: [{ note: 'x', file_id: 'file-abc123' }] } }) },
  { what: 'a file_id with spaces before its colon', body: (e) => jsonOf(e.base, {}, ['"reference": { "file_id"  \n :  "file-abc123" }']) },
  { what: 'a file_id spelt with an escape (file\\u005fid)', body: (e) => jsonOf(e.base, {}, ['"reference":{"file\\u005fid":"file-abc123"}']) },
  { what: 'a file_id whose value is not a string', body: (e) => jsonOf(e.base, { reference: { file_id: 42 } }) },
  { what: 'an asset:// address', body: (e) => jsonOf(e.base, { reference_image: 'asset://img-123' }) },
  {
    what: 'an ASSET:// address (uppercase scheme) in a list',
    body: (e) => jsonOf(e.base, { reference_images: ['https://example.com/a.png', 'ASSET://img-123'] }),
  },
  { what: 'an asset:\\/\\/ address spelt with escaped slashes', body: (e) => jsonOf(e.base, {}, ['"reference_image":"asset:\\/\\/img-123"']) },
  { what: 'an asset:// address spelt with an escaped letter', body: (e) => jsonOf(e.base, {}, ['"reference_image":"\\u0061sset://img-123"']) },
];

/** Where format A edits (JSON) name their input images. */
const REFUSED_A_EDITS: JsonCase[] = [
  { what: 'a file_id in images[]', body: (e) => jsonOf(e.base, { images: [{ image_url: PNG_DATA_URL }, { file_id: 'file-abc123' }] }) },
  { what: 'a file_id as the mask', body: (e) => jsonOf(e.base, { mask: { file_id: 'file-mask-1' } }) },
  { what: 'an asset:// address in images[]', body: (e) => jsonOf(e.base, { images: [{ image_url: 'asset://img-123' }] }) },
  { what: 'an Asset:// address (mixed case) in images[]', body: (e) => jsonOf(e.base, { images: [{ image_url: 'Asset://img-123' }] }) },
  { what: 'an asset:// address as the mask', body: (e) => jsonOf(e.base, { mask: { image_url: 'asset://mask-1' } }) },
  { what: 'an escaped file_id in images[]', body: (e) => jsonOf({ ...e.base, images: undefined }, {}, ['"images":[{"file\\u005Fid":"file-abc123"}]']) },
];

/** Where format B names its reference images, and its layer decomposition. */
const REFUSED_B: JsonCase[] = [
  { what: 'an asset:// address as the image', body: (e) => jsonOf(e.base, { image: 'asset://img-123' }) },
  { what: 'an ASSET:// address in the image list', body: (e) => jsonOf(e.base, { image: [PNG_DATA_URL, 'ASSET://img-123'] }) },
  { what: 'a file_id in the image list', body: (e) => jsonOf(e.base, { image: [{ file_id: 'file-abc123' }] }) },
  { what: 'layer_decomposition true', body: (e) => jsonOf(e.base, { layer_decomposition: true }) },
  { what: 'layer_decomposition {}', body: (e) => jsonOf(e.base, { layer_decomposition: {} }) },
  { what: 'layer_decomposition {enabled: true}', body: (e) => jsonOf(e.base, { layer_decomposition: { enabled: true } }) },
  { what: 'layer_decomposition "enabled"', body: (e) => jsonOf(e.base, { layer_decomposition: 'enabled' }) },
  { what: 'layer_decomposition under an escaped key', body: (e) => jsonOf(e.base, {}, ['"layer_dec\\u006fmposition":true']) },
];

const fileDataPart = { fileData: { mimeType: 'image/png', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123' } };

/** Format C: file parts in either spelling, wherever a part may be. */
const REFUSED_C: JsonCase[] = [
  { what: 'a fileData part', body: () => jsonOf(C.base, { contents: [{ role: 'user', parts: [{ text: PROMPT }, fileDataPart] }] }) },
  {
    what: 'a file_data part (snake case)',
    body: () =>
      jsonOf(C.base, { contents: [{ role: 'user', parts: [{ text: PROMPT }, { file_data: { mime_type: 'image/png', file_uri: 'files/abc123' } }] }] }),
  },
  { what: 'a fileData part in the system instruction', body: () => jsonOf(C.base, { systemInstruction: { parts: [fileDataPart] } }) },
  {
    what: 'a fileData part spelt with an escape',
    body: () =>
      jsonOf({ generationConfig: C.base.generationConfig }, {}, [
        `"contents":[{"role":"user","parts":[{"text":"${PROMPT}"},{"fileD\\u0061ta":{"mimeType":"image/png","fileUri":"files/abc123"}}]}]`,
      ]),
  },
  {
    what: 'an asset:// address as inline data',
    body: () => jsonOf(C.base, { contents: [{ role: 'user', parts: [{ text: PROMPT }, { inlineData: { mimeType: 'image/png', data: 'asset://img-123' } }] }] }),
  },
];

/** Bodies that are not one JSON object. */
const NOT_AN_OBJECT: JsonCase[] = [
  { what: 'a JSON array', body: (e) => `[${JSON.stringify(e.base)}]` },
  { what: 'a JSON string', body: () => JSON.stringify(PROMPT) },
  { what: 'a JSON number', body: () => '42' },
  { what: 'JSON null', body: () => 'null' },
  { what: 'invalid JSON (cut off)', body: (e) => JSON.stringify(e.base).slice(0, -3) },
  { what: 'invalid JSON (trailing garbage)', body: (e) => `${JSON.stringify(e.base)} x` },
  { what: 'an empty body', body: () => '' },
];

/** The model rules of the endpoints whose body names the model. */
const MODEL_PROBLEMS: JsonCase[] = [
  { what: 'no model', body: (e) => jsonOf({ ...e.base, model: undefined }) },
  { what: 'an empty model', body: (e) => jsonOf(e.base, { model: '' }) },
  { what: 'a model that is not a string', body: (e) => jsonOf(e.base, { model: 42 }) },
  { what: 'model twice (raw bytes)', body: (e) => `{"model":"${e.base.model}",${JSON.stringify(e.base).slice(1)}` },
  { what: 'model twice, once spelt with an escape', body: (e) => `{"mod\\u0065l":"${e.base.model}",${JSON.stringify(e.base).slice(1)}` },
  { what: 'prompt twice', body: (e) => `{"prompt":"first",${JSON.stringify(e.base).slice(1)}` },
];

/** Format C: a repeated top-level field, though the body has no model. */
const C_REPEATED: JsonCase[] = [
  { what: 'contents twice', body: () => `{"contents":[{"parts":[{"text":"first"}]}],${JSON.stringify(C.base).slice(1)}` },
  { what: 'generationConfig twice', body: () => `{"generationConfig":{},${JSON.stringify(C.base).slice(1)}` },
];

/**
 * Look-alikes that must go through: the words in a prompt, a "file_id" string value, a quoted
 * `"file_id": …` inside a prompt, escapes elsewhere in the body, stream false.
 */
const ACCEPTED_EVERYWHERE: JsonCase[] = [
  { what: 'the words file_id and asset:// inside the prompt', body: (e) => withPrompt(e, 'Paint a sign reading file_id and asset://logo') },
  { what: 'a quoted "file_id": and "asset://x" inside the prompt', body: (e) => withPrompt(e, 'Write "file_id": 42 and "asset://logo" on a board') },
  { what: 'a "file_id" string value', body: (e) => jsonOf(e.base, { metadata: { label: 'file_id', tags: ['file_id', 'asset'] } }) },
  {
    what: 'escapes elsewhere in the body with the words in the prompt',
    body: (e) => jsonOf(e.base, {}, ['"user":"caf\\u00e9 file_id \\/ see asset:\\/\\/logo"']),
  },
  { what: 'stream false', body: (e) => jsonOf(e.base, { stream: false }) },
];

const ACCEPTED_B: JsonCase[] = [
  { what: 'layer_decomposition false', body: (e) => jsonOf(e.base, { layer_decomposition: false }) },
  { what: 'layer_decomposition null', body: (e) => jsonOf(e.base, { layer_decomposition: null }) },
  { what: 'layer_decomposition {enabled: false}', body: (e) => jsonOf(e.base, { layer_decomposition: { enabled: false } }) },
  { what: 'layer_decomposition "disabled"', body: (e) => jsonOf(e.base, { layer_decomposition: 'disabled' }) },
];

function withPrompt(endpoint: JsonEndpoint, prompt: string): string {
  if (endpoint === C) return jsonOf(C.base, { contents: [{ role: 'user', parts: [{ text: prompt }] }] });
  return jsonOf(endpoint.base, { prompt });
}

// ---------------------------------------------------------------- forms (format A edits)

const BOUNDARY = '----gateway-rejections-boundary-Qm9v';
const IMAGE_FILE = { filename: 'fox.png', type: 'image/png', bytes: SIMULATED_PNG };
type FormField = [string, string] | [string, typeof IMAGE_FILE];

function form(
  extra: FormField[] = [],
  base: FormField[] = [
    ['model', 'image-a'],
    ['prompt', PROMPT],
    ['image', IMAGE_FILE],
  ],
) {
  return formBody([...base, ...extra], BOUNDARY);
}

interface FormCase {
  what: string;
  body: Buffer;
  contentType: string;
}

function formCase(what: string, fields: FormField[], base?: FormField[]): FormCase {
  const built = form(fields, base);
  return { what, body: built.body, contentType: built.contentType };
}

const FORM_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const modelPart = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimage-a\r\n`;
const promptPart = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n${PROMPT}\r\n`;

/**
 * Valid forms (RFC 2046 section 5.1.1, RFC 7578) that the simulator's stricter parser (undici's
 * FormData) cannot read: the gateway must still forward them, byte for byte; the upstream's
 * answer is then whatever it is.
 */
const VALID_FORMS_THE_SIMULATOR_REFUSES: FormCase[] = [
  { what: 'a preamble before the first boundary', body: handForm({ preamble: 'This is a multipart message.\r\n' }), contentType: FORM_TYPE },
  { what: 'an epilogue after the closing boundary', body: handForm({ epilogue: '\r\nThe end.\r\n' }), contentType: FORM_TYPE },
  { what: 'spaces after the boundary lines (transport padding)', body: handForm({ padding: '  ' }), contentType: FORM_TYPE },
  { what: 'a lower-case header with an unquoted name', body: handForm({ modelHeader: 'content-disposition: form-data; name=model' }), contentType: FORM_TYPE },
  { what: 'a media type in mixed case', body: handForm({}), contentType: `Multipart/Form-Data; boundary=${BOUNDARY}` },
];

const REFUSED_FORMS: FormCase[] = [
  formCase('stream=true', [['stream', 'true']]),
  formCase('stream=True', [['stream', 'True']]),
  formCase('stream=TRUE with spaces around', [['stream', ' TRUE ']]),
  formCase('a tools field', [['tools', '[]']]),
  formCase('a tools[] field', [['tools[]', '{"type":"function"}']]),
  formCase('a tools[0][type] field', [['tools[0][type]', 'function']]),
  formCase('a file_id field', [['file_id', 'file-abc123']]),
  formCase('an image[file_id] field', [['image[file_id]', 'file-abc123']]),
  formCase('an images[0][file_id] field', [['images[0][file_id]', 'file-abc123']]),
  // The array spelling of the same field, as `image[]` is of `image` (and `tools[]` of `tools`, refused above).
  formCase('a file_id[] field (array spelling)', [['file_id[]', 'file-abc123']]),
  formCase('an asset:// address in a text field', [['image_url', 'asset://img-123']]),
  formCase('an ASSET:// address in a text field', [['mask_url', 'ASSET://mask-1']]),
  formCase(
    'no model',
    [],
    [
      ['prompt', PROMPT],
      ['image', IMAGE_FILE],
    ],
  ),
  formCase(
    'an empty model',
    [],
    [
      ['model', ''],
      ['prompt', PROMPT],
      ['image', IMAGE_FILE],
    ],
  ),
  formCase('model twice', [['model', 'image-a']]),
  formCase(
    'model sent as a file',
    [],
    [
      ['model', { filename: 'model.txt', type: 'text/plain', bytes: Buffer.from('image-a') }],
      ['prompt', PROMPT],
    ],
  ),
  { what: 'a content type without a boundary parameter', body: form().body, contentType: 'multipart/form-data' },
  { what: 'a boundary that is not the one the body uses', body: form().body, contentType: 'multipart/form-data; boundary=other-boundary' },
  { what: 'no closing boundary', body: Buffer.from(`${modelPart}${promptPart}`), contentType: FORM_TYPE },
  {
    what: 'a part cut off before its closing boundary',
    body: Buffer.from(`${modelPart}${promptPart}--${BOUNDARY}\r\nContent-Disposition: form-data; name="n"\r\n\r\n1`),
    contentType: FORM_TYPE,
  },
  {
    what: 'a part without a name',
    body: Buffer.from(`${modelPart}${promptPart}--${BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${BOUNDARY}--\r\n`),
    contentType: FORM_TYPE,
  },
  {
    what: 'a part without a Content-Disposition',
    body: Buffer.from(`${modelPart}--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx\r\n--${BOUNDARY}--\r\n`),
    contentType: FORM_TYPE,
  },
  { what: 'a JSON body sent as a form', body: Buffer.from(JSON.stringify(A_EDITS_JSON.base)), contentType: FORM_TYPE },
  { what: 'an empty form body', body: Buffer.alloc(0), contentType: FORM_TYPE },
];

/** A valid form written by hand around the standard parts, to vary what RFC 2046 and 7578 allow. */
function handForm(options: { preamble?: string; epilogue?: string; padding?: string; partHeaders?: string; modelHeader?: string }): Buffer {
  const head = (name: string) =>
    options.modelHeader && name === 'model' ? options.modelHeader : `Content-Disposition: form-data; name="${name}"${options.partHeaders ?? ''}`;
  const pad = options.padding ?? '';
  return Buffer.concat([
    Buffer.from(`${options.preamble ?? ''}--${BOUNDARY}${pad}\r\n${head('model')}\r\n\r\nimage-a\r\n`),
    Buffer.from(`--${BOUNDARY}${pad}\r\n${head('prompt')}\r\n\r\n${PROMPT}\r\n`),
    Buffer.from(`--${BOUNDARY}${pad}\r\nContent-Disposition: form-data; name="image"; filename="fox.png"\r\nContent-Type: image/png\r\n\r\n`),
    SIMULATED_PNG,
    Buffer.from(`\r\n--${BOUNDARY}--${options.epilogue ?? '\r\n'}`),
  ]);
}

const ACCEPTED_FORMS: FormCase[] = [
  { what: 'text parts with a Content-Type header', body: handForm({ partHeaders: '\r\nContent-Type: text/plain; charset=utf-8' }), contentType: FORM_TYPE },
  { what: 'no line break after the closing boundary', body: handForm({ epilogue: '' }), contentType: FORM_TYPE },
  { what: 'a quoted boundary after another parameter', body: handForm({}), contentType: `multipart/form-data; charset=utf-8; boundary="${BOUNDARY}"` },
  formCase('stream=false', [['stream', 'false']]),
  formCase(
    'a prompt holding the words file_id and asset://',
    [],
    [
      ['model', 'image-a'],
      ['prompt', 'A sign reading file_id and asset://logo'],
      ['image', IMAGE_FILE],
    ],
  ),
  formCase('a text field whose value is "file_id"', [['user', 'file_id']]),
];

// ---------------------------------------------------------------- expectations

const CHAT_400 = { error: { message: expect.any(String), type: 'invalid_request_error', code: null } };
const CHAT_413 = { error: { message: expect.any(String), type: 'invalid_request_error', code: 'request_too_large' } };
function googleError(code: number, reason: string) {
  return {
    error: {
      code,
      message: expect.any(String),
      status: 'INVALID_ARGUMENT',
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'gateway' }],
    },
  };
}
const ERROR_400: Record<Shape, unknown> = { chat: CHAT_400, google: googleError(400, 'INVALID_REQUEST') };
const ERROR_413: Record<Shape, unknown> = { chat: CHAT_413, google: googleError(413, 'REQUEST_TOO_LARGE') };

interface Answer {
  status: number;
  text: string;
  requestId: string;
}

/** A chat model with prices, so an aborted call's cost of 0 means something. */
function rejectionsConfigYaml(simulator: string): string {
  const yaml = imagesConfigYaml(simulator);
  const chat = '    upstream_model: vendor-chat-1\n    interfaces: [chat_completions]\n    lines: [line-a]\n';
  if (!yaml.includes(chat)) throw new Error('imagesConfigYaml changed: update rejectionsConfigYaml');
  return yaml.replace(chat, `${chat}    prices: { input_tokens: 2, output_tokens: 8 }\n`);
}

describe('image rejections', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: rejectionsConfigYaml });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  async function post(path: string, body: string | Buffer, contentType = 'application/json', headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': contentType, ...headers },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, text, requestId: response.headers.get('x-request-id') ?? '' };
  }

  async function spent(ownerId = 'team-a'): Promise<bigint> {
    await gateway.flushUsage();
    const [row] = await gateway.dataSource.query('SELECT spent_nano FROM quota_owner WHERE id = $1', [ownerId]);
    return BigInt(row.spent_nano);
  }

  async function recordCount(): Promise<number> {
    await gateway.flushUsage();
    return gateway.dataSource.getRepository(UsageRecord).count();
  }

  /** Sends the body; expects the status and error shape, nothing upstream and no new record. */
  async function expectRefused(path: string, body: string | Buffer, contentType: string, status: number, error: unknown): Promise<Answer> {
    const before = await recordCount();
    const answer = await post(path, body, contentType);

    expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({ status, body: error });
    expect(answer.requestId).not.toBe('');
    expect(gateway.simulator.requests).toHaveLength(0);
    expect(await gateway.usageRecord(answer.requestId)).toBeNull();
    expect(await recordCount()).toBe(before);
    return answer;
  }

  /** Sends the body; expects the simulator's 200 and one record of the call. */
  async function expectForwarded(path: string, body: string | Buffer, contentType: string): Promise<Answer> {
    const answer = await post(path, body, contentType);

    expect({ status: answer.status, text: answer.text.slice(0, 300) }).toEqual({ status: 200, text: expect.any(String) });
    expect(gateway.simulator.requests).toHaveLength(1);
    expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: 200, errorCode: null });
    return answer;
  }

  describe('JSON bodies refused with 400 and nothing forwarded', () => {
    it.each(casesOn(JSON_ENDPOINTS, REFUSED_EVERYWHERE))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn([A_EDITS_JSON], REFUSED_A_EDITS))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn([B], REFUSED_B))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn([C], REFUSED_C))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn(JSON_ENDPOINTS, NOT_AN_OBJECT))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn(MODEL_IN_BODY, MODEL_PROBLEMS))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });

    it.each(casesOn([C], C_REPEATED))('$name: $what', async ({ endpoint, body }) => {
      await expectRefused(endpoint.path, body, 'application/json', 400, ERROR_400[endpoint.shape]);
    });
  });

  describe('JSON look-alikes that go upstream', () => {
    it.each(casesOn(JSON_ENDPOINTS, ACCEPTED_EVERYWHERE))('$name: $what', async ({ endpoint, body }) => {
      await expectForwarded(endpoint.path, body, 'application/json');

      const upstreamModel = endpoint === B ? 'vendor-image-b-4' : 'vendor-image-a-1';
      const expected = endpoint === C ? body : body.replace(/"model":"image-[ab]"/, `"model":"${upstreamModel}"`);
      expect(gateway.simulator.requests[0].body.toString('utf8')).toBe(expected);
    });

    it.each(casesOn([B], ACCEPTED_B))('$name: $what is forwarded unchanged', async ({ endpoint, body }) => {
      await expectForwarded(endpoint.path, body, 'application/json');

      const upstream = gateway.simulator.requests[0];
      expect(upstream.json).toEqual({ ...JSON.parse(body), model: 'vendor-image-b-4' });
    });

    it('format C: a body without model is served (the model is in the path)', async () => {
      const body = JSON.stringify(C.base);
      await expectForwarded(C.path, body, 'application/json');

      expect(gateway.simulator.requests[0].path).toBe('/v1beta/models/vendor-image-c-flash:generateContent');
      expect(gateway.simulator.requests[0].body.toString('utf8')).toBe(body);
    });
  });

  describe('forms (format A edits) refused with 400 and nothing forwarded', () => {
    it.each(REFUSED_FORMS)('$what', async ({ body, contentType }) => {
      await expectRefused(IMAGE_PATHS.edits, body, contentType, 400, CHAT_400);
    });

    it.each([
      { name: 'format A generations', path: IMAGE_PATHS.generations, model: 'image-a', shape: 'chat' as Shape },
      { name: 'format B', path: IMAGE_PATHS.vendorB, model: 'image-b', shape: 'chat' as Shape },
      { name: 'format C', path: IMAGE_PATHS.generateContent('image-c'), model: 'image-c', shape: 'google' as Shape },
    ])('$name takes no form: a valid form is refused', async ({ path, model, shape }) => {
      const { body, contentType } = form(
        [],
        [
          ['model', model],
          ['prompt', PROMPT],
        ],
      );

      await expectRefused(path, body, contentType, 400, ERROR_400[shape]);
    });
  });

  describe('form look-alikes that go upstream', () => {
    it.each(ACCEPTED_FORMS)('$what', async ({ body, contentType }) => {
      await expectForwarded(IMAGE_PATHS.edits, body, contentType);

      const upstream = gateway.simulator.requests[0];
      expect(upstream.body.equals(Buffer.from(body.toString('latin1').replace('\r\n\r\nimage-a\r\n', '\r\n\r\nvendor-image-a-1\r\n'), 'latin1'))).toBe(true);
    });
  });

  describe('valid forms the gateway forwards although the simulator cannot read them', () => {
    it.each(VALID_FORMS_THE_SIMULATOR_REFUSES)('$what', async ({ body, contentType }) => {
      const answer = await post(IMAGE_PATHS.edits, body, contentType);

      expect(gateway.simulator.requests).toHaveLength(1);
      const upstream = gateway.simulator.requests[0];
      expect(upstream.headers['content-type']).toBe(contentType);
      expect(upstream.body.equals(Buffer.from(body.toString('latin1').replace('\r\n\r\nimage-a\r\n', '\r\n\r\nvendor-image-a-1\r\n'), 'latin1'))).toBe(true);
      expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: answer.status, model: 'image-a' });
    });
  });

  describe('size', () => {
    const oversizedText = 'a'.repeat(BODY_LIMIT_BYTES);

    it.each(JSON_ENDPOINTS)('$name: a JSON body over 32 MiB gives 413', async (endpoint) => {
      const body = endpoint === C ? withPrompt(C, oversizedText) : jsonOf(endpoint.base, { prompt: oversizedText });
      expect(Buffer.byteLength(body)).toBeGreaterThan(BODY_LIMIT_BYTES);

      await expectRefused(endpoint.path, body, 'application/json', 413, ERROR_413[endpoint.shape]);
    });

    it('format A edits: a form over 32 MiB gives 413', async () => {
      const big = { filename: 'big.png', type: 'image/png', bytes: Buffer.alloc(BODY_LIMIT_BYTES, 7) };
      const { body, contentType } = form(
        [],
        [
          ['model', 'image-a'],
          ['prompt', PROMPT],
          ['image', big],
        ],
      );

      await expectRefused(IMAGE_PATHS.edits, body, contentType, 413, CHAT_413);
    });

    it('format A edits: a chunked form over 32 MiB that announces no length gives 413', async () => {
      const big = { filename: 'big.png', type: 'image/png', bytes: Buffer.alloc(BODY_LIMIT_BYTES, 7) };
      const { body, contentType } = form(
        [],
        [
          ['model', 'image-a'],
          ['prompt', PROMPT],
          ['image', big],
        ],
      );
      let offset = 0;
      const chunked = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (offset >= body.length) return controller.close();
          controller.enqueue(body.subarray(offset, offset + MIB));
          offset += MIB;
        },
      });
      const before = await recordCount();

      const response = await fetch(`${gateway.url}${IMAGE_PATHS.edits}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': contentType },
        body: chunked,
        duplex: 'half',
        signal: AbortSignal.timeout(30_000),
      } as RequestInit);

      expect(response.status).toBe(413);
      expect(JSON.parse(await response.text())).toEqual(CHAT_413);
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await recordCount()).toBe(before);
    });

    it('a body of exactly 32 MiB is not refused for its size', async () => {
      const frame = jsonOf(A_GENERATIONS.base, { prompt: '' });
      const body = jsonOf(A_GENERATIONS.base, { prompt: 'a'.repeat(BODY_LIMIT_BYTES - Buffer.byteLength(frame)) });
      expect(Buffer.byteLength(body)).toBe(BODY_LIMIT_BYTES);

      const answer = await post(A_GENERATIONS.path, body);

      expect(answer.status).toBe(200);
      expect(gateway.simulator.requests).toHaveLength(1);
    });

    it('format A edits: a 20 MiB form goes upstream intact, only the model value replaced', async () => {
      const bytes = randomBytes(20 * MIB);
      const image = { filename: 'large.png', type: 'image/png', bytes };
      const fields: FormField[] = [
        ['prompt', PROMPT],
        ['image', image],
        ['size', '1024x1024'],
      ];
      const sent = formBody([['model', 'image-a'], ...fields], BOUNDARY);
      const expected = formBody([['model', 'vendor-image-a-1'], ...fields], BOUNDARY);

      const answer = await expectForwarded(IMAGE_PATHS.edits, sent.body, sent.contentType);

      const upstream = gateway.simulator.requests[0];
      expect(upstream.headers['content-type']).toBe(sent.contentType);
      expect(upstream.body.length).toBe(expected.body.length);
      expect(upstream.body.equals(expected.body)).toBe(true);
      const decoded = await readImageEdit(upstream);
      expect(decoded.images).toHaveLength(1);
      expect(decoded.images[0].bytes!.equals(bytes)).toBe(true);
      const record = await gateway.usageRecord(answer.requestId);
      expect(record?.usage).toMatchObject({ input_image_tokens: 85 + 20 * 1024 });
    });

    it('format A edits: a 20 MiB JSON edit goes upstream as the same bytes except the model', async () => {
      const bytes = randomBytes(15 * MIB);
      const sent = JSON.stringify({
        model: 'image-a',
        prompt: PROMPT,
        images: [{ image_url: `data:image/png;base64,${bytes.toString('base64')}` }],
        size: '1024x1024',
      });
      expect(Buffer.byteLength(sent)).toBeGreaterThan(20 * MIB);

      await expectForwarded(IMAGE_PATHS.edits, sent, 'application/json');

      const upstream = gateway.simulator.requests[0];
      expect(upstream.body.equals(Buffer.from(sent.replace('"model":"image-a"', '"model":"vendor-image-a-1"')))).toBe(true);
      const decoded = await readImageEdit(upstream);
      expect(decoded.images[0].bytes!.equals(bytes)).toBe(true);
    });
  });

  describe('a client that leaves (SPEC.md Images rule 7)', () => {
    /**
     * Sends the body on its own connection, waits until the simulator holds the request, then
     * destroys the socket before any answer came. Returns the client request id of the call.
     */
    async function leaveOnceUpstream(path: string, body: string): Promise<string> {
      const tag = `leaving-${randomBytes(6).toString('hex')}`;
      const request = httpRequest(`${gateway.url}${path}`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': 'application/json', 'x-client-request-id': tag },
      });
      let answered = false;
      request.on('response', () => (answered = true));
      request.on('error', () => undefined);
      request.end(body);
      await until(() => gateway.simulator.requests.length === 1, 'the call to reach the simulator');
      request.destroy();
      expect(answered).toBe(false);
      return tag;
    }

    async function recordTagged(tag: string): Promise<UsageRecord> {
      let found: UsageRecord | undefined;
      await until(async () => {
        found = (await gateway.usageRecords()).find((record) => record.clientRequestId === tag);
        return found !== undefined;
      }, `the record of ${tag}`);
      return found!;
    }

    it('format A generation: completes upstream and is billed in full, recorded 499 client_closed', async () => {
      gateway.simulator.failNext(IMAGE_PATHS.generations, { kind: 'delay', ms: 800 });
      const prompt = 'A lighthouse at dusk';

      const before = await spent();

      const tag = await leaveOnceUpstream(IMAGE_PATHS.generations, JSON.stringify({ model: 'image-a', prompt, size: '1024x1024', quality: 'medium' }));
      const record = await recordTagged(tag);

      // The figures only exist if the simulator answered after its delay (it answers nothing on a closed socket).
      const figures = {
        input_text_tokens: textTokens(prompt),
        input_image_tokens: 0,
        output_text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: outputImageTokens('1024x1024', 'medium'),
      };
      expect(record).toMatchObject({ status: 499, errorCode: 'client_closed', interface: 'images_a', model: 'image-a', line: 'line-a', usage: figures });
      // Per 1M tokens: input text 5, input image 10, output text 10, output image 40 (nano-units per token: ×1000).
      const cost = BigInt(figures.input_text_tokens) * 5_000n + BigInt(figures.output_text_tokens) * 10_000n + BigInt(figures.output_image_tokens) * 40_000n;
      expect(record.costNano).toBe(cost);
      expect(record.costNano).toBeGreaterThan(0n);
      expect(await spent()).toBe(before + cost);
      expect(record.upstreamHeadersMs).toBeGreaterThanOrEqual(700);
      expect(gateway.simulator.requests).toHaveLength(1);
    });

    it('format B: completes upstream and is billed in full at its pixel tier, recorded 499 client_closed', async () => {
      gateway.simulator.failNext('/api/v3/images/generations', { kind: 'delay', ms: 800 });
      const before = await spent();

      const tag = await leaveOnceUpstream(B.path, jsonOf(B.base, { size: '1024x1024' }));
      const record = await recordTagged(tag);

      expect(record).toMatchObject({
        status: 499,
        errorCode: 'client_closed',
        interface: 'images_b',
        model: 'image-b',
        usage: { output_images: 1, input_images: 0 },
      });
      // One 1024x1024 image: the tier up to 1 MP, 0.02 per image.
      expect(record.costNano).toBe(20_000_000n);
      expect(await spent()).toBe(before + 20_000_000n);
    });

    it('format C: completes upstream and is billed in full, recorded 499 client_closed', async () => {
      gateway.simulator.failNext('/v1beta/models/vendor-image-c-flash:generateContent', { kind: 'delay', ms: 800 });
      const prompt = 'A lighthouse at dusk';

      const tag = await leaveOnceUpstream(C.path, withPrompt(C, prompt));
      const record = await recordTagged(tag);

      const figures = { input_tokens: textTokens(prompt), output_text_tokens: textTokens(geminiReplyText(prompt)), output_image_tokens: 1290 };
      expect(record).toMatchObject({ status: 499, errorCode: 'client_closed', interface: 'images_c', model: 'image-c', usage: figures });
      // Per 1M tokens: input 0.3, text output 2.5, image output 30.
      const cost = BigInt(figures.input_tokens) * 300n + BigInt(figures.output_text_tokens) * 2_500n + BigInt(figures.output_image_tokens) * 30_000n;
      expect(record.costNano).toBe(cost);
      expect(record.upstreamHeadersMs).toBeGreaterThanOrEqual(700);
    });

    it('contrast: a chat-completions call whose client leaves is aborted, recorded 499 without figures or cost', async () => {
      gateway.simulator.failNext('/v1/chat/completions', { kind: 'delay', ms: 800 });

      const tag = await leaveOnceUpstream('/v1/chat/completions', JSON.stringify({ model: 'text-model', messages: [{ role: 'user', content: 'hi' }] }));
      const record = await recordTagged(tag);

      expect(record).toMatchObject({ status: 499, errorCode: 'client_closed', interface: 'chat_completions', model: 'text-model', usage: null, costNano: 0n });
      // Recorded at once, not after the upstream's 800 ms: the upstream call was cut, not awaited.
      expect(record.upstreamHeadersMs).toBeNull();
    });
  });
});
