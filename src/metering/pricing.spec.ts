import type { PriceTier } from '../config/gateway-config';
import { callCostOf, costOf, pricesFor } from './pricing';
import { chatUsageFigures, messagesUsageFigures, responsesUsageFigures } from './usage-figures';

const NANO = 1_000_000_000n;

describe(costOf.name, () => {
  const prices = { input_tokens: (25n * NANO) / 10n, output_tokens: 10n * NANO }; // 2.5 and 10 per 1M

  it('bills input and output tokens per million, exactly', () => {
    // 1000 * 2.5e9 / 1e6 + 500 * 10e9 / 1e6 = 2_500_000 + 5_000_000 nano
    expect(costOf({ input_tokens: 1000, output_tokens: 500 }, prices)).toBe(7_500_000n);
  });

  it('rounds once, half up, after summing every token figure', () => {
    const tiny = { input_tokens: 10n, output_tokens: 1n }; // 10 nano and 1 nano per 1M tokens
    // 100_000 * 10 + 300_000 * 1 = 1_300_000 → 1.3 nano → 1 nano; each alone would round differently
    expect(costOf({ input_tokens: 100_000, output_tokens: 300_000 }, tiny)).toBe(1n);
    expect(costOf({ input_tokens: 150_000, output_tokens: 0 }, tiny)).toBe(2n);
  });

  it('bills cached input at its own price and falls back to the input price without one', () => {
    const withCached = { ...prices, cached_input_tokens: NANO }; // 1 per 1M
    const figures = { input_tokens: 1000, cached_input_tokens: 400, output_tokens: 0 };
    expect(costOf(figures, withCached)).toBe(600n * 2_500n + 400n * 1_000n);
    expect(costOf(figures, prices)).toBe(1000n * 2_500n);
  });

  it('bills cache writes at their own price', () => {
    const withWrite = { ...prices, cache_write_input_tokens: 5n * NANO };
    expect(costOf({ input_tokens: 300, cache_write_input_tokens: 100 }, withWrite)).toBe(200n * 2_500n + 100n * 5_000n);
  });

  describe('cache writes by duration', () => {
    // Per 1M tokens: input 3, cache reads 0.3, cache writes 4, 5-minute writes 3.75, 1-hour writes 6, output 15.
    const messagesPrices = {
      input_tokens: 3n * NANO,
      cached_input_tokens: (3n * NANO) / 10n,
      cache_write_input_tokens: 4n * NANO,
      cache_write_5m_input_tokens: (375n * NANO) / 100n,
      cache_write_1h_input_tokens: 6n * NANO,
      output_tokens: 15n * NANO,
    };
    /** 10 uncached, 100 read, 3000 written (1000 for 5 minutes, 2000 for an hour), 50 out. */
    const usage = {
      input_tokens: 10,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 3000,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
      output_tokens: 50,
    };

    it('bills each duration at its price instead of the cache-write price, and every input token once', () => {
      // 10 × 3 + 100 × 0.3 + 1000 × 3.75 + 2000 × 6 + 50 × 15 = 16 560 per 1M → 16 560 000 nano
      expect(costOf(messagesUsageFigures(usage), messagesPrices)).toBe(16_560_000n);
    });

    it('bills usage without the split as before: the total at the cache-write price', () => {
      const { cache_creation: _split, ...totalOnly } = usage;
      // 10 × 3 + 100 × 0.3 + 3000 × 4 + 50 × 15 = 12 810 per 1M
      expect(costOf(messagesUsageFigures(totalOnly), messagesPrices)).toBe(12_810_000n);
    });

    it('falls back to the cache-write price for a duration without a price, and then to the input price', () => {
      const { cache_write_1h_input_tokens: _oneHour, ...no1h } = messagesPrices;
      const { cache_write_5m_input_tokens: _fiveMinutes, cache_write_input_tokens: _write, ...noWrites } = no1h;
      const figures = messagesUsageFigures(usage);

      // The 2000 one-hour tokens at the cache-write price: 10 × 3 + 100 × 0.3 + 1000 × 3.75 + 2000 × 4 + 50 × 15
      expect(costOf(figures, no1h)).toBe(12_560_000n);
      // Every cache write at the input price: 10 × 3 + 100 × 0.3 + 3000 × 3 + 50 × 15
      expect(costOf(figures, noWrites)).toBe(9_810_000n);
      // A duration priced without a cache-write price: the other one pays the input price.
      // 10 × 3 + 100 × 0.3 + 1000 × 3 + 2000 × 6 + 50 × 15 = 15 810 per 1M
      expect(costOf(figures, { ...noWrites, cache_write_1h_input_tokens: 6n * NANO })).toBe(15_810_000n);
    });

    it('bills the part of the total that the split does not cover at the cache-write price', () => {
      const disagreeing = { ...usage, cache_creation_input_tokens: 3500 };
      // The split covers 3000 of 3500: 10 × 3 + 100 × 0.3 + 500 × 4 + 1000 × 3.75 + 2000 × 6 + 50 × 15 = 18 560 per 1M
      expect(messagesUsageFigures(disagreeing)).toMatchObject({ input_tokens: 3610, cache_write_input_tokens: 3500 });
      expect(costOf(messagesUsageFigures(disagreeing), messagesPrices)).toBe(18_560_000n);
    });

    it('bills a split larger than its total in full, out of the input tokens', () => {
      const disagreeing = { ...usage, cache_creation_input_tokens: 2500 };
      // input_tokens 2610 = 10 + 100 + 2500; the 3000 split tokens leave none of it at the input price:
      // 100 × 0.3 + 1000 × 3.75 + 2000 × 6 + 50 × 15 = 16 530 per 1M
      expect(costOf(messagesUsageFigures(disagreeing), messagesPrices)).toBe(16_530_000n);
    });

    it('never bills a split token at the cache-write or input price too', () => {
      const onlyWrites = { cache_write_input_tokens: 3000, cache_write_5m_input_tokens: 1000, cache_write_1h_input_tokens: 2000 };
      // 1000 × 3.75 + 2000 × 6, nothing else
      expect(costOf({ input_tokens: 3000, ...onlyWrites }, messagesPrices)).toBe(15_750_000n);
    });
  });

  it('does not bill reasoning tokens on top of the output tokens that contain them', () => {
    expect(costOf({ output_tokens: 100, reasoning_tokens: 60 }, { ...prices, reasoning_tokens: NANO })).toBe(100n * 10_000n);
  });

  it('bills counted figures per unit', () => {
    expect(costOf({ output_images: 3 }, { output_images: NANO / 25n })).toBe(120_000_000n);
  });

  it('bills speech characters per million, like tokens', () => {
    const perMillionCharacters = { input_characters: 100n * NANO }; // 100 per 1M characters
    expect(costOf({ input_characters: 101 }, perMillionCharacters)).toBe(10_100_000n);
    expect(costOf({ input_characters: 1 }, { input_characters: 3n })).toBe(0n); // 3e-6 nano rounds to 0
    expect(costOf({ input_characters: 500_000 }, { input_characters: 3n })).toBe(2n); // 1.5 nano rounds half up
  });

  it('costs nothing without usage or without prices', () => {
    expect(costOf(undefined, prices)).toBe(0n);
    expect(costOf({ input_tokens: 1000 }, {})).toBe(0n);
  });
});

describe(pricesFor.name, () => {
  const base = { output_seconds: 50n, input_seconds: 20n, input_image_count: 10n };

  function model(...priceTiers: PriceTier[]) {
    return { prices: base, priceTiers };
  }

  it('gives the base prices without tiers', () => {
    expect(pricesFor(model(), { resolution: '1080p', videoInput: true })).toEqual(base);
  });

  it('replaces only the figures the matching tier names and keeps the base prices of the others', () => {
    const prices = pricesFor(model({ resolutions: ['1080p'], prices: { output_seconds: 120n, output_images: 7n } }), { resolution: '1080p' });
    expect(prices).toEqual({ output_seconds: 120n, input_seconds: 20n, input_image_count: 10n, output_images: 7n });
  });

  it('applies only the first matching tier', () => {
    const tiered = model(
      { resolutions: ['720p'], prices: { output_seconds: 70n } },
      { resolutions: ['1080p'], videoInput: true, prices: { output_seconds: 120n } },
      { resolutions: ['1080p'], prices: { output_seconds: 100n, input_seconds: 99n } },
    );
    expect(pricesFor(tiered, { resolution: '1080p', videoInput: true })).toEqual({ ...base, output_seconds: 120n });
    expect(pricesFor(tiered, { resolution: '1080p', videoInput: false })).toEqual({ ...base, output_seconds: 100n, input_seconds: 99n });
    expect(pricesFor(tiered, { resolution: '720p', videoInput: true })).toEqual({ ...base, output_seconds: 70n });
  });

  it('matches resolutions case-insensitively against the lower-cased list', () => {
    const tiered = model({ resolutions: ['1080p', '1080p-hd'], prices: { output_seconds: 100n } });
    expect(pricesFor(tiered, { resolution: '1080P' }).output_seconds).toBe(100n);
    expect(pricesFor(tiered, { resolution: '1080P-HD' }).output_seconds).toBe(100n);
    expect(pricesFor(tiered, { resolution: '720p' }).output_seconds).toBe(50n);
  });

  it('matches no resolution tier when the resolution is absent', () => {
    const tiered = model({ resolutions: ['1080p'], prices: { output_seconds: 100n } });
    expect(pricesFor(tiered, {})).toEqual(base);
    expect(pricesFor(tiered, { videoInput: true })).toEqual(base);
  });

  it('matches video_input true only with video input, false without, and counts absent as without', () => {
    const withVideo = model({ videoInput: true, prices: { output_seconds: 80n } });
    const withoutVideo = model({ videoInput: false, prices: { output_seconds: 30n } });

    expect(pricesFor(withVideo, { videoInput: true }).output_seconds).toBe(80n);
    expect(pricesFor(withVideo, { videoInput: false }).output_seconds).toBe(50n);
    expect(pricesFor(withVideo, {}).output_seconds).toBe(50n);
    expect(pricesFor(withoutVideo, { videoInput: true }).output_seconds).toBe(50n);
    expect(pricesFor(withoutVideo, { videoInput: false }).output_seconds).toBe(30n);
    expect(pricesFor(withoutVideo, {}).output_seconds).toBe(30n);
  });

  it('matches a tier without video_input whatever the video input', () => {
    const tiered = model({ resolutions: ['480p'], prices: { output_seconds: 25n } });
    expect(pricesFor(tiered, { resolution: '480p', videoInput: true }).output_seconds).toBe(25n);
    expect(pricesFor(tiered, { resolution: '480p', videoInput: false }).output_seconds).toBe(25n);
    expect(pricesFor(tiered, { resolution: '480p' }).output_seconds).toBe(25n);
  });

  it('requires every condition a tier names', () => {
    const tiered = model({ resolutions: ['1080p'], videoInput: true, prices: { output_seconds: 120n } });
    expect(pricesFor(tiered, { resolution: '1080p', videoInput: true }).output_seconds).toBe(120n);
    expect(pricesFor(tiered, { resolution: '1080p' }).output_seconds).toBe(50n);
    expect(pricesFor(tiered, { resolution: '720p', videoInput: true }).output_seconds).toBe(50n);
  });

  describe('output pixel tiers', () => {
    const images = { output_images: 45n, input_images: 10n };
    const ONE_MP = 1024 * 1024;
    const FOUR_MP = 2048 * 2048;

    function imageModel(...priceTiers: PriceTier[]) {
      return { prices: images, priceTiers };
    }

    const tiered = imageModel({ maxOutputPixels: ONE_MP, prices: { output_images: 20n } }, { maxOutputPixels: FOUR_MP, prices: { output_images: 35n } });

    it('matches at and below the limit, not above it', () => {
      expect(pricesFor(tiered, { outputPixels: ONE_MP }).output_images).toBe(20n);
      expect(pricesFor(tiered, { outputPixels: ONE_MP - 1 }).output_images).toBe(20n);
      expect(pricesFor(tiered, { outputPixels: 1 }).output_images).toBe(20n);
      expect(pricesFor(tiered, { outputPixels: ONE_MP + 1 }).output_images).toBe(35n);
      expect(pricesFor(tiered, { outputPixels: FOUR_MP }).output_images).toBe(35n);
      expect(pricesFor(tiered, { outputPixels: FOUR_MP + 1 }).output_images).toBe(45n);
    });

    it('matches no pixel tier when the pixels are absent', () => {
      expect(pricesFor(tiered, {})).toEqual(images);
      expect(pricesFor(tiered, { resolution: '1080p', videoInput: false })).toEqual(images);
    });

    it('keeps the base prices of figures the tier does not name', () => {
      expect(pricesFor(tiered, { outputPixels: ONE_MP })).toEqual({ output_images: 20n, input_images: 10n });
    });

    it('applies the first matching tier, in order, even when a later one is tighter', () => {
      const looseFirst = imageModel({ maxOutputPixels: FOUR_MP, prices: { output_images: 35n } }, { maxOutputPixels: ONE_MP, prices: { output_images: 20n } });
      expect(pricesFor(looseFirst, { outputPixels: 512 * 512 }).output_images).toBe(35n);
    });

    it('requires the other conditions a pixel tier names too', () => {
      const combined = imageModel(
        { resolutions: ['2k'], maxOutputPixels: FOUR_MP, prices: { output_images: 30n } },
        { maxOutputPixels: FOUR_MP, prices: { output_images: 35n } },
      );
      expect(pricesFor(combined, { resolution: '2K', outputPixels: FOUR_MP }).output_images).toBe(30n);
      expect(pricesFor(combined, { resolution: '4K', outputPixels: FOUR_MP }).output_images).toBe(35n);
      expect(pricesFor(combined, { outputPixels: FOUR_MP }).output_images).toBe(35n);
      expect(pricesFor(combined, { resolution: '2k', outputPixels: FOUR_MP + 1 }).output_images).toBe(45n);
      expect(pricesFor(combined, { resolution: '2k' }).output_images).toBe(45n);
    });

    it('matches a tier without a pixel limit whatever the pixels', () => {
      const byResolution = imageModel({ resolutions: ['4k'], prices: { output_images: 60n } });
      expect(pricesFor(byResolution, { resolution: '4k', outputPixels: 16_777_216 }).output_images).toBe(60n);
      expect(pricesFor(byResolution, { resolution: '4k' }).output_images).toBe(60n);
    });
  });

  it('leaves the model prices untouched and feeds costOf', () => {
    const tiered = model({ videoInput: true, prices: { output_seconds: 120n } });
    const prices = pricesFor(tiered, { videoInput: true });
    prices.input_seconds = 0n;
    expect(base).toEqual({ output_seconds: 50n, input_seconds: 20n, input_image_count: 10n });
    expect(costOf({ output_seconds: 5, input_seconds: 2, input_image_count: 1 }, pricesFor(tiered, { videoInput: true }))).toBe(5n * 120n + 2n * 20n + 10n);
  });
});

describe(callCostOf.name, () => {
  const prices = { input_tokens: 3_000_000_000n, cached_input_tokens: 300_000_000n, output_tokens: 15_000_000_000n };
  const long = { input_tokens: 6_000_000_000n, output_tokens: 22_500_000_000n };
  const tiered = {
    prices,
    priceTiers: [
      { inputTokensAbove: 1_000_000, prices: { input_tokens: 9n } },
      { inputTokensAbove: 200_000, prices: long },
    ],
  };

  it('prices a call at or below the threshold at the model prices', () => {
    const figures = { input_tokens: 200_000, cached_input_tokens: 100_000, output_tokens: 1_000 };
    expect(callCostOf(figures, tiered)).toBe(costOf(figures, prices));
    expect(callCostOf(figures, tiered)).toBe(100_000n * 3_000n + 100_000n * 300n + 1_000n * 15_000n);
  });

  it("prices the whole call past the threshold at the tier's prices, and the figures it does not name at the model's", () => {
    const figures = { input_tokens: 200_001, cached_input_tokens: 100_000, output_tokens: 1_000 };
    // 100,001 uncached at 6, 100,000 cached at the model's 0.3, output at 22.5 (per 1M tokens)
    expect(callCostOf(figures, tiered)).toBe(100_001n * 6_000n + 100_000n * 300n + 1_000n * 22_500n);
  });

  it('takes the first tier that matches, in order', () => {
    expect(callCostOf({ input_tokens: 2_000_000 }, tiered)).toBe(18n);
  });

  it('prices a model without tiers, and a call without figures', () => {
    expect(callCostOf({ input_tokens: 2_000_000, output_tokens: 10 }, { prices, priceTiers: [] })).toBe(6_000_000_000n + 150_000n);
    expect(callCostOf(undefined, tiered)).toBe(0n);
  });

  it('never applies a long-context tier to a call without an input figure, or a video tier to a text call', () => {
    const video = { prices, priceTiers: [{ resolutions: ['1080p'], prices: { output_tokens: 1n } }] };
    expect(callCostOf({ output_tokens: 1_000 }, tiered)).toBe(15_000_000n);
    expect(callCostOf({ input_tokens: 300_000, output_tokens: 1_000 }, video)).toBe(costOf({ input_tokens: 300_000, output_tokens: 1_000 }, prices));
  });
});

describe('usage figures', () => {
  it('keeps unknown figures absent instead of zero', () => {
    expect(chatUsageFigures({ prompt_tokens: 5 })).toEqual({ input_tokens: 5 });
    expect(chatUsageFigures(null)).toBeUndefined();
  });

  it('reads cached and reasoning tokens of chat usage', () => {
    expect(
      chatUsageFigures({
        prompt_tokens: 50,
        completion_tokens: 20,
        prompt_tokens_details: { cached_tokens: 30 },
        completion_tokens_details: { reasoning_tokens: 12 },
      }),
    ).toEqual({ input_tokens: 50, cached_input_tokens: 30, output_tokens: 20, reasoning_tokens: 12 });
  });

  it('reads responses usage', () => {
    expect(
      responsesUsageFigures({
        input_tokens: 40,
        input_tokens_details: { cached_tokens: 8 },
        output_tokens: 9,
        output_tokens_details: { reasoning_tokens: 4 },
      }),
    ).toEqual({ input_tokens: 40, cached_input_tokens: 8, output_tokens: 9, reasoning_tokens: 4 });
  });

  it('adds cache reads and writes to the uncached messages input', () => {
    expect(messagesUsageFigures({ input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 5, output_tokens: 7 })).toEqual({
      input_tokens: 115,
      cached_input_tokens: 100,
      cache_write_input_tokens: 5,
      output_tokens: 7,
    });
  });
});
