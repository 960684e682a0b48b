import { dataUrl, IMAGE_HOST, type Invalid, SIMULATED_PNG_BASE64 } from './image-common';
import { asRecord, newId, unixSeconds } from './scripted-model';
import type { Route } from './simulator-types';
import { vendorBError } from './video-tasks';

/**
 * Image format B (Volcengine Ark Seedream): `POST /api/v3/images/generations`; Bearer key; Ark
 * error shape. Every figure is a pure function of the request (formulas exported below); images
 * are the one tiny valid PNG of image-common.ts, or addresses under IMAGE_HOST that are never fetched.
 * @see https://www.volcengine.com/docs/82379/1541523
 */

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
