import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { SIMULATED_PNG_BASE64, textTokens } from './image-common';
import { OUTPUT_TEXT_TOKENS_PER_IMAGE, inputImageTokens, readImageEdit } from './images-a-routes';
import { toDataUrl, useSimulator } from './simulator-test-kit';

const KEY = 'sk-images';

describe('UpstreamSimulator images', () => {
  const upstream = useSimulator(KEY);
  const { simulator, post } = upstream;
  let openai: OpenAI;

  beforeAll(() => {
    openai = new OpenAI({ baseURL: `${upstream.baseUrl}/v1`, apiKey: KEY, maxRetries: 0 });
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
      expect(simulator.requests).toEqual([expect.objectContaining({ path: '/v1/images/generations', json: expect.objectContaining({ prompt, n: 2 }) })]);
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
        images: [{ image_url: toDataUrl(bytes, 'image/jpeg') }, { image_url: 'https://example.com/cat.png' }],
        mask: { image_url: toDataUrl(maskBytes) },
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

    it('reads a 30 MiB JSON edit and a 30 MiB form, counting their bytes', async () => {
      const big = randomBytes(30 * 1024 * 1024);
      const json = await post('/v1/images/edits', { model: 'gpt-image-1', prompt: 'big', images: [{ image_url: toDataUrl(big) }] });
      const form = new FormData();
      form.append('model', 'gpt-image-1');
      form.append('prompt', 'big');
      form.append('image', new Blob([big], { type: 'image/png' }), 'big.png');
      const multipart = await fetch(`${upstream.baseUrl}/v1/images/edits`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}` },
        body: form,
      });

      const tokens = inputImageTokens(big.length);
      expect(json.json.usage.input_tokens_details.image_tokens).toBe(tokens);
      expect(((await multipart.json()) as any).usage.input_tokens_details.image_tokens).toBe(tokens);
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
});
