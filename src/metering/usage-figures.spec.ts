import { generateContentUsageFigures, imagesUsageFigures, speechUsageFigures } from './usage-figures';

describe(imagesUsageFigures.name, () => {
  it('reads a gpt-image usage with input details and no output details: the output is image tokens', () => {
    // https://platform.openai.com/docs/api-reference/images/object (gpt-image-1)
    const usage = {
      total_tokens: 4_310,
      input_tokens: 150,
      output_tokens: 4_160,
      input_tokens_details: { text_tokens: 50, image_tokens: 100 },
    };

    expect(imagesUsageFigures(usage)).toStrictEqual({
      input_text_tokens: 50,
      input_image_tokens: 100,
      output_image_tokens: 4_160,
    });
  });

  it('reads output details by text and image', () => {
    const usage = {
      input_tokens: 60,
      output_tokens: 1_300,
      input_tokens_details: { text_tokens: 60, image_tokens: 0 },
      output_tokens_details: { text_tokens: 28, image_tokens: 1_272 },
    };

    expect(imagesUsageFigures(usage)).toStrictEqual({
      input_text_tokens: 60,
      input_image_tokens: 0,
      output_text_tokens: 28,
      output_image_tokens: 1_272,
    });
  });

  it('counts the input total as text and the output total as image tokens without any details', () => {
    expect(imagesUsageFigures({ input_tokens: 20, output_tokens: 272, total_tokens: 292 })).toStrictEqual({
      input_text_tokens: 20,
      output_image_tokens: 272,
    });
  });

  it('gives the text part of the input as the rest of the total when only image tokens are detailed', () => {
    expect(imagesUsageFigures({ input_tokens: 150, input_tokens_details: { image_tokens: 100 }, output_tokens: 10 })).toStrictEqual({
      input_text_tokens: 50,
      input_image_tokens: 100,
      output_image_tokens: 10,
    });
  });

  it('gives the image part of the output as the rest of the total when only text tokens are detailed', () => {
    expect(imagesUsageFigures({ output_tokens: 100, output_tokens_details: { text_tokens: 30 } })).toStrictEqual({
      output_text_tokens: 30,
      output_image_tokens: 70,
    });
  });

  it('gives the image part of the input as the rest of the total when only text tokens are detailed', () => {
    expect(imagesUsageFigures({ input_tokens: 150, input_tokens_details: { text_tokens: 50 }, output_tokens: 10 })).toStrictEqual({
      input_text_tokens: 50,
      input_image_tokens: 100,
      output_image_tokens: 10,
    });
  });

  it('gives the text part of the output as the rest of the total when only image tokens are detailed', () => {
    expect(imagesUsageFigures({ input_tokens: 5, output_tokens: 100, output_tokens_details: { image_tokens: 80 } })).toStrictEqual({
      input_text_tokens: 5,
      output_text_tokens: 20,
      output_image_tokens: 80,
    });
  });

  it('never gives a negative rest', () => {
    expect(imagesUsageFigures({ input_tokens: 5, input_tokens_details: { image_tokens: 9 } })).toStrictEqual({
      input_text_tokens: 0,
      input_image_tokens: 9,
    });
  });

  it('keeps the totals themselves out of the figures, so nothing is billed twice', () => {
    const figures = imagesUsageFigures({ input_tokens: 10, output_tokens: 20, total_tokens: 30 })!;
    expect(figures).not.toHaveProperty('input_tokens');
    expect(figures).not.toHaveProperty('output_tokens');
    expect(figures).not.toHaveProperty('total_tokens');
  });

  it.each([
    ['no usage', undefined],
    ['null', null],
    ['an empty usage', {}],
    ['a usage of strings', { input_tokens: '10', output_tokens: '20' }],
    ['negative and non-finite figures', { input_tokens: -1, output_tokens: Number.NaN }],
    ['a usage that is not an object', 42],
  ])('gives no figures (not zeros) for %s', (_case, usage) => {
    expect(imagesUsageFigures(usage)).toBeUndefined();
  });
});

describe(generateContentUsageFigures.name, () => {
  it('splits candidate tokens by modality and keeps thoughts and cached input apart', () => {
    // https://ai.google.dev/api/generate-content#UsageMetadata
    const usageMetadata = {
      promptTokenCount: 1_290,
      cachedContentTokenCount: 1_024,
      candidatesTokenCount: 1_310,
      thoughtsTokenCount: 412,
      totalTokenCount: 3_012,
      promptTokensDetails: [
        { modality: 'TEXT', tokenCount: 32 },
        { modality: 'IMAGE', tokenCount: 1_258 },
      ],
      candidatesTokensDetails: [
        { modality: 'IMAGE', tokenCount: 1_290 },
        { modality: 'TEXT', tokenCount: 20 },
      ],
    };

    expect(generateContentUsageFigures(usageMetadata)).toStrictEqual({
      input_tokens: 1_290,
      cached_input_tokens: 1_024,
      output_text_tokens: 20,
      output_image_tokens: 1_290,
      thinking_tokens: 412,
    });
  });

  it('reads an image-only answer', () => {
    const usageMetadata = {
      promptTokenCount: 9,
      candidatesTokenCount: 1_290,
      totalTokenCount: 1_299,
      candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: 1_290 }],
    };

    expect(generateContentUsageFigures(usageMetadata)).toStrictEqual({
      input_tokens: 9,
      output_text_tokens: 0,
      output_image_tokens: 1_290,
    });
  });

  it('counts every candidate token as text without details', () => {
    expect(generateContentUsageFigures({ promptTokenCount: 12, candidatesTokenCount: 40, totalTokenCount: 52 })).toStrictEqual({
      input_tokens: 12,
      output_text_tokens: 40,
    });
  });

  it('sums repeated modality entries and reads a missing tokenCount as 0 (proto JSON omits zeros)', () => {
    const usageMetadata = {
      candidatesTokenCount: 30,
      candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 10 }, { modality: 'TEXT', tokenCount: 20 }, { modality: 'IMAGE' }],
    };

    expect(generateContentUsageFigures(usageMetadata)).toStrictEqual({ output_text_tokens: 30, output_image_tokens: 0 });
  });

  it('leaves figures the answer does not report absent', () => {
    const figures = generateContentUsageFigures({ promptTokenCount: 7 });
    expect(figures).toStrictEqual({ input_tokens: 7 });
  });

  it.each([
    ['no usageMetadata', undefined],
    ['an empty usageMetadata', {}],
    ['only a total', { totalTokenCount: 100 }],
    ['figures that are strings', { promptTokenCount: '7', candidatesTokenCount: '9' }],
  ])('gives no figures (not zeros) for %s', (_case, usageMetadata) => {
    expect(generateContentUsageFigures(usageMetadata)).toBeUndefined();
  });
});

describe(speechUsageFigures.name, () => {
  it('bills extra_info.usage_characters as input characters', () => {
    const extraInfo = {
      audio_length: 9_900,
      audio_sample_rate: 32_000,
      audio_size: 160_323,
      bitrate: 128_000,
      word_count: 52,
      invisible_character_ratio: 0,
      usage_characters: 101,
      audio_format: 'mp3',
      audio_channel: 1,
    };

    expect(speechUsageFigures(extraInfo)).toStrictEqual({ input_characters: 101 });
  });

  it('keeps a reported 0', () => {
    expect(speechUsageFigures({ usage_characters: 0 })).toStrictEqual({ input_characters: 0 });
  });

  it.each([
    ['no extra_info', undefined],
    ['null', null],
    ['extra_info without usage_characters', { audio_length: 9_900, word_count: 52 }],
    ['usage_characters as a string', { usage_characters: '101' }],
  ])('gives no figures for %s', (_case, extraInfo) => {
    expect(speechUsageFigures(extraInfo)).toBeUndefined();
  });
});
