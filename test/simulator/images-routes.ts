import { crc32, deflateSync } from 'node:zlib';
import { asRecord, newId, unixSeconds } from './scripted-model';
import type { Refusal, RecordedRequest, Route, RouteContext } from './simulator-types';
import { googleError, openAiError } from './vendor-errors';
import { vendorBError } from './video-tasks';

/**
 * The three synchronous image formats, paths as the gateway calls them upstream:
 * - A (OpenAI Images, gpt-image-1 answers): `POST /v1/images/generations` (JSON) and
 *   `POST /v1/images/edits` (multipart form or JSON); Bearer key; OpenAI error shape.
 * - B (Volcengine Ark Seedream): `POST /api/v3/images/generations`; Bearer key; Ark error shape.
 * - C (Gemini generateContent): `POST /v1beta/models/{model}:generateContent`; `x-goog-api-key`;
 *   Google error shape.
 * Every figure is a pure function of the request (formulas exported below); images are one tiny
 * valid PNG whatever format was asked for.
 * @see https://platform.openai.com/docs/api-reference/images
 * @see https://www.volcengine.com/docs/82379/1541523
 * @see https://ai.google.dev/api/generate-content
 */

/** A 1x1 RGBA PNG built here (signature, IHDR, IDAT, IEND with their CRCs): every image answered. */
export const SIMULATED_PNG: Buffer = encodePng(0x2a, 0x9d, 0x8f, 0xff);
export const SIMULATED_PNG_BASE64 = SIMULATED_PNG.toString('base64');

/** Where format B says its images are when asked for URLs; never fetched. */
export const IMAGE_HOST = 'https://images.simulator.invalid';

/** Prompt text counts a quarter of its UTF-8 bytes, rounded up (the embeddings rule). */
export function textTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

// ---------------------------------------------------------------- format A

export type ImageQuality = 'low' | 'medium' | 'high';

/**
 * gpt-image-1's published output tokens for a 1024x1024 image; 1024x1536 and 1536x1024 use their
 * own published figures, any other size the square figure scaled by its pixels.
 */
const SQUARE_TOKENS: Record<ImageQuality, number> = { low: 272, medium: 1056, high: 4160 };
const PUBLISHED_TOKENS: Record<string, Record<ImageQuality, number>> = {
  '1024x1024': SQUARE_TOKENS,
  '1024x1536': { low: 408, medium: 1584, high: 6240 },
  '1536x1024': { low: 400, medium: 1568, high: 6208 },
};

/** Output text tokens per generated image (what the model wrote about it), so that figure is never 0. */
export const OUTPUT_TEXT_TOKENS_PER_IMAGE = 16;
/** Input image tokens: this base per image plus one per started KiB of its bytes (addresses: base only). */
export const INPUT_IMAGE_BASE_TOKENS = 85;

export function outputImageTokens(size: string, quality: ImageQuality): number {
  const published = PUBLISHED_TOKENS[size]?.[quality];
  if (published !== undefined) return published;
  const [width, height] = size.split('x').map(Number);
  return Math.round((SQUARE_TOKENS[quality] * width * height) / (1024 * 1024));
}

export function inputImageTokens(byteLength: number | undefined): number {
  return INPUT_IMAGE_BASE_TOKENS + (byteLength === undefined ? 0 : Math.ceil(byteLength / 1024));
}

/** One input image of an edit as the simulator read it. */
export interface ImageInput {
  /** Multipart field (`image`, `image[]`, `mask`) or JSON path (`images[0]`, `mask`). */
  field: string;
  /** Multipart part's filename and content type, or the data URL's media type. */
  filename?: string;
  type?: string;
  /** Decoded size; undefined for an http(s) address, which is never fetched. */
  byteLength?: number;
  /** The decoded bytes (readImageEdit only; the route never copies them). */
  bytes?: Buffer;
  /** JSON form: the `image_url` as sent. */
  url?: string;
}

/** What format A's handlers work from: top-level fields (form values are strings) and images. */
export interface ImageRequest {
  fields: Record<string, unknown>;
  images: ImageInput[];
  mask?: ImageInput;
}

/** A request the vendor refuses: message and the parameter named in `error.param`. */
interface Invalid {
  invalid: string;
  param?: string;
}

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp'];
const QUALITIES = ['low', 'medium', 'high', 'auto'];
const OUTPUT_FORMATS = ['png', 'jpeg', 'webp'];
const BACKGROUNDS = ['transparent', 'opaque', 'auto'];
/** How `auto` resolves in the answer's echoed settings. */
const AUTO = { size: '1024x1024', quality: 'medium' as ImageQuality, background: 'opaque' };

const refuseA = (context: RouteContext, { invalid, param }: Invalid) =>
  context.json(400, openAiError(400, invalid, param && invalid.startsWith('Missing') ? 'missing_required_parameter' : null, param ?? null));

export const imageGenerationsRoute: Route = {
  vendor: 'openai',
  async handle(context) {
    return answerImagesA(context, { fields: context.body, images: [] });
  },
};

export const imageEditsRoute: Route = {
  vendor: 'openai',
  checksOwnBody: true,
  async handle(context) {
    const decoded = await decodeImageEdit(context.request, false);
    if ('invalid' in decoded) return refuseA(context, decoded);
    if (decoded.images.length === 0) return refuseA(context, { invalid: "Missing required parameter: 'image'.", param: 'image' });
    return answerImagesA(context, decoded);
  },
};

/**
 * The edit request as the simulator reads it, with every image's bytes: for tests checking what
 * arrived (a multipart file byte for byte, a data URL decoded). Throws on a request it refuses.
 */
export async function readImageEdit(request: RecordedRequest): Promise<ImageRequest> {
  const decoded = await decodeImageEdit(request, true);
  if ('invalid' in decoded) throw new Error(decoded.invalid);
  return decoded;
}

async function answerImagesA(context: RouteContext, request: ImageRequest): Promise<void> {
  const { fields } = request;
  const options = imageOptionsA(fields);
  if ('invalid' in options) return refuseA(context, options);
  const text = textTokens(String(fields.prompt));
  const imageIn = request.images.reduce((sum, image) => sum + inputImageTokens(image.byteLength), 0);
  const imageOut = options.n * outputImageTokens(options.size, options.quality);
  const textOut = options.n * OUTPUT_TEXT_TOKENS_PER_IMAGE;
  return context.json(200, {
    created: unixSeconds(),
    data: Array.from({ length: options.n }, () => ({ b64_json: SIMULATED_PNG_BASE64 })),
    background: options.background,
    output_format: options.outputFormat,
    quality: options.quality,
    size: options.size,
    usage: {
      input_tokens: text + imageIn,
      input_tokens_details: { text_tokens: text, image_tokens: imageIn },
      output_tokens: textOut + imageOut,
      output_tokens_details: { text_tokens: textOut, image_tokens: imageOut },
      total_tokens: text + imageIn + textOut + imageOut,
    },
  });
}

interface OptionsA {
  n: number;
  size: string;
  quality: ImageQuality;
  outputFormat: string;
  background: string;
}

/** Reads the settings of either body kind (a form sends "2" for n) and resolves `auto`. */
function imageOptionsA(fields: Record<string, unknown>): OptionsA | Invalid {
  if (typeof fields.model !== 'string' || fields.model === '') return { invalid: "Missing required parameter: 'model'.", param: 'model' };
  if (typeof fields.prompt !== 'string' || fields.prompt === '') return { invalid: "Missing required parameter: 'prompt'.", param: 'prompt' };
  if (fields.stream === true || fields.stream === 'true') return { invalid: 'The simulator does not stream images.', param: 'stream' };
  const n = fields.n === undefined ? 1 : Number(fields.n);
  if (!Number.isInteger(n) || n < 1 || n > 10) {
    return { invalid: `Invalid 'n': ${String(fields.n)}. Expected an integer from 1 to 10.`, param: 'n' };
  }
  const size = String(fields.size ?? 'auto');
  const sized = /^(\d+)x(\d+)$/.exec(size);
  if (size !== 'auto' && (!sized || [sized[1], sized[2]].some((side) => Number(side) < 16 || Number(side) > 4096))) {
    return { invalid: `Invalid value: '${size}'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.`, param: 'size' };
  }
  const choice = (name: string, allowed: string[], fallback: string): string | Invalid => {
    const value = String(fields[name] ?? fallback);
    if (allowed.includes(value)) return value;
    return { invalid: `Invalid value: '${value}'. Supported values are: ${allowed.map((option) => `'${option}'`).join(', ')}.`, param: name };
  };
  const quality = choice('quality', QUALITIES, 'auto');
  const outputFormat = choice('output_format', OUTPUT_FORMATS, 'png');
  const background = choice('background', BACKGROUNDS, 'auto');
  for (const value of [quality, outputFormat, background]) if (typeof value !== 'string') return value;
  return {
    n,
    size: size === 'auto' ? AUTO.size : size,
    quality: quality === 'auto' ? AUTO.quality : (quality as ImageQuality),
    outputFormat: outputFormat as string,
    background: background === 'auto' ? AUTO.background : (background as string),
  };
}

/** A form (parsed by the platform's own FormData parser) or a JSON body with `images[].image_url`. */
async function decodeImageEdit(request: RecordedRequest, withBytes: boolean): Promise<ImageRequest | Invalid> {
  const contentType = String(request.headers['content-type'] ?? '');
  if (contentType.startsWith('multipart/form-data')) return decodeForm(request.body, contentType, withBytes);
  const json = request.json;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return { invalid: 'We could not parse the JSON body of your request. Send JSON or multipart/form-data.' };
  }
  const fields = json as Record<string, unknown>;
  const listed = fields.images ?? [];
  if (!Array.isArray(listed)) return { invalid: "Invalid type for 'images': expected an array of objects.", param: 'images' };
  const images: ImageInput[] = [];
  for (const [index, entry] of listed.entries()) {
    const image = referencedImage(`images[${index}]`, entry, withBytes);
    if ('invalid' in image) return image;
    images.push(image);
  }
  if (fields.mask === undefined) return { fields, images };
  const mask = referencedImage('mask', fields.mask, withBytes);
  return 'invalid' in mask ? mask : { fields, images, mask };
}

async function decodeForm(body: Buffer, contentType: string, withBytes: boolean): Promise<ImageRequest | Invalid> {
  let form: FormData;
  try {
    form = await new Request('http://simulator.invalid/', { method: 'POST', headers: { 'content-type': contentType }, body }).formData();
  } catch {
    return { invalid: 'Could not parse multipart form data. Check the boundary and the parts.' };
  }
  const fields: Record<string, unknown> = {};
  const images: ImageInput[] = [];
  let mask: ImageInput | undefined;
  for (const [field, value] of form) {
    if (typeof value === 'string') {
      fields[field] = value;
      continue;
    }
    if (field !== 'image' && field !== 'image[]' && field !== 'mask') continue;
    const allowed = field === 'mask' ? ['image/png'] : IMAGE_TYPES;
    if (!allowed.includes(value.type)) {
      const [sent, names] = [value.type || 'application/octet-stream', allowed.map((type) => `'${type}'`).join(', ')];
      return { invalid: `Invalid file '${field}': unsupported mimetype ('${sent}'). Supported file formats are ${names}.`, param: field };
    }
    const image: ImageInput = { field, filename: value.name, type: value.type, byteLength: value.size };
    if (withBytes) image.bytes = Buffer.from(await value.arrayBuffer());
    if (field === 'mask') mask = image;
    else images.push(image);
  }
  return mask ? { fields, images, mask } : { fields, images };
}

/** `{ image_url }` as a data URL (size from the base64 length, decoded only on request) or an address. */
function referencedImage(field: string, entry: unknown, withBytes: boolean): ImageInput | Invalid {
  const record = asRecord(entry);
  if (record.file_id !== undefined) {
    return { invalid: `The simulator stores no files: '${String(record.file_id)}' does not exist.`, param: field };
  }
  const url = record.image_url;
  if (typeof url !== 'string') return { invalid: `Missing required parameter: '${field}.image_url'.`, param: field };
  if (/^https?:\/\//.test(url)) return { field, url };
  const data = dataUrl(url);
  if (!data) return { invalid: `Invalid '${field}.image_url': expected an http(s) address or a base64 data URL.`, param: field };
  if (!IMAGE_TYPES.includes(data.type)) return { invalid: `Invalid '${field}.image_url': unsupported mimetype ('${data.type}').`, param: field };
  const image: ImageInput = { field, type: data.type, url, byteLength: data.byteLength };
  if (withBytes) image.bytes = Buffer.from(url.slice(data.offset), 'base64');
  return image;
}

/** `data:<type>;base64,<payload>`: looks at the head only, so a 30 MiB address costs no copy. */
function dataUrl(url: string): { type: string; offset: number; byteLength: number } | undefined {
  const head = /^data:([\w.+-]+\/[\w.+-]+);base64,/.exec(url.slice(0, 128));
  if (!head) return undefined;
  const offset = head[0].length;
  const length = url.length - offset;
  const padding = url.endsWith('==') ? 2 : url.endsWith('=') ? 1 : 0;
  return { type: head[1], offset, byteLength: Math.floor((length * 3) / 4) - padding };
}

// ---------------------------------------------------------------- format B

/** Seedream limits: reference images per request, and references plus outputs together. */
export const ARK_MAX_REFERENCE_IMAGES = 14;
export const ARK_MAX_TOTAL_IMAGES = 15;
const ARK_PRESETS: Record<string, string> = { '1K': '1024x1024', '2K': '2048x2048', '4K': '4096x4096' };

/** Ark's output tokens of one image: its pixels / 256. */
export function arkImageTokens(size: string): number {
  const [width, height] = size.split('x').map(Number);
  return Math.floor((width * height) / 256);
}

/**
 * How many images an answer holds: 1 unless `sequential_image_generation` is `auto`, then as many
 * as allowed (`max_images`, default 15, capped so references plus outputs stay within 15).
 */
export function arkImageCount(body: Record<string, unknown>, references: number): number {
  if (body.sequential_image_generation !== 'auto') return 1;
  const asked = asRecord(body.sequential_image_generation_options).max_images;
  return Math.max(1, Math.min(typeof asked === 'number' ? asked : ARK_MAX_TOTAL_IMAGES, ARK_MAX_TOTAL_IMAGES - references));
}

export const arkImagesRoute: Route = {
  vendor: 'openai',
  checksOwnBody: true,
  errorBody: (status, message) => vendorBError(status, message),
  async handle(context) {
    const request = readArkRequest(context.request.json);
    if ('invalid' in request) return context.json(400, vendorBError(400, request.invalid, 'InvalidParameter', request.param));
    const { body, references, size } = request;
    const count = arkImageCount(body, references);
    const id = newId('', 16);
    const tokens = count * arkImageTokens(size);
    const image = (index: number) =>
      body.response_format === 'b64_json' ? { b64_json: SIMULATED_PNG_BASE64, size } : { url: `${IMAGE_HOST}/ark/${id}_${index}.png`, size };
    return context.json(200, {
      model: body.model,
      created: unixSeconds(),
      data: Array.from({ length: count }, (_, index) => image(index)),
      usage: { generated_images: count, output_tokens: tokens, total_tokens: tokens, input_images: references },
    });
  },
};

/** The body when Ark would take it, with its reference image count and output size. */
function readArkRequest(json: unknown): { body: Record<string, unknown>; references: number; size: string } | Invalid {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return { invalid: 'The request body must be a JSON object.', param: 'body' };
  }
  const body = json as Record<string, unknown>;
  for (const name of ['model', 'prompt']) {
    if (typeof body[name] !== 'string' || body[name] === '') {
      return { invalid: `The parameter \`${name}\` specified in the request is required.`, param: name };
    }
  }
  if (body.stream === true) return { invalid: 'The simulator does not stream images.', param: 'stream' };
  const references = body.image === undefined ? [] : Array.isArray(body.image) ? body.image : [body.image];
  if (references.length > ARK_MAX_REFERENCE_IMAGES) {
    return { invalid: `At most ${ARK_MAX_REFERENCE_IMAGES} reference images are allowed.`, param: 'image' };
  }
  if (!references.every((image) => typeof image === 'string' && (/^https?:\/\//.test(image) || dataUrl(image) !== undefined))) {
    return { invalid: 'The parameter `image` must be an http(s) address or a base64 data URL, or an array of them.', param: 'image' };
  }
  const size = arkSize(body.size);
  if (!size) return { invalid: `The parameter \`size\` specified in the request is not valid: ${String(body.size)}.`, param: 'size' };
  if (!['url', 'b64_json', undefined].includes(body.response_format as string)) {
    return { invalid: 'The parameter `response_format` must be url or b64_json.', param: 'response_format' };
  }
  if (!['auto', 'disabled', undefined].includes(body.sequential_image_generation as string)) {
    return { invalid: 'The parameter `sequential_image_generation` must be auto or disabled.', param: 'sequential_image_generation' };
  }
  return { body, references: references.length, size };
}

/** "WxH" with 1280x720 to 4096x4096 pixels and sides at most 16:1, or a preset; default 2048x2048. */
function arkSize(value: unknown): string | undefined {
  if (value === undefined) return '2048x2048';
  if (typeof value !== 'string') return undefined;
  if (ARK_PRESETS[value]) return ARK_PRESETS[value];
  const match = /^(\d+)x(\d+)$/.exec(value);
  if (!match) return undefined;
  const [width, height] = [Number(match[1]), Number(match[2])];
  const pixels = width * height;
  const fits = pixels >= 1280 * 720 && pixels <= 4096 * 4096 && Math.max(width / height, height / width) <= 16;
  return fits ? value : undefined;
}

// ---------------------------------------------------------------- format C

/** Gemini's published figures: an input image (up to 384 px a side) and an output image (gemini-2.5-flash-image). */
export const GEMINI_INPUT_IMAGE_TOKENS = 258;
export const GEMINI_OUTPUT_IMAGE_TOKENS = 1290;
/** Thinking tokens when `thinkingConfig` asks for thinking; a positive `thinkingBudget` below it caps it. */
export const GEMINI_THOUGHT_TOKENS = 128;
/** What an image model answers with when the request names no `responseModalities` (or an empty list). */
export const DEFAULT_MODALITIES = ['TEXT', 'IMAGE'];

const GENERATE_CONTENT_PATH = /^\/v1beta\/models\/([^/:]+):([A-Za-z]+)$/;

/** The route for `/v1beta/models/{model}:{method}`: generateContent for any model name, else a 404. */
export function generateContentRoute(method: string, pathname: string): Route | undefined {
  const match = GENERATE_CONTENT_PATH.exec(pathname);
  if (!match) return undefined;
  if (method === 'POST' && match[2] === 'generateContent') return generateContent(decodeSegment(match[1]));
  return googleRoute((context) => context.json(404, googleError(404, `Method ${method} ${pathname} is not served by the simulator.`)));
}

/** The reply's text part: fixed words and the start of the last user text. */
export function geminiReplyText(prompt: string): string {
  return `Here is the image you asked for: ${Array.from(prompt).slice(0, 60).join('')}`;
}

/** Thinking tokens reported for a `thinkingConfig` (undefined: not configured, so none). */
export function geminiThoughtTokens(thinkingConfig: unknown): number {
  if (thinkingConfig === undefined) return 0;
  const budget = asRecord(thinkingConfig).thinkingBudget;
  if (budget === 0) return 0;
  return typeof budget === 'number' && budget > 0 ? Math.min(budget, GEMINI_THOUGHT_TOKENS) : GEMINI_THOUGHT_TOKENS;
}

function googleRoute(handle: Route['handle']): Route {
  return {
    vendor: 'openai',
    credential: 'x-goog-api-key',
    checksOwnBody: true,
    errorBody: (status, message) => googleError(status, message),
    unauthorized: refuseGoogleKey,
    handle,
  };
}

/** Google answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID) and a missing one with 403. */
function refuseGoogleKey(presented: boolean): Refusal {
  if (!presented) {
    const message =
      "Method doesn't allow unregistered callers (callers without established identity). " +
      'Please use API Key or other form of API consumer identity to call this API.';
    return { status: 403, body: googleError(403, message) };
  }
  const reason = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: 'API_KEY_INVALID',
    domain: 'googleapis.com',
    metadata: { service: 'generativelanguage.googleapis.com' },
  };
  return { status: 400, body: googleError(400, 'API key not valid. Please pass a valid API key.', [reason]) };
}

/** What the request holds: input tokens per modality and the last user text. */
interface GeminiPrompt {
  tokens: Record<string, number>;
  lastText: string;
}

function generateContent(model: string): Route {
  return googleRoute(async (context) => {
    const json = context.request.json;
    const invalid = (message: string) => context.json(400, googleError(400, message));
    if (json === null || typeof json !== 'object' || Array.isArray(json)) return invalid('Invalid JSON payload received. Expected an object.');
    const body = json as Record<string, unknown>;
    const prompt = readPrompt(body);
    if ('invalid' in prompt) return invalid(prompt.invalid);
    const config = asRecord(body.generationConfig);
    const asked = config.responseModalities;
    if (asked !== undefined && (!Array.isArray(asked) || asked.some((value) => !['TEXT', 'IMAGE', 'AUDIO'].includes(value as string)))) {
      return invalid(`Invalid value at 'generation_config.response_modalities': ${JSON.stringify(asked)}`);
    }
    const modalities = Array.isArray(asked) && asked.length > 0 ? (asked as string[]) : DEFAULT_MODALITIES;
    if (modalities.includes('AUDIO')) return invalid('Model does not support the requested response modalities: audio');
    const thinking = asRecord(config.thinkingConfig);
    const thoughts = geminiThoughtTokens(config.thinkingConfig);
    const text = geminiReplyText(prompt.lastText);
    const output: Record<string, number> = {};
    const parts: unknown[] = [];
    if (thoughts > 0 && thinking.includeThoughts === true) parts.push({ text: 'Planning the composition before drawing it.', thought: true });
    if (modalities.includes('TEXT')) {
      parts.push({ text });
      output.TEXT = textTokens(text);
    }
    if (modalities.includes('IMAGE')) {
      parts.push({ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } });
      output.IMAGE = GEMINI_OUTPUT_IMAGE_TOKENS;
    }
    const promptCount = sum(prompt.tokens);
    const candidatesCount = sum(output);
    return context.json(200, {
      candidates: [{ content: { parts, role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: promptCount,
        candidatesTokenCount: candidatesCount,
        totalTokenCount: promptCount + candidatesCount + thoughts,
        ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
        promptTokensDetails: details(prompt.tokens),
        candidatesTokensDetails: details(output),
      },
      modelVersion: model,
      responseId: newId('', 22),
    });
  });
}

/**
 * Text parts count textTokens (system instruction included); every inline or file part counts
 * GEMINI_INPUT_IMAGE_TOKENS under its modality (IMAGE, AUDIO, VIDEO or DOCUMENT).
 */
function readPrompt(body: Record<string, unknown>): GeminiPrompt | Invalid {
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return { invalid: '* GenerateContentRequest.contents: contents is not specified' };
  const tokens: Record<string, number> = { TEXT: 0 };
  const add = (modality: string, count: number) => (tokens[modality] = (tokens[modality] ?? 0) + count);
  for (const part of partsOf(body.systemInstruction)) if (typeof part.text === 'string') add('TEXT', textTokens(part.text));
  let lastText = '';
  for (const [index, content] of contents.entries()) {
    const parts = partsOf(content);
    if (parts.length === 0) return { invalid: `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.` };
    const texts: string[] = [];
    for (const part of parts) {
      const media = asRecord(part.inlineData ?? part.fileData);
      if (typeof part.text === 'string') {
        add('TEXT', textTokens(part.text));
        if (part.thought !== true) texts.push(part.text);
      } else if (part.inlineData !== undefined || part.fileData !== undefined) {
        if (typeof media.mimeType !== 'string') return { invalid: `* GenerateContentRequest.contents[${index}].parts: mime_type is required.` };
        add(modalityOf(media.mimeType), GEMINI_INPUT_IMAGE_TOKENS);
      }
    }
    if (asRecord(content).role !== 'model' && texts.length > 0) lastText = texts.join(' ');
  }
  return { tokens, lastText };
}

function partsOf(content: unknown): Record<string, unknown>[] {
  const parts = asRecord(content).parts;
  return Array.isArray(parts) ? parts.map(asRecord) : [];
}

function modalityOf(mimeType: string): string {
  const kind = mimeType.split('/')[0];
  return kind === 'image' || kind === 'audio' || kind === 'video' ? kind.toUpperCase() : 'DOCUMENT';
}

function details(tokens: Record<string, number>): Array<{ modality: string; tokenCount: number }> {
  return Object.entries(tokens)
    .filter(([modality, count]) => count > 0 || modality === 'TEXT')
    .map(([modality, tokenCount]) => ({ modality, tokenCount }));
}

const sum = (tokens: Record<string, number>) => Object.values(tokens).reduce((total, count) => total + count, 0);

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

// ---------------------------------------------------------------- PNG

function encodePng(red: number, green: number, blue: number, alpha: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(1, 0); // width
  header.writeUInt32BE(1, 4); // height
  header.set([8, 6, 0, 0, 0], 8); // 8 bits per channel, RGBA, deflate, no filter method, no interlace
  const scanline = Buffer.from([0, red, green, blue, alpha]); // filter byte "None", one pixel
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(scanline)), chunk('IEND', Buffer.alloc(0))]);
}
