import { randomBytes } from 'node:crypto';
import { SIMULATED_PNG_BASE64 } from './image-common';
import { toDataUrl, useSimulator } from './simulator-test-kit';

const KEY = 'sk-images';
const ARK_PATH = '/api/v3/images/generations';

describe('UpstreamSimulator images', () => {
  const upstream = useSimulator(KEY);
  const { simulator, post } = upstream;

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
        image: [toDataUrl(randomBytes(50)), 'https://example.com/a.jpeg'],
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
    ])("answers %s with 400 in Ark's shape", async (_case, body, param) => {
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
});
