import { ApiError, GoogleGenAI } from '@google/genai';
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import type { UsageRecord } from '../src/metering/usage-record.entity';
import { GEMINI_INPUT_IMAGE_TOKENS, GEMINI_OUTPUT_IMAGE_TOKENS, geminiReplyText } from './simulator/generate-content-route';
import { SIMULATED_PNG, SIMULATED_PNG_BASE64, textTokens } from './simulator/image-common';
import { OUTPUT_TEXT_TOKENS_PER_IMAGE, inputImageTokens, outputImageTokens, readImageEdit } from './simulator/images-a-routes';
import type { RecordedRequest } from './simulator/upstream-simulator';
import { googleError, openAiError } from './simulator/vendor-errors';
import { vendorBError } from './simulator/video-tasks';
import { GatewayHarness } from './support/gateway-harness';
import { formBody, IMAGE_KEYS, IMAGE_PATHS, imagesConfigYaml } from './support/images-kit';
import { VENDOR_KEY } from './support/test-config';

/**
 * The three image formats end to end (SPEC.md "Images", "Images format A/B/C", "Authentication",
 * "Errors", "Metering and billing"): format A through the official `openai` SDK (generations,
 * multipart and JSON edits), format B over raw HTTP with its pixel-tier prices, format C through
 * the official `@google/genai` client; what reaches the upstream (byte for byte, the upstream
 * model name, the line's key, no query), the usage record of every call and its exact cost,
 * wrong endpoints, admission, upstream errors and the body limit, each in its format's shape.
 */

const UPSTREAM = { a: 'vendor-image-a-1', b: 'vendor-image-b-4', c: 'vendor-image-c-flash' } as const;
const UPSTREAM_PATHS = {
  generations: '/v1/images/generations',
  edits: '/v1/images/edits',
  vendorB: '/api/v3/images/generations',
  generateContent: `/v1beta/models/${UPSTREAM.c}:generateContent`,
};
const BODY_LIMIT_BYTES = 32 * 1024 * 1024;

/** Prices of imagesConfigYaml in nano-units (1e-9 currency units): per 1M tokens, or per image. */
const PRICES_A: Record<string, bigint> = {
  input_text_tokens: 5_000_000_000n,
  input_image_tokens: 10_000_000_000n,
  output_text_tokens: 10_000_000_000n,
  output_image_tokens: 40_000_000_000n,
};
const PRICES_C: Record<string, bigint> = {
  input_tokens: 300_000_000n,
  output_text_tokens: 2_500_000_000n,
  thinking_tokens: 2_500_000_000n,
  output_image_tokens: 30_000_000_000n,
};
const B_UP_TO_1MP = 20_000_000n;
const B_UP_TO_4MP = 30_000_000n;
const B_ABOVE_4MP = 40_000_000n;
const B_INPUT_IMAGE = 2_000_000n;

/** Token figures at per-1M prices: summed exactly, rounded once, half up, to a nano-unit. */
function perMillionCost(figures: Record<string, number>, prices: Record<string, bigint>): bigint {
  let total = 0n;
  for (const [name, count] of Object.entries(figures)) total += BigInt(count) * (prices[name] ?? 0n);
  return (total + 500_000n) / 1_000_000n;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
  requestId: string;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const googKey = (key: string) => ({ 'x-goog-api-key': key });
const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;

/** The gateway's own errors: chat shape on formats A and B and chat, Google shape on format C. */
const CHAT_ERROR = (code: string | null) => ({ error: { message: expect.any(String), type: expect.any(String), code } });
const GOOGLE_ERROR = (status: number, grpcStatus: unknown, reason: string) => ({
  error: {
    code: status,
    message: expect.any(String),
    status: grpcStatus,
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'gateway' }],
  },
});

/**
 * imagesConfigYaml plus a line whose vendor key the upstream refuses: image-a and image-c use only
 * that line; image-a-failover and image-c-failover try it first, then the good line.
 */
function badLineConfigYaml(simulator: string): string {
  const yaml = imagesConfigYaml(simulator)
    .replace('models:\n', `  - id: line-bad\n    base_url: ${simulator}\n    api_key: wrong-vendor-key\nmodels:\n`)
    .replace(/(- id: image-a\n(?: {4}.*\n)*? {4}lines: )\[line-a\]/, '$1[line-bad]')
    .replace(/(- id: image-c\n(?: {4}.*\n)*? {4}lines: )\[line-a\]/, '$1[line-bad]');
  const failover = `  - id: image-a-failover
    upstream_model: ${UPSTREAM.a}
    interfaces: [images_a]
    lines: [line-bad, line-a]
  - id: image-c-failover
    upstream_model: ${UPSTREAM.c}
    interfaces: [images_c]
    lines: [line-bad, line-a]
owners:
`;
  return yaml.replace('owners:\n', failover);
}

const GEMINI_TEXT_BODY = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'A lighthouse at dusk' }] }] });

describe('images formats A, B and C', () => {
  let gateway: GatewayHarness;
  let openai: OpenAI;
  let ai: GoogleGenAI;
  /** What the openai SDK put on the wire, request by request (content type and body bytes). */
  const sdkSent: Array<{ contentType: string; body: Buffer; headers: Headers }> = [];

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: imagesConfigYaml });
    openai = new OpenAI({
      apiKey: IMAGE_KEYS.all,
      baseURL: `${gateway.url}/v1`,
      maxRetries: 0,
      timeout: 20_000,
      // Serialises the SDK's request once and sends exactly those bytes, so the test knows them.
      fetch: async (input, init) => {
        // The SDK probes `fetch('data:,')` once before its first upload.
        if (String(input).startsWith('data:')) return fetch(input, init);
        const request = new Request(input as string | URL, init as RequestInit);
        const body = Buffer.from(await request.arrayBuffer());
        sdkSent.push({ contentType: request.headers.get('content-type') ?? '', body, headers: request.headers });
        return fetch(request.url, { method: request.method, headers: request.headers, body, signal: init?.signal ?? undefined });
      },
    });
    ai = new GoogleGenAI({ apiKey: IMAGE_KEYS.all, httpOptions: { baseUrl: gateway.url } });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
    sdkSent.length = 0;
  });

  async function post(path: string, body: string | Buffer, headers: Record<string, string> = bearer(IMAGE_KEYS.all)): Promise<Answer> {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json, requestId: response.headers.get('x-request-id') ?? '' };
  }

  /** The single upstream call, on `path` exactly (no query), with the line's key and never the client's. */
  function forwardedOnce(path: string): RecordedRequest {
    const calls = gateway.simulator.requests;
    expect(calls.map((call) => call.path)).toEqual([path]);
    const [call] = calls;
    const headers = JSON.stringify(call.headers);
    for (const key of Object.values(IMAGE_KEYS)) expect(headers).not.toContain(key);
    if (path.startsWith('/v1beta/')) {
      expect(call.headers['x-goog-api-key']).toBe(VENDOR_KEY);
      expect(call.headers.authorization).toBeUndefined();
    } else {
      expect(call.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
    }
    expect(Object.keys(call.headers).filter((name) => name.startsWith('x-stainless') || name === 'x-goog-api-client')).toEqual([]);
    return call;
  }

  /** Refused before forwarding: a request id, nothing upstream, no usage record. */
  async function expectNothingForwarded(answer: Pick<Answer, 'requestId'>): Promise<void> {
    expect(answer.requestId).not.toBe('');
    expect(gateway.simulator.requests).toHaveLength(0);
    expect(await gateway.usageRecord(answer.requestId)).toBeNull();
  }

  async function recordOf(requestId: string | null): Promise<UsageRecord> {
    expect(requestId).toBeTruthy();
    const record = await gateway.usageRecord(requestId as string);
    expect(record).not.toBeNull();
    return record as UsageRecord;
  }

  /** The client's form with the `model` part's value replaced, every other byte kept. */
  function withModelPart(body: Buffer, from: string, to: string): Buffer {
    const needle = Buffer.from(`name="model"\r\n\r\n${from}\r\n`);
    const at = body.indexOf(needle);
    expect(at).toBeGreaterThan(-1);
    expect(body.indexOf(needle, at + 1)).toBe(-1);
    return Buffer.concat([body.subarray(0, at), Buffer.from(`name="model"\r\n\r\n${to}\r\n`), body.subarray(at + needle.length)]);
  }

  // ------------------------------------------------------------------------------ format A

  describe('format A through the openai SDK', () => {
    it('generates: data[].b64_json and usage come back, the upstream sees its model, the record bills every token kind', async () => {
      const prompt = 'A watercolour fox sitting in the snow at dawn';
      const { data: result, response } = await openai.images
        .generate({ model: 'image-a', prompt, n: 2, size: '1024x1536', quality: 'high', background: 'opaque' })
        .withResponse();

      expect(result.data).toHaveLength(2);
      for (const image of result.data ?? []) expect(Buffer.from(image.b64_json as string, 'base64')).toEqual(SIMULATED_PNG);
      const figures = {
        input_text_tokens: textTokens(prompt),
        input_image_tokens: 0,
        output_text_tokens: 2 * OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: 2 * outputImageTokens('1024x1536', 'high'),
      };
      expect(figures.output_image_tokens).toBe(2 * 6240);
      expect(result.usage).toEqual({
        input_tokens: figures.input_text_tokens,
        input_tokens_details: { text_tokens: figures.input_text_tokens, image_tokens: 0 },
        output_tokens: figures.output_text_tokens + figures.output_image_tokens,
        output_tokens_details: { text_tokens: figures.output_text_tokens, image_tokens: figures.output_image_tokens },
        total_tokens: figures.input_text_tokens + figures.output_text_tokens + figures.output_image_tokens,
      });

      const upstream = forwardedOnce(UPSTREAM_PATHS.generations);
      const sent = JSON.parse(sdkSent[0].body.toString('utf8'));
      expect(upstream.json).toEqual({ ...sent, model: UPSTREAM.a });
      expect(upstream.body.toString('utf8')).toBe(sdkSent[0].body.toString('utf8').replace('"model":"image-a"', `"model":"${UPSTREAM.a}"`));

      const record = await recordOf(response.headers.get('x-request-id'));
      expect(record).toMatchObject({ model: 'image-a', interface: 'images_a', status: 200, errorCode: null, line: 'line-a', stream: false });
      expect(record.usage).toEqual(figures);
      // 12 text tokens: 12×5 000 + 32×10 000 + 12 480×40 000 nano-units.
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_A));
      expect(record.costNano).toBe(BigInt(figures.input_text_tokens) * 5_000n + 32n * 10_000n + 12_480n * 40_000n);
    });

    it('edits one toFile upload: the form arrives byte for byte with only the model part replaced', async () => {
      const bytes = randomBytes(5000);
      const prompt = 'Give the cat a red hat';
      const { data: result, response } = await openai.images
        .edit({
          model: 'image-a',
          prompt,
          image: await toFile(bytes, 'cat.png', { type: 'image/png' }),
          quality: 'low',
          size: '1024x1024',
          input_fidelity: 'high',
        })
        .withResponse();

      expect(result.data?.[0].b64_json).toBe(SIMULATED_PNG_BASE64);
      const upstream = forwardedOnce(UPSTREAM_PATHS.edits);
      expect(sdkSent).toHaveLength(1);
      expect(upstream.headers['content-type']).toBe(sdkSent[0].contentType);
      expect(upstream.body.equals(withModelPart(sdkSent[0].body, 'image-a', UPSTREAM.a))).toBe(true);
      const edit = await readImageEdit(upstream);
      expect(edit.fields).toEqual({ model: UPSTREAM.a, prompt, quality: 'low', size: '1024x1024', input_fidelity: 'high' });
      expect(edit.images).toEqual([{ field: 'image', filename: 'cat.png', type: 'image/png', byteLength: 5000, bytes }]);
      expect(edit.mask).toBeUndefined();

      const figures = {
        input_text_tokens: textTokens(prompt),
        input_image_tokens: inputImageTokens(5000),
        output_text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: outputImageTokens('1024x1024', 'low'),
      };
      expect(result.usage?.input_tokens_details).toEqual({ text_tokens: figures.input_text_tokens, image_tokens: figures.input_image_tokens });
      const record = await recordOf(response.headers.get('x-request-id'));
      expect(record).toMatchObject({ model: 'image-a', interface: 'images_a_edits', status: 200, errorCode: null });
      expect(record.usage).toEqual(figures);
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_A));
    });

    it('edits two uploads as image[] with a mask: every file byte-identical, order and names kept', async () => {
      const [first, second, mask] = [randomBytes(3000), randomBytes(70_000), randomBytes(1500)];
      const prompt = 'Merge the cat and the hat';
      const { data: result, response } = await openai.images
        .edit({
          model: 'image-a',
          prompt,
          image: [await toFile(first, 'cat.png', { type: 'image/png' }), await toFile(second, 'hat photo.jpg', { type: 'image/jpeg' })],
          mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
          n: 3,
          quality: 'medium',
          size: '1536x1024',
          output_format: 'webp',
        })
        .withResponse();

      expect(result.data).toHaveLength(3);
      const upstream = forwardedOnce(UPSTREAM_PATHS.edits);
      expect(upstream.body.equals(withModelPart(sdkSent[0].body, 'image-a', UPSTREAM.a))).toBe(true);
      const edit = await readImageEdit(upstream);
      expect(edit.fields).toEqual({ model: UPSTREAM.a, prompt, n: '3', quality: 'medium', size: '1536x1024', output_format: 'webp' });
      expect(edit.images).toEqual([
        { field: 'image[]', filename: 'cat.png', type: 'image/png', byteLength: 3000, bytes: first },
        { field: 'image[]', filename: 'hat photo.jpg', type: 'image/jpeg', byteLength: 70_000, bytes: second },
      ]);
      expect(edit.mask).toEqual({ field: 'mask', filename: 'mask.png', type: 'image/png', byteLength: 1500, bytes: mask });

      // The simulator counts the mask as no input image.
      const figures = {
        input_text_tokens: textTokens(prompt),
        input_image_tokens: inputImageTokens(3000) + inputImageTokens(70_000),
        output_text_tokens: 3 * OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: 3 * outputImageTokens('1536x1024', 'medium'),
      };
      expect(result.usage?.input_tokens_details.image_tokens).toBe(figures.input_image_tokens);
      expect(result.usage?.output_tokens_details?.image_tokens).toBe(figures.output_image_tokens);
      const record = await recordOf(response.headers.get('x-request-id'));
      expect(record).toMatchObject({ interface: 'images_a_edits', status: 200 });
      expect(record.usage).toEqual(figures);
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_A));
    });

    it('forwards a hand-made form with the model part last byte for byte (parts after files, odd field order)', async () => {
      const bytes = randomBytes(4096);
      const form = formBody([
        ['prompt', 'Add a moon; keep "quotes" and ümlauts'],
        ['image', { filename: 'night.webp', type: 'image/webp', bytes }],
        ['quality', 'high'],
        ['model', 'image-a'],
      ]);
      const answer = await post(IMAGE_PATHS.edits, form.body, { ...bearer(IMAGE_KEYS.all), 'content-type': form.contentType });

      expect(answer.status).toBe(200);
      const upstream = forwardedOnce(UPSTREAM_PATHS.edits);
      expect(upstream.headers['content-type']).toBe(form.contentType);
      expect(upstream.body.equals(withModelPart(form.body, 'image-a', UPSTREAM.a))).toBe(true);
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({
        input_text_tokens: textTokens('Add a moon; keep "quotes" and ümlauts'),
        input_image_tokens: inputImageTokens(4096),
        output_text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: outputImageTokens('1024x1024', 'high'),
      });
      expect(record.costNano).toBe(perMillionCost(record.usage!, PRICES_A));
    });

    it('edits from JSON (images[].image_url data URLs): the body goes upstream byte for byte except model', async () => {
      const [bytes, maskBytes] = [randomBytes(9000), randomBytes(300)];
      const body =
        `{ "prompt" : "Paint it blue",\n  "model":  "image-a", "images": [ {"image_url": "${dataUrl(bytes, 'image/jpeg')}"},` +
        ` {"image_url":"https://example.com/ref.png"} ],\n "mask": {"image_url": "${dataUrl(maskBytes)}"}, "size": "auto", "n": 1 }`;
      const answer = await post(IMAGE_PATHS.edits, body);

      expect(answer.status).toBe(200);
      expect(answer.json.data[0].b64_json).toBe(SIMULATED_PNG_BASE64);
      const upstream = forwardedOnce(UPSTREAM_PATHS.edits);
      expect(upstream.body.toString('utf8')).toBe(body.replace('"model":  "image-a"', `"model":  "${UPSTREAM.a}"`));
      const edit = await readImageEdit(upstream);
      expect(edit.images[0]).toMatchObject({ field: 'images[0]', type: 'image/jpeg', byteLength: 9000, bytes });
      expect(edit.images[1]).toEqual({ field: 'images[1]', url: 'https://example.com/ref.png' });
      expect(edit.mask).toMatchObject({ field: 'mask', byteLength: 300, bytes: maskBytes });

      const figures = {
        input_text_tokens: textTokens('Paint it blue'),
        input_image_tokens: inputImageTokens(9000) + inputImageTokens(undefined),
        output_text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE,
        output_image_tokens: outputImageTokens('1024x1024', 'medium'),
      };
      expect(answer.json.usage.input_tokens_details).toEqual({ text_tokens: figures.input_text_tokens, image_tokens: figures.input_image_tokens });
      const record = await recordOf(answer.requestId);
      expect(record).toMatchObject({ model: 'image-a', interface: 'images_a_edits', status: 200, errorCode: null });
      expect(record.usage).toEqual(figures);
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_A));
    });

    it('returns the upstream answer unchanged and forwards a raw generation byte for byte except model', async () => {
      const body = '{"prompt":"tiny","model" :"image-a" ,"quality":"low","size":"1024x1024","moderation":"low","user":"u-1"}';
      const answer = await post(IMAGE_PATHS.generations, body);

      expect(answer.status).toBe(200);
      const upstream = forwardedOnce(UPSTREAM_PATHS.generations);
      expect(upstream.body.toString('utf8')).toBe(body.replace('"image-a"', `"${UPSTREAM.a}"`));
      const textIn = textTokens('tiny');
      const imageOut = outputImageTokens('1024x1024', 'low');
      expect(answer.text).toBe(
        JSON.stringify({
          created: answer.json.created,
          data: [{ b64_json: SIMULATED_PNG_BASE64 }],
          background: 'opaque',
          output_format: 'png',
          quality: 'low',
          size: '1024x1024',
          usage: {
            input_tokens: textIn,
            input_tokens_details: { text_tokens: textIn, image_tokens: 0 },
            output_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE + imageOut,
            output_tokens_details: { text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE, image_tokens: imageOut },
            total_tokens: textIn + OUTPUT_TEXT_TOKENS_PER_IMAGE + imageOut,
          },
        }),
      );
      expect((await recordOf(answer.requestId)).interface).toBe('images_a');
    });
    it('bills an answer without usage details: the input total as text, the output total as image tokens', async () => {
      const upstreamAnswer = '{"created":1,"data":[{"b64_json":"AAAA"}],"usage":{"input_tokens":50,"output_tokens":4000,"total_tokens":4050}}';
      gateway.simulator.failNext(UPSTREAM_PATHS.generations, { status: 200, body: upstreamAnswer, headers: { 'content-type': 'application/json' } });
      const answer = await post(IMAGE_PATHS.generations, JSON.stringify({ model: 'image-a', prompt: 'x' }));

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(upstreamAnswer);
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({ input_text_tokens: 50, output_image_tokens: 4000 });
      expect(record.costNano).toBe(50n * 5_000n + 4000n * 40_000n);
    });
  });

  // ------------------------------------------------------------------------------ format B

  describe('format B over raw HTTP', () => {
    async function generateB(fields: Record<string, unknown>): Promise<Answer> {
      return post(IMAGE_PATHS.vendorB, JSON.stringify({ model: 'image-b', prompt: 'A red bicycle by a canal', ...fields }));
    }

    it.each([
      { size: '1K', pixels: '1024x1024', price: B_UP_TO_1MP },
      { size: '2K', pixels: '2048x2048', price: B_UP_TO_4MP },
      { size: '4K', pixels: '4096x4096', price: B_ABOVE_4MP },
      { size: '1280x720', pixels: '1280x720', price: B_UP_TO_1MP },
      { size: '2560x1440', pixels: '2560x1440', price: B_UP_TO_4MP },
      { size: '2048x2049', pixels: '2048x2049', price: B_ABOVE_4MP },
    ])('size $size: one image of $pixels billed at its pixel tier', async ({ size, pixels, price }) => {
      const answer = await generateB({ size, response_format: 'b64_json' });

      expect(answer.status).toBe(200);
      expect(answer.json.data).toEqual([{ b64_json: SIMULATED_PNG_BASE64, size: pixels }]);
      expect(answer.json.usage).toMatchObject({ generated_images: 1, input_images: 0 });
      expect(forwardedOnce(UPSTREAM_PATHS.vendorB).json).toMatchObject({ model: UPSTREAM.b, size });
      const record = await recordOf(answer.requestId);
      expect(record).toMatchObject({ model: 'image-b', interface: 'images_b', status: 200, errorCode: null, stream: false });
      expect(record.usage).toEqual({ output_images: 1, input_images: 0 });
      expect(record.costNano).toBe(price);
    });

    it('sequential generation: several images and the reference images, each billed', async () => {
      const references = [dataUrl(randomBytes(2000)), 'https://example.com/style.png'];
      const body =
        '{"model":"image-b","prompt":"Four seasons of one tree","image":' +
        JSON.stringify(references) +
        ',"size":"2K","sequential_image_generation":"auto","sequential_image_generation_options":{"max_images":4},"watermark":false}';
      const answer = await post(IMAGE_PATHS.vendorB, body);

      expect(answer.status).toBe(200);
      expect(answer.json.data).toHaveLength(4);
      for (const image of answer.json.data) expect(image).toEqual({ url: expect.stringMatching(/^https:\/\/images\.simulator\.invalid\//), size: '2048x2048' });
      expect(answer.json.usage).toMatchObject({ generated_images: 4, input_images: 2 });
      const upstream = forwardedOnce(UPSTREAM_PATHS.vendorB);
      expect(upstream.body.toString('utf8')).toBe(body.replace('"model":"image-b"', `"model":"${UPSTREAM.b}"`));
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({ output_images: 4, input_images: 2 });
      expect(record.costNano).toBe(4n * B_UP_TO_4MP + 2n * B_INPUT_IMAGE);
      expect(record.costNano).toBe(124_000_000n);
    });

    it('sequential generation at 1K capped by the references: 15 − 3 images at 0.02 plus 3 inputs', async () => {
      const references = [1, 2, 3].map((index) => `https://example.com/ref-${index}.png`);
      const answer = await generateB({ image: references, size: '1K', sequential_image_generation: 'auto' });

      expect(answer.status).toBe(200);
      expect(answer.json.data).toHaveLength(12);
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({ output_images: 12, input_images: 3 });
      expect(record.costNano).toBe(12n * B_UP_TO_1MP + 3n * B_INPUT_IMAGE);
    });

    it('returns the answer unchanged and forwards the body byte for byte except model', async () => {
      const body = '{\n  "prompt": "Neon city, rain",\n  "model"  :  "image-b",\n  "size": "1K",\n  "response_format": "b64_json",\n  "seed": 42\n}';
      const answer = await post(IMAGE_PATHS.vendorB, body);

      expect(answer.status).toBe(200);
      const upstream = forwardedOnce(UPSTREAM_PATHS.vendorB);
      expect(upstream.body.toString('utf8')).toBe(body.replace('"image-b"', `"${UPSTREAM.b}"`));
      const tokens = (1024 * 1024) / 256;
      expect(answer.text).toBe(
        JSON.stringify({
          model: UPSTREAM.b,
          created: answer.json.created,
          data: [{ b64_json: SIMULATED_PNG_BASE64, size: '1024x1024' }],
          usage: { generated_images: 1, output_tokens: tokens, total_tokens: tokens, input_images: 0 },
        }),
      );
    });

    it('prices each image of a mixed answer by its own size; an unreadable size pays the base price', async () => {
      const upstreamAnswer =
        '{"model":"vendor-image-b-4","created":1,"data":[{"url":"https://x.invalid/1.png","size":"1024x1024"},' +
        '{"url":"https://x.invalid/2.png","size":"2048x2048"},{"url":"https://x.invalid/3.png","size":"4096x4096"},' +
        '{"url":"https://x.invalid/4.png","size":"big"},{"error":{"code":"OutputImageSensitiveContentDetected"}}],' +
        '"usage":{"generated_images":4,"output_tokens":1,"total_tokens":1,"input_images":1}}';
      gateway.simulator.failNext(UPSTREAM_PATHS.vendorB, { status: 200, body: upstreamAnswer, headers: { 'content-type': 'application/json' } });
      const answer = await generateB({ sequential_image_generation: 'auto' });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(upstreamAnswer);
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({ output_images: 4, input_images: 1 });
      expect(record.costNano).toBe(B_UP_TO_1MP + B_UP_TO_4MP + B_ABOVE_4MP + B_ABOVE_4MP + B_INPUT_IMAGE);
      // The record keeps each image's pixels beside the prices, so its cost can be worked out again.
      const [kept] = await gateway.dataSource.query('SELECT price_basis, price_sheet FROM usage_record WHERE request_id = $1', [answer.requestId]);
      expect(kept.price_basis).toEqual({ output_pixels: [1_048_576, 4_194_304, 16_777_216, null] });
      expect(kept.price_sheet).toMatch(/^[0-9a-f]{32}$/);
    });

    it('counts the returned images when the answer has no usage.generated_images', async () => {
      const upstreamAnswer =
        '{"model":"vendor-image-b-4","created":1,"data":[{"url":"https://x.invalid/1.png","size":"1024x1024"},' +
        '{"url":"https://x.invalid/2.png","size":"1024x1024"}],"usage":{"output_tokens":1,"total_tokens":1}}';
      gateway.simulator.failNext(UPSTREAM_PATHS.vendorB, { status: 200, body: upstreamAnswer, headers: { 'content-type': 'application/json' } });
      const answer = await generateB({ sequential_image_generation: 'auto' });

      expect(answer.status).toBe(200);
      expect(answer.text).toBe(upstreamAnswer);
      const record = await recordOf(answer.requestId);
      expect(record.usage).toEqual({ output_images: 2 });
      expect(record.costNano).toBe(2n * B_UP_TO_1MP);
    });

    it('a client that leaves mid-generation: the generation completes upstream and is billed, status 499', async () => {
      gateway.simulator.failNext(UPSTREAM_PATHS.vendorB, { kind: 'delay', ms: 400 });
      const before = new Set((await gateway.usageRecords()).map((record) => record.requestId));
      const gone = fetch(`${gateway.url}${IMAGE_PATHS.vendorB}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(IMAGE_KEYS.all) },
        body: JSON.stringify({ model: 'image-b', prompt: 'Left early', size: '4K' }),
        signal: AbortSignal.timeout(100),
      });
      await expect(gone).rejects.toThrow();

      let record: UsageRecord | undefined;
      for (let attempt = 0; attempt < 60 && !record; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        record = (await gateway.usageRecords()).find((candidate) => !before.has(candidate.requestId));
      }
      expect(record).toMatchObject({ model: 'image-b', interface: 'images_b', status: 499, errorCode: 'client_closed' });
      expect(record?.usage).toEqual({ output_images: 1, input_images: 0 });
      expect(record?.costNano).toBe(B_ABOVE_4MP);
      forwardedOnce(UPSTREAM_PATHS.vendorB);
    });
  });

  // ------------------------------------------------------------------------------ format C

  describe('format C through the @google/genai client', () => {
    it('answers text and an image with usageMetadata; the upstream sees its model in the path, its key, no query', async () => {
      const prompt = 'Draw a paper crane on a wooden desk';
      const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
      const response = await ai.models.generateContent({
        model: 'image-c',
        contents: [{ role: 'user', parts: [{ text: prompt }, { inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }] }],
        config: { responseModalities: ['TEXT', 'IMAGE'] },
      });
      // The SDK's text and data getters warn about the other modality's parts.
      const [text, data] = [response.text, response.data];
      warn.mockRestore();

      expect(text).toBe(geminiReplyText(prompt));
      const parts = response.candidates?.[0].content?.parts ?? [];
      expect(parts.find((part) => part.inlineData)?.inlineData).toEqual({ mimeType: 'image/png', data: SIMULATED_PNG_BASE64 });
      expect(data).toBe(SIMULATED_PNG_BASE64);
      const promptTokens = textTokens(prompt) + GEMINI_INPUT_IMAGE_TOKENS;
      const textOut = textTokens(geminiReplyText(prompt));
      expect(response.usageMetadata).toMatchObject({
        promptTokenCount: promptTokens,
        candidatesTokenCount: textOut + GEMINI_OUTPUT_IMAGE_TOKENS,
        totalTokenCount: promptTokens + textOut + GEMINI_OUTPUT_IMAGE_TOKENS,
      });

      const upstream = forwardedOnce(UPSTREAM_PATHS.generateContent);
      expect(upstream.json).toEqual({
        contents: [{ role: 'user', parts: [{ text: prompt }, { inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }] }],
        generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
      });
      expect(upstream.json).not.toHaveProperty('model');
      const record = await recordOf(response.sdkHttpResponse?.headers?.['x-request-id'] ?? null);
      expect(record).toMatchObject({ model: 'image-c', interface: 'images_c', status: 200, errorCode: null, line: 'line-a', stream: false });
      const figures = { input_tokens: promptTokens, output_text_tokens: textOut, output_image_tokens: GEMINI_OUTPUT_IMAGE_TOKENS };
      expect(record.usage).toEqual(figures);
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_C));
      expect(record.costNano).toBe(BigInt(promptTokens) * 300n + BigInt(textOut) * 2_500n + 1290n * 30_000n);
    });

    it('bills thinking (config.thinkingConfig) as thinking_tokens', async () => {
      const prompt = 'Plan, then draw, a chess board';
      const response = await ai.models.generateContent({
        model: 'image-c',
        contents: prompt,
        config: { responseModalities: ['IMAGE'], thinkingConfig: { thinkingBudget: 100, includeThoughts: true } },
      });

      expect(response.usageMetadata?.thoughtsTokenCount).toBe(100);
      const parts = response.candidates?.[0].content?.parts ?? [];
      expect(parts.map((part) => (part.thought ? 'thought' : part.inlineData ? 'image' : 'text'))).toEqual(['thought', 'image']);
      const upstream = forwardedOnce(UPSTREAM_PATHS.generateContent);
      expect((upstream.json as any).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 100, includeThoughts: true });
      const record = await recordOf(response.sdkHttpResponse?.headers?.['x-request-id'] ?? null);
      expect(record).toMatchObject({ model: 'image-c', interface: 'images_c', status: 200 });
      // No TEXT part: candidatesTokenCount is all IMAGE, so the output text figure is known to be 0.
      const figures = { input_tokens: textTokens(prompt), output_text_tokens: 0, output_image_tokens: GEMINI_OUTPUT_IMAGE_TOKENS, thinking_tokens: 100 };
      expect(record.usage).toEqual(figures);
      expect(record.costNano).toBe(perMillionCost(figures, PRICES_C));
      expect(record.costNano).toBe(BigInt(textTokens(prompt)) * 300n + 1290n * 30_000n + 100n * 2_500n);
    });

    it('refuses generateContentStream with 400, nothing forwarded, no record', async () => {
      const before = (await gateway.usageRecords()).length;
      const stream = ai.models.generateContentStream({ model: 'image-c', contents: 'Stream me an image' });

      await expect(stream).rejects.toBeInstanceOf(ApiError);
      await expect(stream).rejects.toMatchObject({ status: 400, message: expect.stringContaining('INVALID_ARGUMENT') });
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await gateway.usageRecords()).toHaveLength(before);
    });

    it('accepts the key as Authorization: Bearer and as x-alt-api-key, and forwards the body byte for byte', async () => {
      const body = '{ "contents" : [ {"role":"user", "parts":[{"text":"A kite"}]} ],\n"generationConfig":{"responseModalities":["TEXT"]} }';
      for (const headers of [bearer(IMAGE_KEYS.all), { 'x-alt-api-key': IMAGE_KEYS.all }, googKey(IMAGE_KEYS.all)]) {
        gateway.simulator.reset();
        const answer = await post(IMAGE_PATHS.generateContent('image-c'), body, headers);

        expect(answer.status).toBe(200);
        expect(answer.json.candidates[0].content.parts).toEqual([{ text: geminiReplyText('A kite') }]);
        const upstream = forwardedOnce(UPSTREAM_PATHS.generateContent);
        expect(upstream.body.toString('utf8')).toBe(body);
        const record = await recordOf(answer.requestId);
        expect(record.usage).toEqual({ input_tokens: textTokens('A kite'), output_text_tokens: textTokens(geminiReplyText('A kite')) });
      }
    });

    it('forwards no query parameters: the upstream path has no query, whatever the client added', async () => {
      const path = `${IMAGE_PATHS.generateContent('image-c')}?alt=json&key=${IMAGE_KEYS.all}&%24fields=x`;
      const answer = await post(path, GEMINI_TEXT_BODY, googKey(IMAGE_KEYS.all));

      expect(answer.status).toBe(200);
      const upstream = forwardedOnce(UPSTREAM_PATHS.generateContent);
      expect(upstream.path).not.toContain('?');
      expect(await recordOf(answer.requestId)).toMatchObject({ status: 200, interface: 'images_c' });
    });

    it('refuses a key given only as ?key= with 401 in the Google shape, nothing forwarded', async () => {
      const answer = await post(`${IMAGE_PATHS.generateContent('image-c')}?key=${IMAGE_KEYS.all}`, GEMINI_TEXT_BODY, {});

      expect(answer.status).toBe(401);
      expect(answer.json).toEqual(GOOGLE_ERROR(401, 'UNAUTHENTICATED', 'INVALID_API_KEY'));
      await expectNothingForwarded(answer);
    });

    it.each(['streamGenerateContent', 'countTokens', 'embedContent', 'predict'])(
      'answers :%s with 400 in the Google shape, nothing forwarded',
      async (method) => {
        const answer = await post(`${IMAGE_PATHS.generateContent('image-c', method)}?alt=sse`, GEMINI_TEXT_BODY, googKey(IMAGE_KEYS.all));

        expect(answer.status).toBe(400);
        expect(answer.json).toEqual(GOOGLE_ERROR(400, 'INVALID_ARGUMENT', 'INVALID_REQUEST'));
        await expectNothingForwarded(answer);
      },
    );

    it('answers a path without a method with 400, nothing forwarded', async () => {
      const answer = await post('/v1beta/models/image-c', GEMINI_TEXT_BODY, googKey(IMAGE_KEYS.all));

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(GOOGLE_ERROR(400, 'INVALID_ARGUMENT', 'INVALID_REQUEST'));
      await expectNothingForwarded(answer);
    });
  });

  // ------------------------------------------------------------------------------ wrong endpoints

  describe('wrong endpoints', () => {
    const jsonA = (model: string) => JSON.stringify({ model, prompt: 'x' });
    const chat = (model: string) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });
    const cases: Array<{ what: string; path: string; body: () => { body: string | Buffer; contentType?: string }; google: boolean }> = [
      { what: 'image-a on the B endpoint', path: IMAGE_PATHS.vendorB, body: () => ({ body: jsonA('image-a') }), google: false },
      { what: 'image-a on the C endpoint', path: IMAGE_PATHS.generateContent('image-a'), body: () => ({ body: GEMINI_TEXT_BODY }), google: true },
      { what: 'image-b on A generations', path: IMAGE_PATHS.generations, body: () => ({ body: jsonA('image-b') }), google: false },
      { what: 'image-b on A edits (JSON)', path: IMAGE_PATHS.edits, body: () => ({ body: jsonA('image-b') }), google: false },
      { what: 'image-b on the C endpoint', path: IMAGE_PATHS.generateContent('image-b'), body: () => ({ body: GEMINI_TEXT_BODY }), google: true },
      { what: 'image-c on A generations', path: IMAGE_PATHS.generations, body: () => ({ body: jsonA('image-c') }), google: false },
      { what: 'image-c on A edits (form)', path: IMAGE_PATHS.edits, body: () => editForm('image-c'), google: false },
      { what: 'image-c on the B endpoint', path: IMAGE_PATHS.vendorB, body: () => ({ body: jsonA('image-c') }), google: false },
      { what: 'text-model on A generations', path: IMAGE_PATHS.generations, body: () => ({ body: jsonA('text-model') }), google: false },
      { what: 'text-model on A edits (form)', path: IMAGE_PATHS.edits, body: () => editForm('text-model'), google: false },
      { what: 'text-model on A edits (JSON)', path: IMAGE_PATHS.edits, body: () => ({ body: jsonA('text-model') }), google: false },
      { what: 'text-model on the B endpoint', path: IMAGE_PATHS.vendorB, body: () => ({ body: jsonA('text-model') }), google: false },
      { what: 'text-model on the C endpoint', path: IMAGE_PATHS.generateContent('text-model'), body: () => ({ body: GEMINI_TEXT_BODY }), google: true },
      { what: 'speech on A generations', path: IMAGE_PATHS.generations, body: () => ({ body: jsonA('speech') }), google: false },
      { what: 'image-a on chat completions', path: '/v1/chat/completions', body: () => ({ body: chat('image-a') }), google: false },
      { what: 'image-b on chat completions', path: '/v1/chat/completions', body: () => ({ body: chat('image-b') }), google: false },
      { what: 'image-c on chat completions', path: '/v1/chat/completions', body: () => ({ body: chat('image-c') }), google: false },
    ];

    it.each(cases)('$what: 400 in the endpoint shape, nothing forwarded, no record', async ({ path, body, google }) => {
      const { body: payload, contentType } = body();
      const answer = await post(path, payload, { ...bearer(IMAGE_KEYS.all), ...(contentType ? { 'content-type': contentType } : {}) });

      expect(answer.status).toBe(400);
      if (google) {
        expect(answer.json).toEqual(GOOGLE_ERROR(400, 'INVALID_ARGUMENT', 'INVALID_REQUEST'));
      } else {
        expect(answer.json).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: null } });
      }
      await expectNothingForwarded(answer);
    });
  });

  // ------------------------------------------------------------------------------ admission

  function editForm(model: string): { body: Buffer; contentType: string } {
    return formBody([
      ['model', model],
      ['prompt', 'x'],
      ['image', { filename: 'a.png', type: 'image/png', bytes: randomBytes(64) }],
    ]);
  }

  /** One call per format with a given model: path, body and headers (`auth` the key headers). */
  const FORMATS = [
    {
      name: 'A generations',
      google: false,
      send: (model: string, auth: Record<string, string>) => [IMAGE_PATHS.generations, JSON.stringify({ model, prompt: 'x' }), auth] as const,
    },
    {
      name: 'A edits (form)',
      google: false,
      send: (model: string, auth: Record<string, string>) => {
        const form = editForm(model);
        return [IMAGE_PATHS.edits, form.body, { ...auth, 'content-type': form.contentType }] as const;
      },
    },
    {
      name: 'B',
      google: false,
      send: (model: string, auth: Record<string, string>) => [IMAGE_PATHS.vendorB, JSON.stringify({ model, prompt: 'x' }), auth] as const,
    },
    {
      name: 'C',
      google: true,
      send: (model: string, auth: Record<string, string>) => [IMAGE_PATHS.generateContent(model), GEMINI_TEXT_BODY, auth] as const,
    },
  ];
  const MODEL_OF: Record<string, string> = { 'A generations': 'image-a', 'A edits (form)': 'image-a', B: 'image-b', C: 'image-c' };

  describe('authentication and admission', () => {
    beforeAll(async () => {
      // Uses up the poor owner's budget (0.000001) with one paid call (0.02).
      gateway.simulator.reset();
      const spent = await post(IMAGE_PATHS.vendorB, JSON.stringify({ model: 'image-b', prompt: 'x', size: '1K' }), bearer(IMAGE_KEYS.poor));
      expect(spent.status).toBe(200);
      expect((await recordOf(spent.requestId)).costNano).toBe(B_UP_TO_1MP);
    });

    const googleKeyHeader = (format: { google: boolean }, key: string) => (format.google ? googKey(key) : bearer(key));
    const cases = FORMATS.flatMap((format) => [
      { format, what: 'no key', model: MODEL_OF[format.name], auth: {}, status: 401, code: 'invalid_api_key', grpc: 'UNAUTHENTICATED' },
      {
        format,
        what: 'a wrong key',
        model: MODEL_OF[format.name],
        auth: googleKeyHeader(format, 'gk-images-wrong-0001'),
        status: 401,
        code: 'invalid_api_key',
        grpc: 'UNAUTHENTICATED',
      },
      {
        format,
        what: 'a wrong Bearer key',
        model: MODEL_OF[format.name],
        auth: bearer('gk-images-wrong-0002'),
        status: 401,
        code: 'invalid_api_key',
        grpc: 'UNAUTHENTICATED',
      },
      {
        format,
        what: 'a key whose scope excludes the model',
        model: MODEL_OF[format.name],
        auth: googleKeyHeader(format, IMAGE_KEYS.textOnly),
        status: 403,
        code: 'model_not_allowed',
        grpc: 'PERMISSION_DENIED',
      },
      {
        format,
        what: 'an unknown model',
        model: 'no-such-image-model',
        auth: googleKeyHeader(format, IMAGE_KEYS.all),
        status: 404,
        code: 'model_not_found',
        grpc: 'NOT_FOUND',
      },
      {
        format,
        what: 'the upstream model name',
        model: { 'A generations': UPSTREAM.a, 'A edits (form)': UPSTREAM.a, B: UPSTREAM.b, C: UPSTREAM.c }[format.name] as string,
        auth: googleKeyHeader(format, IMAGE_KEYS.all),
        status: 404,
        code: 'model_not_found',
        grpc: 'NOT_FOUND',
      },
      {
        format,
        what: 'an owner whose budget is used up',
        model: MODEL_OF[format.name],
        auth: googleKeyHeader(format, IMAGE_KEYS.poor),
        status: 402,
        code: 'insufficient_quota',
        grpc: 'RESOURCE_EXHAUSTED',
      },
    ]);

    it.each(cases)('format $format.name, $what: $status in its shape, nothing forwarded', async ({ format, model, auth, status, code, grpc }) => {
      gateway.simulator.reset();
      const [path, body, headers] = format.send(model, auth);
      const answer = await post(path, body, headers);

      expect(answer.status).toBe(status);
      if (format.google) expect(answer.json).toEqual(GOOGLE_ERROR(status, grpc, code.toUpperCase()));
      else expect(answer.json).toEqual(CHAT_ERROR(code));
      await expectNothingForwarded(answer);
    });

    it('format A through the SDK: a wrong key rejects with 401 invalid_api_key', async () => {
      gateway.simulator.reset();
      const wrong = new OpenAI({ apiKey: 'gk-images-wrong-0003', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
      await expect(wrong.images.generate({ model: 'image-a', prompt: 'x' })).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('format C through the SDK: a wrong key rejects with 401, and the client key never travels as ?key=', async () => {
      gateway.simulator.reset();
      const wrong = new GoogleGenAI({ apiKey: 'gk-images-wrong-0004', httpOptions: { baseUrl: gateway.url } });
      await expect(wrong.models.generateContent({ model: 'image-c', contents: 'x' })).rejects.toMatchObject({ status: 401 });
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  // ------------------------------------------------------------------------------ upstream errors

  describe('upstream errors', () => {
    it('format A: an upstream 400 comes back with its status and body unchanged; the record says so and costs 0', async () => {
      const error = await openai.images.generate({ model: 'image-a', prompt: 'x', n: 11 }).then(
        () => undefined,
        (caught: unknown) => caught as InstanceType<typeof OpenAI.APIError>,
      );
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error?.status).toBe(400);
      expect(error?.error).toEqual((openAiError(400, "Invalid 'n': 11. Expected an integer from 1 to 10.", null, 'n') as { error: unknown }).error);
      forwardedOnce(UPSTREAM_PATHS.generations);

      const raw = await post(IMAGE_PATHS.generations, JSON.stringify({ model: 'image-a', prompt: 'x', size: '1x1' }));
      expect(raw.status).toBe(400);
      expect(raw.text).toBe(
        JSON.stringify(openAiError(400, "Invalid value: '1x1'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.", null, 'size')),
      );
      const record = await recordOf(raw.requestId);
      expect(record).toMatchObject({ model: 'image-a', interface: 'images_a', status: 400, errorCode: 'upstream_400', costNano: 0n });
      expect(record.usage).toBeNull();
    });

    it('format A edits: an upstream 400 on a form comes back unchanged', async () => {
      const form = formBody([
        ['model', 'image-a'],
        ['prompt', 'x'],
        ['image', { filename: 'a.gif', type: 'image/gif', bytes: randomBytes(10) }],
      ]);
      const answer = await post(IMAGE_PATHS.edits, form.body, { ...bearer(IMAGE_KEYS.all), 'content-type': form.contentType });

      expect(answer.status).toBe(400);
      expect(answer.text).toBe(
        JSON.stringify(
          openAiError(
            400,
            "Invalid file 'image': unsupported mimetype ('image/gif'). Supported file formats are 'image/png', 'image/jpeg', 'image/webp'.",
            null,
            'image',
          ),
        ),
      );
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'images_a_edits', status: 400, errorCode: 'upstream_400', costNano: 0n });
    });

    it('format B: an upstream 400 in the Ark shape comes back unchanged', async () => {
      const answer = await post(IMAGE_PATHS.vendorB, JSON.stringify({ model: 'image-b', prompt: 'x', size: 'huge' }));

      expect(answer.status).toBe(400);
      expect(answer.text).toBe(
        JSON.stringify(vendorBError(400, 'The parameter `size` specified in the request is not valid: huge.', 'InvalidParameter', 'size')),
      );
      forwardedOnce(UPSTREAM_PATHS.vendorB);
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'images_b', status: 400, errorCode: 'upstream_400', costNano: 0n });
    });

    it('format C: an upstream 400 in the Google shape comes back unchanged, also to the SDK', async () => {
      const answer = await post(
        IMAGE_PATHS.generateContent('image-c'),
        JSON.stringify({ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['AUDIO'] } }),
        googKey(IMAGE_KEYS.all),
      );

      expect(answer.status).toBe(400);
      expect(answer.text).toBe(JSON.stringify(googleError(400, 'Model does not support the requested response modalities: audio')));
      forwardedOnce(UPSTREAM_PATHS.generateContent);
      expect(await recordOf(answer.requestId)).toMatchObject({ interface: 'images_c', status: 400, errorCode: 'upstream_400', costNano: 0n });

      gateway.simulator.reset();
      const viaSdk = ai.models.generateContent({ model: 'image-c', contents: 'x', config: { responseModalities: ['AUDIO'] } });
      await expect(viaSdk).rejects.toMatchObject({ status: 400, message: expect.stringContaining('Model does not support the requested response modalities') });
    });

    it.each([
      { format: 'A generations', path: IMAGE_PATHS.generations, upstream: UPSTREAM_PATHS.generations },
      { format: 'B', path: IMAGE_PATHS.vendorB, upstream: UPSTREAM_PATHS.vendorB },
      { format: 'C', path: IMAGE_PATHS.generateContent('image-c'), upstream: UPSTREAM_PATHS.generateContent },
    ])('format $format: any other upstream error body comes back byte for byte with its status and retry headers', async ({ path, upstream }) => {
      const errorText = '{ "error" : {"message":"Upstream busy \\u00e9 ", "code": "weird"}  }\n';
      gateway.simulator.failNext(upstream, { status: 422, body: errorText, headers: { 'content-type': 'application/json', 'retry-after': '7' } });
      const body =
        path === IMAGE_PATHS.vendorB
          ? JSON.stringify({ model: 'image-b', prompt: 'x' })
          : path === IMAGE_PATHS.generations
            ? JSON.stringify({ model: 'image-a', prompt: 'x' })
            : GEMINI_TEXT_BODY;
      const answer = await post(path, body);

      expect(answer.status).toBe(422);
      expect(answer.text).toBe(errorText);
      expect(answer.headers.get('retry-after')).toBe('7');
      expect(await recordOf(answer.requestId)).toMatchObject({ status: 422, errorCode: 'upstream_422', costNano: 0n });
    });

    const credentialCases = [401, 402, 403].flatMap((status) => [
      {
        status,
        format: 'A generations',
        path: IMAGE_PATHS.generations,
        upstream: UPSTREAM_PATHS.generations,
        body: JSON.stringify({ model: 'image-a', prompt: 'x' }),
      },
      { status, format: 'A edits', path: IMAGE_PATHS.edits, upstream: UPSTREAM_PATHS.edits, form: true },
      { status, format: 'B', path: IMAGE_PATHS.vendorB, upstream: UPSTREAM_PATHS.vendorB, body: JSON.stringify({ model: 'image-b', prompt: 'x' }) },
      { status, format: 'C', path: IMAGE_PATHS.generateContent('image-c'), upstream: UPSTREAM_PATHS.generateContent, body: GEMINI_TEXT_BODY },
    ]);

    it.each(credentialCases)('format $format: upstream $status becomes 502 upstream_failed without the vendor body; recorded, cost 0', async (testCase) => {
      gateway.simulator.failNext(testCase.upstream, { status: testCase.status });
      const form = testCase.form ? editForm('image-a') : undefined;
      const answer = form
        ? await post(testCase.path, form.body, { ...bearer(IMAGE_KEYS.all), 'content-type': form.contentType })
        : await post(testCase.path, testCase.body as string);

      expect(answer.status).toBe(502);
      if (testCase.format === 'C') expect(answer.json).toEqual(GOOGLE_ERROR(502, 'UNAVAILABLE', 'UPSTREAM_FAILED'));
      else expect(answer.json).toEqual(CHAT_ERROR('upstream_failed'));
      expect(answer.text).not.toContain('Simulated upstream failure');
      expect(gateway.simulator.requests.map((request) => request.path)).toEqual([testCase.upstream]);
      const record = await recordOf(answer.requestId);
      expect(record).toMatchObject({ status: 502, errorCode: 'upstream_failed', costNano: 0n, line: 'line-a' });
      expect(record.usage).toBeNull();
    });

    it('format C through the SDK: an upstream 403 rejects with 502', async () => {
      gateway.simulator.failNext(UPSTREAM_PATHS.generateContent, { status: 403 });
      await expect(ai.models.generateContent({ model: 'image-c', contents: 'x' })).rejects.toMatchObject({ status: 502 });
    });
  });

  // ------------------------------------------------------------------------------ body limit

  describe('bodies over 32 MiB', () => {
    const padding = 'a'.repeat(BODY_LIMIT_BYTES);

    it('format A generations (JSON): 413 request_too_large, nothing forwarded', async () => {
      const answer = await post(IMAGE_PATHS.generations, `{"model":"image-a","prompt":"${padding}"}`);

      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('format A edits (JSON): 413 request_too_large, nothing forwarded', async () => {
      const answer = await post(IMAGE_PATHS.edits, `{"model":"image-a","prompt":"x","images":[{"image_url":"data:image/png;base64,${padding}"}]}`);

      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('format A edits (form): 413 request_too_large, nothing forwarded', async () => {
      const form = formBody([
        ['model', 'image-a'],
        ['prompt', 'x'],
        ['image', { filename: 'big.png', type: 'image/png', bytes: Buffer.alloc(BODY_LIMIT_BYTES, 1) }],
      ]);
      const answer = await post(IMAGE_PATHS.edits, form.body, { ...bearer(IMAGE_KEYS.all), 'content-type': form.contentType });

      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('format B: 413 request_too_large, nothing forwarded', async () => {
      const answer = await post(IMAGE_PATHS.vendorB, `{"model":"image-b","prompt":"x","image":"data:image/png;base64,${padding}"}`);

      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(CHAT_ERROR('request_too_large'));
      await expectNothingForwarded(answer);
    });

    it('format C: 413 in the Google shape, nothing forwarded', async () => {
      const body = `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"${padding}"}}]}]}`;
      const answer = await post(IMAGE_PATHS.generateContent('image-c'), body, googKey(IMAGE_KEYS.all));

      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(GOOGLE_ERROR(413, expect.any(String), 'REQUEST_TOO_LARGE'));
      await expectNothingForwarded(answer);
    });

    it('just under the limit still goes through (format A JSON edit of ~31 MiB)', async () => {
      const image = randomBytes(23 * 1024 * 1024);
      const body = JSON.stringify({ model: 'image-a', prompt: 'big', images: [{ image_url: dataUrl(image) }] });
      expect(body.length).toBeLessThan(BODY_LIMIT_BYTES);
      const answer = await post(IMAGE_PATHS.edits, body);

      expect(answer.status).toBe(200);
      const upstream = forwardedOnce(UPSTREAM_PATHS.edits);
      expect(upstream.body.length).toBe(body.length + UPSTREAM.a.length - 'image-a'.length);
      const record = await recordOf(answer.requestId);
      expect(record.usage?.input_image_tokens).toBe(inputImageTokens(image.length));
    });
  });
});

describe('images: a line whose vendor key the upstream refuses', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: badLineConfigYaml });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  async function post(path: string, body: string, headers: Record<string, string>) {
    const response = await fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await response.text();
    return { status: response.status, text, json: JSON.parse(text), requestId: response.headers.get('x-request-id') ?? '' };
  }

  it('format A (control): the upstream 401 becomes 502 upstream_failed, and a second line answers', async () => {
    const alone = await post(IMAGE_PATHS.generations, JSON.stringify({ model: 'image-a', prompt: 'x' }), bearer(IMAGE_KEYS.all));
    expect(alone.status).toBe(502);
    expect(alone.json).toEqual(CHAT_ERROR('upstream_failed'));

    const failover = await post(IMAGE_PATHS.generations, JSON.stringify({ model: 'image-a-failover', prompt: 'x' }), bearer(IMAGE_KEYS.all));
    expect(failover.status).toBe(200);
    expect(await gateway.usageRecord(failover.requestId)).toMatchObject({ status: 200, line: 'line-a' });
  });

  // Google answers a wrong x-goog-api-key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID (not 401/403):
  // that is the line's credential problem, and must not reach the caller as if their key were wrong.
  it("format C: the upstream's 400 API_KEY_INVALID is a line credential refusal: 502 upstream_failed, not the vendor body", async () => {
    const answer = await post(IMAGE_PATHS.generateContent('image-c'), GEMINI_TEXT_BODY, googKey(IMAGE_KEYS.all));

    expect(gateway.simulator.requests).toHaveLength(1);
    expect(answer.text).not.toContain('API key not valid');
    expect(answer.status).toBe(502);
    expect(answer.json).toEqual(GOOGLE_ERROR(502, 'UNAVAILABLE', 'UPSTREAM_FAILED'));
    expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: 502, errorCode: 'upstream_failed', costNano: 0n });
  });

  it("format C: after the upstream's 400 API_KEY_INVALID the call moves on to the model's next line", async () => {
    const answer = await post(IMAGE_PATHS.generateContent('image-c-failover'), GEMINI_TEXT_BODY, googKey(IMAGE_KEYS.all));

    expect(gateway.simulator.requests.map((request) => request.headers['x-goog-api-key'])).toEqual(['wrong-vendor-key', VENDOR_KEY]);
    expect(answer.status).toBe(200);
    expect(await gateway.usageRecord(answer.requestId)).toMatchObject({ status: 200, line: 'line-a' });
  });
});
