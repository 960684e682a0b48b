import { dataUrl, type Invalid, SIMULATED_PNG_BASE64, textTokens } from './image-common';
import { asRecord, unixSeconds } from './scripted-model';
import type { RecordedRequest, Route, RouteContext } from './simulator-types';
import { openAiError } from './vendor-errors';

/**
 * Image format A (OpenAI Images, gpt-image-1 answers): `POST /v1/images/generations` (JSON) and
 * `POST /v1/images/edits` (multipart form or JSON); Bearer key; OpenAI error shape.
 * Every figure is a pure function of the request (formulas exported below); images are the one
 * tiny valid PNG of image-common.ts whatever format was asked for.
 * @see https://platform.openai.com/docs/api-reference/images
 */

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
