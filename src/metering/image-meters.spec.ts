import type { PriceTier } from '../config/gateway-config';
import { decimalToNano } from '../config/money';
import { costOf, recordCostOf } from './pricing';
import { GenerateContentMeter, ImagesMeter, pixelsOf, VendorBImagesMeter } from './image-meters';

function money(amount: string): bigint {
  return decimalToNano(amount, 'test');
}

/** Base64 of `bytes` pseudo-random-looking bytes, as large images come back. */
function base64Image(bytes: number): string {
  const image = Buffer.alloc(bytes);
  for (let index = 0; index < bytes; index++) image[index] = (index * 131 + 7) & 0xff;
  return image.toString('base64');
}

const BIG_IMAGE = base64Image(3 * 1024 * 1024);

function answer(value: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify(value));
}

describe(ImagesMeter.name, () => {
  it('bills a gpt-image answer by its usage, past megabytes of base64', () => {
    const meter = new ImagesMeter();
    meter.readJson(
      answer({
        created: 1_713_833_628,
        data: [{ b64_json: BIG_IMAGE }, { b64_json: BIG_IMAGE }],
        background: 'opaque',
        output_format: 'png',
        quality: 'high',
        size: '1024x1536',
        usage: { total_tokens: 12_580, input_tokens: 180, output_tokens: 12_400, input_tokens_details: { text_tokens: 52, image_tokens: 128 } },
      }),
    );

    expect(meter.figures()).toStrictEqual({ input_text_tokens: 52, input_image_tokens: 128, output_image_tokens: 12_400 });
  });

  it('reads usage placed before the images too, with output details', () => {
    const meter = new ImagesMeter();
    meter.readJson(
      answer({
        usage: {
          input_tokens: 40,
          output_tokens: 4_200,
          input_tokens_details: { text_tokens: 40, image_tokens: 0 },
          output_tokens_details: { text_tokens: 40, image_tokens: 4_160 },
        },
        created: 1,
        data: [{ b64_json: BIG_IMAGE }],
      }),
    );

    expect(meter.figures()).toStrictEqual({ input_text_tokens: 40, input_image_tokens: 0, output_text_tokens: 40, output_image_tokens: 4_160 });
  });

  it('reads the totals alone as input text and output image tokens', () => {
    const meter = new ImagesMeter();
    meter.readJson(answer({ created: 1, data: [{ b64_json: 'AAAA' }], usage: { input_tokens: 20, output_tokens: 272, total_tokens: 292 } }));
    expect(meter.figures()).toStrictEqual({ input_text_tokens: 20, output_image_tokens: 272 });
  });

  it.each([
    ['an answer without usage (dall-e style)', answer({ created: 1, data: [{ url: 'https://x/y.png', revised_prompt: 'p' }] })],
    ['an answer that is not JSON', Buffer.from('<html>upstream proxy error</html>')],
    ['an empty answer', Buffer.alloc(0)],
    ['a JSON array', Buffer.from('[{"usage":{"input_tokens":1}}]')],
  ])('gives no figures for %s', (_case, body) => {
    const meter = new ImagesMeter();
    meter.readJson(body);
    expect(meter.figures()).toBeUndefined();
  });

  it('lets every event through (images are not streamed)', () => {
    expect(new ImagesMeter().readEvent()).toBe(true);
  });
});

describe(GenerateContentMeter.name, () => {
  it('bills usageMetadata by modality, thoughts and cached input, past the inline image', () => {
    const meter = new GenerateContentMeter();
    meter.readJson(
      answer({
        candidates: [
          {
            content: {
              role: 'model',
              parts: [{ text: 'Here is your image.' }, { inlineData: { mimeType: 'image/png', data: BIG_IMAGE } }],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: {
          promptTokenCount: 1_300,
          cachedContentTokenCount: 1_000,
          candidatesTokenCount: 1_296,
          totalTokenCount: 2_900,
          thoughtsTokenCount: 304,
          promptTokensDetails: [{ modality: 'TEXT', tokenCount: 1_300 }],
          candidatesTokensDetails: [
            { modality: 'TEXT', tokenCount: 6 },
            { modality: 'IMAGE', tokenCount: 1_290 },
          ],
        },
        modelVersion: 'gemini-2.5-flash-image',
        responseId: 'abc',
      }),
    );

    expect(meter.figures()).toStrictEqual({
      input_tokens: 1_300,
      cached_input_tokens: 1_000,
      output_text_tokens: 6,
      output_image_tokens: 1_290,
      thinking_tokens: 304,
    });
  });

  it('counts candidates as text when the split by modality is missing', () => {
    const meter = new GenerateContentMeter();
    meter.readJson(answer({ candidates: [{ content: { parts: [{ text: 'no image' }] } }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3 } }));
    expect(meter.figures()).toStrictEqual({ input_tokens: 5, output_text_tokens: 3 });
  });

  it('gives no figures without usageMetadata', () => {
    const meter = new GenerateContentMeter();
    meter.readJson(answer({ candidates: [], promptFeedback: { blockReason: 'SAFETY' } }));
    expect(meter.figures()).toBeUndefined();
  });
});

describe(VendorBImagesMeter.name, () => {
  const ONE_MP = 1024 * 1024;
  const FOUR_MP = 2048 * 2048;
  const BASE_OUTPUT = money('0.045');
  const INPUT = money('0.01');
  const UP_TO_1MP = money('0.02');
  const UP_TO_4MP = money('0.035');

  function model(...priceTiers: PriceTier[]) {
    return { prices: { output_images: BASE_OUTPUT, input_images: INPUT }, priceTiers };
  }

  const TIERED = model(
    { maxOutputPixels: ONE_MP, prices: { output_images: UP_TO_1MP, input_images: money('0.005') } },
    { maxOutputPixels: FOUR_MP, prices: { output_images: UP_TO_4MP } },
  );

  /** The meter after reading `body`, and what the record is charged: its figures at `priced` on its basis. */
  function metered(body: Record<string, unknown>, priced = TIERED): VendorBImagesMeter & { cost(): bigint } {
    const meter = new VendorBImagesMeter();
    meter.readJson(answer(body));
    return Object.assign(meter, { cost: () => recordCostOf(meter.figures(), priced, meter.priceBasis()) });
  }

  function image(size: unknown, b64 = false): Record<string, unknown> {
    return b64 ? { b64_json: BIG_IMAGE, size } : { url: 'https://ark.example.com/out.jpeg?sig=x', size };
  }

  it('reads the output and input image counts', () => {
    const meter = metered({
      model: 'seedream-4-0-250828',
      created: 1_757_323_224,
      data: [image('2048x2048', true), image('1024x1024', true)],
      usage: { generated_images: 2, input_images: 3, output_tokens: 32_768, total_tokens: 32_768 },
    });

    expect(meter.figures()).toStrictEqual({ output_images: 2, input_images: 3 });
  });

  it('prices an image at exactly the tier limit at that tier, and bills input images at the base price', () => {
    const meter = metered({ data: [image('2048x2048')], usage: { generated_images: 1, input_images: 2 } });
    // 0.035 + 2 × 0.01 (not the 0.005 the 1 MP tier gives input images)
    expect(meter.cost()).toBe(35_000_000n + 20_000_000n);
  });

  it('prices each image of one answer by its own size', () => {
    const meter = metered({
      data: [image('1024x1024'), image('2048x2048', true), image('4096x4096'), image('1024x768'), image('2049x2048')],
      usage: { generated_images: 5 },
    });

    expect(meter.cost()).toBe(UP_TO_1MP + UP_TO_4MP + BASE_OUTPUT + UP_TO_1MP + BASE_OUTPUT);
    expect(meter.cost()).toBe(165_000_000n);
  });

  it('takes the first matching tier for each image, in file order', () => {
    const largeFirst = model(
      { maxOutputPixels: FOUR_MP, prices: { output_images: UP_TO_4MP } },
      { maxOutputPixels: ONE_MP, prices: { output_images: UP_TO_1MP } },
    );
    const meter = metered({ data: [image('1024x1024'), image('512x512')], usage: { generated_images: 2 } }, largeFirst);
    expect(meter.cost()).toBe(2n * UP_TO_4MP);
  });

  it('bills only the reported number when the answer lists more images, in answer order', () => {
    const meter = metered({ data: [image('1024x1024'), image('4096x4096')], usage: { generated_images: 1 } });
    expect(meter.figures()).toStrictEqual({ output_images: 1 });
    expect(meter.cost()).toBe(UP_TO_1MP);
  });

  it('prices reported images beyond the listed ones at the base price', () => {
    const meter = metered({ data: [image('1024x1024')], usage: { generated_images: 3, input_images: 1 } });
    expect(meter.cost()).toBe(UP_TO_1MP + 2n * BASE_OUTPUT + INPUT);
  });

  it('does not count failed items of a batch', () => {
    const failed = { error: { code: 'OutputImageSensitiveContentDetected', message: 'The generated image may contain sensitive content.' } };
    const reported = metered({ data: [failed, image('1024x1024')], usage: { generated_images: 1 } });
    expect(reported.cost()).toBe(UP_TO_1MP);

    const unreported = metered({ data: [image('2048x2048'), failed, failed, image('512x512')] });
    expect(unreported.figures()).toStrictEqual({ output_images: 2 });
    expect(unreported.cost()).toBe(UP_TO_4MP + UP_TO_1MP);
  });

  it.each([['adaptive'], [undefined], [2048], ['2048'], ['2048x'], ['1K']])('prices an image of unreadable size %j at the base price', (size) => {
    const meter = metered({ data: [image(size)], usage: { generated_images: 1 } });
    expect(meter.cost()).toBe(BASE_OUTPUT);
  });

  it('counts the listed images when usage does not report them', () => {
    const meter = metered({ data: [image('1024x1024'), image('1024x1024')] });
    expect(meter.figures()).toStrictEqual({ output_images: 2 });
    expect(meter.cost()).toBe(2n * UP_TO_1MP);
  });

  it('bills a reported 0 images as nothing', () => {
    const meter = metered({ data: [image('1024x1024')], usage: { generated_images: 0 } });
    expect(meter.figures()).toStrictEqual({ output_images: 0 });
    expect(meter.cost()).toBe(0n);
  });

  it('matches the plain cost at the base prices when the model has no tiers', () => {
    const meter = metered({ data: [image('1024x1024'), image('4096x4096')], usage: { generated_images: 2, input_images: 4 } }, model());
    expect(meter.cost()).toBe(costOf({ output_images: 2, input_images: 4 }, model().prices));
    expect(meter.cost()).toBe(2n * BASE_OUTPUT + 4n * INPUT);
  });

  it('gives no figures, no basis and no cost for an answer without images or usage', () => {
    const meter = metered({ error: { code: 'InvalidParameter', message: 'bad' } });
    expect(meter.figures()).toBeUndefined();
    expect(meter.priceBasis()).toBeUndefined();
    expect(meter.cost()).toBe(0n);
  });

  it('ignores reported counts that are not non-negative numbers', () => {
    const meter = metered({ data: [image('1024x1024')], usage: { generated_images: '3', input_images: -1 } });
    expect(meter.figures()).toStrictEqual({ output_images: 1 });
  });
});

describe(pixelsOf.name, () => {
  it.each<[unknown, number]>([
    ['2048x2048', 4_194_304],
    ['1024x768', 786_432],
    ['1024X1024', 1_048_576],
    ['1024×1024', 1_048_576],
    ['1024*1024', 1_048_576],
    [' 1760 x 2368 ', 4_167_680],
  ])('reads %j as %i pixels', (size, pixels) => {
    expect(pixelsOf(size)).toBe(pixels);
  });

  it.each([[undefined], [null], [2048], ['2048'], ['2K'], ['x'], ['1024x'], ['1024x1024x3'], ['1.5x2'], ['-1x5'], ['1234567x1']])(
    'reads %j as unknown',
    (size) => {
      expect(pixelsOf(size)).toBeUndefined();
    },
  );
});
