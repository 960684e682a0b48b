import { GoogleGenAI } from '@google/genai';
import { randomBytes } from 'node:crypto';
import { crc32, inflateSync } from 'node:zlib';
import OpenAI, { toFile } from 'openai';
import {
  GEMINI_INPUT_IMAGE_TOKENS,
  GEMINI_OUTPUT_IMAGE_TOKENS,
  GEMINI_THOUGHT_TOKENS,
  OUTPUT_TEXT_TOKENS_PER_IMAGE,
  SIMULATED_PNG,
  SIMULATED_PNG_BASE64,
  geminiReplyText,
  inputImageTokens,
  readImageEdit,
  textTokens,
} from './images-routes';
import { UpstreamSimulator } from './upstream-simulator';

const KEY = 'sk-images';
const ARK_PATH = '/api/v3/images/generations';
const GEMINI_PATH = (model: string) => `/v1beta/models/${model}:generateContent`;

/** One answer as fetch saw it; `json` is undefined when the body was not JSON. */
interface Answer {
  status: number;
  json: any;
}

const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;

describe('UpstreamSimulator images', () => {
  const simulator = new UpstreamSimulator({ apiKey: KEY });
  let baseUrl: string;
  let openai: OpenAI;

  beforeAll(async () => {
    baseUrl = await simulator.start();
    openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());

  /** POSTs a JSON (or, when a string, raw) body with the Bearer key unless headers say otherwise. */
  async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }): Promise<Answer> {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    try {
      return { status: response.status, json: JSON.parse(text) };
    } catch {
      return { status: response.status, json: undefined };
    }
  }

  it('answers a PNG that decodes: signature, 1x1 RGBA header, inflatable pixel data, valid CRCs', () => {
    expect(SIMULATED_PNG.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const chunks: Array<{ type: string; data: Buffer }> = [];
    for (let offset = 8; offset < SIMULATED_PNG.length; ) {
      const length = SIMULATED_PNG.readUInt32BE(offset);
      const typed = SIMULATED_PNG.subarray(offset + 4, offset + 8 + length);
      expect(SIMULATED_PNG.readUInt32BE(offset + 8 + length)).toBe(crc32(typed));
      chunks.push({ type: typed.subarray(0, 4).toString('ascii'), data: typed.subarray(4) });
      offset += 12 + length;
    }
    expect(chunks.map((chunk) => chunk.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect([chunks[0].data.readUInt32BE(0), chunks[0].data.readUInt32BE(4), chunks[0].data[8], chunks[0].data[9]]).toEqual([1, 1, 8, 6]);
    expect(inflateSync(chunks[1].data)).toHaveLength(1 + 4);
  });

  describe('format A (OpenAI Images)', () => {
    it('answers a generation like gpt-image-1: n images, the settings used and token usage', async () => {
      const prompt = 'a red fox in fresh snow';
      const result = await openai.images.generate({ model: 'gpt-image-1', prompt, n: 2, size: '1024x1536', quality: 'high' });

      const text = Math.ceil(Buffer.byteLength(prompt) / 4);
      const imageOut = 2 * 6240;
      expect(result).toEqual({
        created: expect.any(Number),
        data: [{ b64_json: SIMULATED_PNG_BASE64 }, { b64_json: SIMULATED_PNG_BASE64 }],
        background: 'opaque',
        output_format: 'png',
        quality: 'high',
        size: '1024x1536',
        usage: {
          input_tokens: text,
          input_tokens_details: { text_tokens: text, image_tokens: 0 },
          output_tokens: 2 * OUTPUT_TEXT_TOKENS_PER_IMAGE + imageOut,
          output_tokens_details: { text_tokens: 2 * OUTPUT_TEXT_TOKENS_PER_IMAGE, image_tokens: imageOut },
          total_tokens: text + 2 * OUTPUT_TEXT_TOKENS_PER_IMAGE + imageOut,
        },
      });
      expect(Math.abs(result.created - Date.now() / 1000)).toBeLessThan(5);
      expect(simulator.requests).toEqual([
        expect.objectContaining({ path: '/v1/images/generations', json: expect.objectContaining({ prompt, n: 2 }) }),
      ]);
    });

    it('resolves auto to 1024x1024 at medium quality and scales other sizes by their pixels', async () => {
      const auto = await openai.images.generate({ model: 'gpt-image-1', prompt: 'x', output_format: 'webp', background: 'transparent' });
      const large = await openai.images.generate({ model: 'gpt-image-1', prompt: 'x', size: '2048x2048', quality: 'low' });

      expect(auto).toMatchObject({ size: '1024x1024', quality: 'medium', output_format: 'webp', background: 'transparent' });
      expect(auto.data).toHaveLength(1);
      expect(auto.usage?.output_tokens_details).toEqual({ text_tokens: OUTPUT_TEXT_TOKENS_PER_IMAGE, image_tokens: 1056 });
      expect(large.usage?.output_tokens_details?.image_tokens).toBe(4 * 272);
    });

    it('gives the same figures for the same request', async () => {
      const body = { model: 'gpt-image-1', prompt: 'the same lighthouse, twice', n: 3, quality: 'low' as const };
      const [first, second] = [await openai.images.generate(body), await openai.images.generate(body)];

      expect(second.usage).toEqual(first.usage);
      expect(second.data).toEqual(first.data);
    });

    it.each([
      ['no prompt', { model: 'gpt-image-1' }, 'prompt', 'missing_required_parameter', "Missing required parameter: 'prompt'."],
      ['no model', { prompt: 'x' }, 'model', 'missing_required_parameter', "Missing required parameter: 'model'."],
      ['n of 0', { model: 'gpt-image-1', prompt: 'x', n: 0 }, 'n', null, expect.stringContaining("Invalid 'n'")],
      ['an unknown size', { model: 'gpt-image-1', prompt: 'x', size: 'huge' }, 'size', null, expect.stringContaining("Invalid value: 'huge'")],
      ['an unknown quality', { model: 'gpt-image-1', prompt: 'x', quality: 'ultra' }, 'quality', null, expect.stringContaining("'ultra'")],
      ['stream true', { model: 'gpt-image-1', prompt: 'x', stream: true }, 'stream', null, expect.any(String)],
    ])('answers a generation with %s with 400 in the OpenAI shape', async (_case, body, param, code, message) => {
      const answer = await post('/v1/images/generations', body);

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { message, type: 'invalid_request_error', param, code } });
    });

    it('edits a multipart upload: each file arrives byte for byte and input image tokens follow its size', async () => {
      const [first, second, mask] = [randomBytes(5000), randomBytes(1), randomBytes(700)];
      const prompt = 'put a hat on the cat';
      const result = await openai.images.edit({
        model: 'gpt-image-1',
        prompt,
        image: [await toFile(first, 'cat.png', { type: 'image/png' }), await toFile(second, 'hat.webp', { type: 'image/webp' })],
        mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
        n: 2,
        quality: 'low',
      });

      const imageIn = inputImageTokens(first.length) + inputImageTokens(second.length);
      expect(imageIn).toBe(85 + 5 + (85 + 1));
      expect(result.data).toHaveLength(2);
      expect(result.usage).toMatchObject({
        input_tokens: textTokens(prompt) + imageIn,
        input_tokens_details: { text_tokens: textTokens(prompt), image_tokens: imageIn },
        output_tokens_details: { text_tokens: 2 * OUTPUT_TEXT_TOKENS_PER_IMAGE, image_tokens: 2 * 272 },
      });
      const [recorded] = simulator.requests;
      expect(String(recorded.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
      expect(recorded.json).toBeUndefined();
      const edit = await readImageEdit(recorded);
      expect(edit.fields).toMatchObject({ model: 'gpt-image-1', prompt, n: '2', quality: 'low' });
      expect(edit.images.map(({ field, filename, type }) => ({ field, filename, type }))).toEqual([
        { field: 'image[]', filename: 'cat.png', type: 'image/png' },
        { field: 'image[]', filename: 'hat.webp', type: 'image/webp' },
      ]);
      expect(edit.images.map((image) => image.bytes)).toEqual([first, second]);
      expect(edit.mask).toMatchObject({ field: 'mask', filename: 'mask.png', byteLength: 700, bytes: mask });
    });

    it('takes a single upload under the field name image', async () => {
      const bytes = randomBytes(2048);
      const image = await toFile(bytes, 'one.jpg', { type: 'image/jpeg' });
      const result = await openai.images.edit({ model: 'gpt-image-1', prompt: 'brighter', image });

      expect(result.usage?.input_tokens_details.image_tokens).toBe(85 + 2);
      const edit = await readImageEdit(simulator.requests[0]);
      expect(edit.images).toEqual([{ field: 'image', filename: 'one.jpg', type: 'image/jpeg', byteLength: 2048, bytes }]);
    });

    it('edits from JSON: data URLs sized from their base64, addresses counted without bytes', async () => {
      const [bytes, maskBytes] = [randomBytes(3001), randomBytes(10)];
      const answer = await post('/v1/images/edits', {
        model: 'gpt-image-1',
        prompt: 'merge them',
        images: [{ image_url: dataUrl(bytes, 'image/jpeg') }, { image_url: 'https://example.com/cat.png' }],
        mask: { image_url: dataUrl(maskBytes) },
      });

      expect(answer.status).toBe(200);
      expect(answer.json.usage.input_tokens_details).toEqual({ text_tokens: textTokens('merge them'), image_tokens: 85 + 3 + 85 });
      const edit = await readImageEdit(simulator.requests[0]);
      expect(edit.images).toEqual([
        expect.objectContaining({ field: 'images[0]', type: 'image/jpeg', byteLength: 3001, bytes }),
        { field: 'images[1]', url: 'https://example.com/cat.png' },
      ]);
      expect(edit.mask).toMatchObject({ field: 'mask', byteLength: 10, bytes: maskBytes });
    });

    it('reads a 30 MiB JSON edit and a 30 MiB form within seconds, counting their bytes', async () => {
      const big = randomBytes(30 * 1024 * 1024);
      const started = Date.now();
      const json = await post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'big', images: [{ image_url: dataUrl(big) }] });
      const form = new FormData();
      form.append('model', 'gpt-image-1');
      form.append('prompt', 'big');
      form.append('image', new Blob([big], { type: 'image/png' }), 'big.png');
      const multipart = await fetch(`${baseUrl}/v1/images/edits`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form });

      const tokens = inputImageTokens(big.length);
      expect(json.json.usage.input_tokens_details.image_tokens).toBe(tokens);
      expect(((await multipart.json()) as any).usage.input_tokens_details.image_tokens).toBe(tokens);
      expect(Date.now() - started).toBeLessThan(5000);
    });

    it('answers a malformed form with 400 in the OpenAI shape', async () => {
      const answer = await post('/v1/images/edits', 'no parts here', {
        authorization: `Bearer ${KEY}`,
        'content-type': 'multipart/form-data; boundary=XYZ',
      });

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({
        error: { message: expect.stringContaining('multipart'), type: 'invalid_request_error', param: null, code: null },
      });
    });

    it('refuses an upload without an image type, an edit without images and a file id', async () => {
      const untyped = openai.images.edit({ model: 'gpt-image-1', prompt: 'x', image: await toFile(randomBytes(4), 'blob') });
      const unsupported = expect.stringContaining("unsupported mimetype ('application/octet-stream')");
      await expect(untyped).rejects.toMatchObject({ status: 400, param: 'image', error: { message: unsupported } });
      const none = await post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'x', images: [] });
      const stored = await post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'x', images: [{ file_id: 'file-1' }] });

      expect(none.json.error).toMatchObject({ param: 'image', code: 'missing_required_parameter' });
      expect(stored).toMatchObject({ status: 400, json: { error: { param: 'images[0]' } } });
    });

    it('answers a wrong key with 401 in the OpenAI shape', async () => {
      const answer = await post('/v1/images/generations', { model: 'gpt-image-1', prompt: 'x' }, { authorization: 'Bearer sk-wrong' });

      expect(answer.status).toBe(401);
      expect(answer.json.error).toMatchObject({ code: 'invalid_api_key', type: 'invalid_request_error' });
    });
  });

  describe('format B (Ark Seedream)', () => {
    it('answers one URL image at 2048x2048 by default, with images and tokens in usage', async () => {
      const answer = await post(ARK_PATH, { model: 'seedream-x', prompt: 'a dog on grass', watermark: false });

      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({
        model: 'seedream-x',
        created: expect.any(Number),
        data: [{ url: expect.stringMatching(/^https:\/\/images\.simulator\.invalid\/ark\/\w{16}_0\.png$/), size: '2048x2048' }],
        usage: { generated_images: 1, output_tokens: 16384, total_tokens: 16384, input_images: 0 },
      });
    });

    it('counts reference images and answers base64 at a preset or exact size', async () => {
      const preset = await post(ARK_PATH, {
        model: 'seedream-x',
        prompt: 'combine',
        image: [dataUrl(randomBytes(50)), 'https://example.com/a.jpeg'],
        size: '1K',
        response_format: 'b64_json',
      });
      const exact = await post(ARK_PATH, { model: 'seedream-x', prompt: 'wide', image: 'https://example.com/a.jpeg', size: '2560x1440' });

      expect(preset.json.data).toEqual([{ b64_json: SIMULATED_PNG_BASE64, size: '1024x1024' }]);
      expect(preset.json.usage).toEqual({ generated_images: 1, output_tokens: 4096, total_tokens: 4096, input_images: 2 });
      expect(exact.json.data[0].size).toBe('2560x1440');
      expect(exact.json.usage).toMatchObject({ output_tokens: (2560 * 1440) / 256, input_images: 1 });
    });

    it('makes sequential images up to max_images, keeping references plus outputs within 15', async () => {
      const auto = (extra: Record<string, unknown>) =>
        post(ARK_PATH, { model: 'seedream-x', prompt: 'a story', sequential_image_generation: 'auto', size: '1K', ...extra });
      const [three, capped, unlimited] = [
        await auto({ sequential_image_generation_options: { max_images: 3 } }),
        await auto({ image: Array.from({ length: 13 }, () => 'https://example.com/r.png') }),
        await auto({}),
      ];

      expect(three.json.usage).toEqual({ generated_images: 3, output_tokens: 3 * 4096, total_tokens: 3 * 4096, input_images: 0 });
      expect(three.json.data.map((item: { url: string }) => item.url.slice(-6))).toEqual(['_0.png', '_1.png', '_2.png']);
      expect(capped.json.usage).toMatchObject({ generated_images: 2, input_images: 13 });
      expect(unlimited.json.data).toHaveLength(15);
    });

    it.each([
      ['no prompt', { model: 'seedream-x' }, 'prompt'],
      ['no model', { prompt: 'x' }, 'model'],
      ['a size too small', { model: 'seedream-x', prompt: 'x', size: '100x100' }, 'size'],
      ['15 reference images', { model: 'seedream-x', prompt: 'x', image: Array.from({ length: 15 }, () => 'https://e.com/r.png') }, 'image'],
      ['an image that is no address', { model: 'seedream-x', prompt: 'x', image: 'asset://abc' }, 'image'],
      ['response_format png', { model: 'seedream-x', prompt: 'x', response_format: 'png' }, 'response_format'],
      ['an array body', [{ model: 'seedream-x' }], 'body'],
    ])('answers %s with 400 in Ark\'s shape', async (_case, body, param) => {
      const answer = await post(ARK_PATH, body);

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { code: 'InvalidParameter', message: expect.any(String), param, type: 'BadRequest' } });
    });

    it("answers a wrong key with 401 and a planned failure in Ark's shape", async () => {
      simulator.failNext(ARK_PATH, { status: 429 });
      const limited = await post(ARK_PATH, { model: 'seedream-x', prompt: 'x' });
      const refused = await post(ARK_PATH, { model: 'seedream-x', prompt: 'x' }, { authorization: 'Bearer sk-wrong' });

      expect(limited).toMatchObject({ status: 429, json: { error: { code: 'RateLimitExceeded', type: 'TooManyRequests' } } });
      expect(refused).toMatchObject({ status: 401, json: { error: { code: 'AuthenticationError', type: 'Unauthorized' } } });
    });
  });

  describe('format C (generateContent)', () => {
    let ai: GoogleGenAI;

    beforeAll(() => {
      ai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl } });
    });
    // The SDK warns on every `text` read of an answer that also holds an image.
    beforeEach(() => jest.spyOn(console, 'warn').mockImplementation(() => undefined));
    afterEach(() => jest.restoreAllMocks());

    it('answers text and an image for TEXT and IMAGE, with usage per modality', async () => {
      const prompt = 'a lighthouse at dusk';
      const config = { responseModalities: ['TEXT', 'IMAGE'] };
      const response = await ai.models.generateContent({ model: 'image-model-x.1', contents: prompt, config });

      const reply = geminiReplyText(prompt);
      expect(response.text).toBe(reply);
      expect(response.candidates?.[0]).toMatchObject({ finishReason: 'STOP', index: 0, content: { role: 'model' } });
      expect(response.candidates?.[0].content?.parts?.[1]).toEqual({ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } });
      expect(response.data).toBe(SIMULATED_PNG_BASE64);
      const [input, output] = [textTokens(prompt), textTokens(reply)];
      expect(response.usageMetadata).toEqual({
        promptTokenCount: input,
        candidatesTokenCount: output + GEMINI_OUTPUT_IMAGE_TOKENS,
        totalTokenCount: input + output + GEMINI_OUTPUT_IMAGE_TOKENS,
        promptTokensDetails: [{ modality: 'TEXT', tokenCount: input }],
        candidatesTokensDetails: [
          { modality: 'TEXT', tokenCount: output },
          { modality: 'IMAGE', tokenCount: GEMINI_OUTPUT_IMAGE_TOKENS },
        ],
      });
      expect(response.modelVersion).toBe('image-model-x.1');
      expect(response.responseId).toMatch(/^\w{22}$/);
      const [recorded] = simulator.requests;
      expect(recorded.path).toBe(GEMINI_PATH('image-model-x.1'));
      expect(recorded.headers['x-goog-api-key']).toBe(KEY);
      expect(recorded.json).toMatchObject({ generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } });
    });

    it('answers only an image for IMAGE, only text for TEXT, and both when no modality is named', async () => {
      const parts = async (responseModalities?: string[]) =>
        (await ai.models.generateContent({ model: 'm', contents: 'x', config: { responseModalities } })).candidates?.[0].content?.parts;

      expect(await parts(['IMAGE'])).toEqual([{ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }]);
      expect(await parts(['TEXT'])).toEqual([{ text: geminiReplyText('x') }]);
      expect((await parts())?.map((part) => Object.keys(part))).toEqual([['text'], ['inlineData']]);
      expect(simulator.requests[2].json).not.toHaveProperty('generationConfig.responseModalities');
    });

    it('counts input images and system text, and reports thinking when it is configured', async () => {
      const response = await ai.models.generateContent({
        model: 'm',
        contents: [
          { role: 'user', parts: [{ text: 'draw a boat' }] },
          { role: 'model', parts: [{ inlineData: { mimeType: 'image/png', data: SIMULATED_PNG_BASE64 } }] },
          { role: 'user', parts: [{ text: 'now make it blue' }, { inlineData: { mimeType: 'image/jpeg', data: 'AAAA' } }] },
        ],
        config: { systemInstruction: 'be brief', responseModalities: ['IMAGE'], thinkingConfig: { thinkingBudget: 64, includeThoughts: true } },
      });

      const text = textTokens('be brief') + textTokens('draw a boat') + textTokens('now make it blue');
      const images = 2 * GEMINI_INPUT_IMAGE_TOKENS;
      expect(response.usageMetadata).toEqual({
        promptTokenCount: text + images,
        candidatesTokenCount: GEMINI_OUTPUT_IMAGE_TOKENS,
        thoughtsTokenCount: 64,
        totalTokenCount: text + images + GEMINI_OUTPUT_IMAGE_TOKENS + 64,
        promptTokensDetails: [
          { modality: 'TEXT', tokenCount: text },
          { modality: 'IMAGE', tokenCount: images },
        ],
        candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: GEMINI_OUTPUT_IMAGE_TOKENS }],
      });
      expect(response.candidates?.[0].content?.parts?.[0]).toMatchObject({ thought: true });
      expect(response.text).toBeUndefined();
    });

    it('reports the default thinking figure without a budget, and none with budget 0', async () => {
      const thoughts = async (thinkingConfig: Record<string, unknown>) =>
        (await ai.models.generateContent({ model: 'm', contents: 'x', config: { thinkingConfig } })).usageMetadata?.thoughtsTokenCount;

      expect(await thoughts({ includeThoughts: false })).toBe(GEMINI_THOUGHT_TOKENS);
      expect(await thoughts({ thinkingBudget: 0 })).toBeUndefined();
      expect(await thoughts({ thinkingBudget: 10_000 })).toBe(GEMINI_THOUGHT_TOKENS);
    });

    it('serves any model name, an encoded one decoded', async () => {
      const answer = await post(GEMINI_PATH('vendor%2Fimage.v2-preview'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(200);
      expect(answer.json.modelVersion).toBe('vendor/image.v2-preview');
    });

    it.each(['streamGenerateContent', 'countTokens', 'predict'])('answers :%s with 404 in Google\'s shape', async (method) => {
      const answer = await post(`/v1beta/models/m:${method}`, { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(404);
      expect(answer.json).toEqual({ error: { code: 404, message: expect.stringContaining(method), status: 'NOT_FOUND' } });
    });

    it.each([
      ['no contents', {}, 'contents is not specified'],
      ['a content without parts', { contents: [{ role: 'user', parts: [] }] }, 'contents[0].parts'],
      ['an unknown modality', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['SMELL'] } }, 'modalities'],
      ['audio output', { contents: [{ parts: [{ text: 'x' }] }], generationConfig: { responseModalities: ['AUDIO'] } }, 'audio'],
      ['a body that is not an object', [1, 2], 'Invalid JSON payload'],
    ])('answers %s with 400 INVALID_ARGUMENT', async (_case, body, message) => {
      const answer = await post(GEMINI_PATH('m'), body, { 'x-goog-api-key': KEY });

      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { code: 400, message: expect.stringContaining(message), status: 'INVALID_ARGUMENT' } });
    });

    it('refuses a wrong key with 400 API_KEY_INVALID and a missing one with 403, as Google does', async () => {
      const wrong = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': 'wrong' });
      const bearer = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { authorization: `Bearer ${KEY}` });
      const viaSdk = new GoogleGenAI({ apiKey: 'wrong', httpOptions: { baseUrl } }).models.generateContent({ model: 'm', contents: 'x' });

      expect(wrong).toMatchObject({
        status: 400,
        json: { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] } },
      });
      expect(bearer).toMatchObject({ status: 403, json: { error: { code: 403, status: 'PERMISSION_DENIED' } } });
      await expect(viaSdk).rejects.toMatchObject({ status: 400 });
    });

    it("answers planned failures in Google's shape", async () => {
      simulator.failNext(GEMINI_PATH('m'), { status: 429 });

      const answer = await post(GEMINI_PATH('m'), { contents: [{ parts: [{ text: 'x' }] }] }, { 'x-goog-api-key': KEY });

      expect(answer).toMatchObject({ status: 429, json: { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } } });
    });
  });
});
