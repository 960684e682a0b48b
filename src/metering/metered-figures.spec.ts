import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import { INTERFACE_NAMES } from '../config/gateway-config';
import { isPriceFieldName } from '../config/prices';
import { decodeChatUsage } from '../translation/chat-completions/decode-chat-response';
import { decodeMessagesUsage } from '../translation/messages/messages-usage';
import { decodeResponsesUsage } from '../translation/responses/decode-responses-response';
import { estimatedFigures } from '../video/video-estimate';
import { VENDOR_B_WIRE, VENDOR_C_WIRE } from '../video/video-wire';
import { METERED_FIGURES, meteredFiguresOf, pricesUsedBy, unpricedModelWarnings } from '../config/metered-figures';
import {
  canonicalUsageFigures,
  chatUsageFigures,
  embeddingsUsageFigures,
  generateContentUsageFigures,
  imagesUsageFigures,
  messagesUsageFigures,
  responsesUsageFigures,
  speechUsageFigures,
  UsageFigures,
  vendorBImagesUsageFigures,
} from './usage-figures';

const CHAT_USAGE = { prompt_tokens: 10, prompt_tokens_details: { cached_tokens: 2 }, completion_tokens: 5, completion_tokens_details: { reasoning_tokens: 1 } };
const RESPONSES_USAGE = { input_tokens: 10, input_tokens_details: { cached_tokens: 2 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 1 } };
const MESSAGES_USAGE = {
  input_tokens: 10,
  cache_read_input_tokens: 2,
  cache_creation_input_tokens: 3,
  cache_creation: { ephemeral_5m_input_tokens: 1, ephemeral_1h_input_tokens: 2 },
  output_tokens: 5,
  output_tokens_details: { thinking_tokens: 1 },
};
const VIDEO_BASIS = { durationSeconds: 5, resolution: '720p', draft: false, videoInput: true, inputImageCount: 1 };

/**
 * Every meter of an interface, fed an answer that reports every figure it reads: native
 * answers, translated answers (decoded to canonical usage), video task reports and estimates.
 */
const METER_OUTPUTS: Record<InterfaceName, Array<UsageFigures | undefined>> = {
  chat_completions: [chatUsageFigures(CHAT_USAGE), canonicalUsageFigures(decodeChatUsage(CHAT_USAGE))],
  responses: [responsesUsageFigures(RESPONSES_USAGE), canonicalUsageFigures(decodeResponsesUsage(RESPONSES_USAGE))],
  messages: [messagesUsageFigures(MESSAGES_USAGE), canonicalUsageFigures(decodeMessagesUsage(MESSAGES_USAGE))],
  embeddings: [embeddingsUsageFigures({ prompt_tokens: 10 })],
  images_a: [
    imagesUsageFigures({
      input_tokens: 10,
      output_tokens: 20,
      input_tokens_details: { text_tokens: 4, image_tokens: 6 },
      output_tokens_details: { text_tokens: 5, image_tokens: 15 },
    }),
  ],
  images_b: [vendorBImagesUsageFigures({ generated_images: 2, input_images: 1 }, 2)],
  images_c: [
    generateContentUsageFigures({
      promptTokenCount: 10,
      cachedContentTokenCount: 2,
      candidatesTokenCount: 20,
      candidatesTokensDetails: [
        { modality: 'TEXT', tokenCount: 5 },
        { modality: 'IMAGE', tokenCount: 15 },
      ],
      thoughtsTokenCount: 3,
    }),
  ],
  video_b: [VENDOR_B_WIRE.reported({ status: 'succeeded', usage: { completion_tokens: 1000 } }).figures, estimatedFigures('video_b', VIDEO_BASIS)],
  video_c: [
    VENDOR_C_WIRE.reported({ task: { status: 'Success', usage: { output_seconds: 5, input_seconds: 5, input_image_count: 1 } } }).figures,
    estimatedFigures('video_c', VIDEO_BASIS),
  ],
  speech_c: [speechUsageFigures({ usage_characters: 120 })],
};

function model(overrides: Partial<ModelConfig>): ModelConfig {
  return {
    id: 'model-a',
    upstreamModel: 'up-a',
    interfaces: ['chat_completions'],
    lines: ['line-a'],
    capabilities: { imageInput: false },
    prices: {},
    priceTiers: [],
    ...overrides,
  };
}

describe('METERED_FIGURES', () => {
  it.each(INTERFACE_NAMES)('lists exactly the priced figures the meters of %s report', (name) => {
    const reported = new Set(METER_OUTPUTS[name].flatMap((figures) => Object.keys(figures ?? {})).filter(isPriceFieldName));

    expect([...reported].sort()).toEqual([...METERED_FIGURES[name]].sort());
  });
});

describe(meteredFiguresOf.name, () => {
  it('takes the figures of every interface of the model, each once', () => {
    expect(meteredFiguresOf(['chat_completions', 'messages'])).toEqual([
      'input_tokens',
      'cached_input_tokens',
      'output_tokens',
      'cache_write_input_tokens',
      'cache_write_5m_input_tokens',
      'cache_write_1h_input_tokens',
    ]);
    expect(meteredFiguresOf(['video_b', 'video_c'])).toEqual(['output_video_tokens', 'output_seconds', 'input_seconds', 'input_image_count']);
  });
});

describe(pricesUsedBy.name, () => {
  it('counts a price that cached input or cache writes fall back to as used', () => {
    expect(pricesUsedBy(['cached_input_tokens'])).toEqual(new Set(['cached_input_tokens', 'input_tokens']));
    expect(pricesUsedBy(['cache_write_input_tokens', 'output_tokens'])).toEqual(new Set(['cache_write_input_tokens', 'output_tokens', 'input_tokens']));
  });

  it('follows the fallbacks of the cache writes by duration down to the input price', () => {
    expect(pricesUsedBy(['cache_write_1h_input_tokens'])).toEqual(new Set(['cache_write_1h_input_tokens', 'cache_write_input_tokens', 'input_tokens']));
    expect(pricesUsedBy(['cache_write_5m_input_tokens'])).toEqual(new Set(['cache_write_5m_input_tokens', 'cache_write_input_tokens', 'input_tokens']));
  });

  it('adds nothing for figures without a fallback', () => {
    expect(pricesUsedBy(['output_images', 'input_images'])).toEqual(new Set(['output_images', 'input_images']));
  });
});

describe(unpricedModelWarnings.name, () => {
  it('warns once about a billable model without any price, naming it and what it meters', () => {
    const warnings = unpricedModelWarnings([model({ id: 'priced', prices: { input_tokens: 1n } }), model({ id: 'video-free', interfaces: ['video_b'] })]);

    expect(warnings).toEqual([expect.stringContaining('model "video-free" (models[1]) has no prices')]);
    expect(warnings[0]).toContain('output_video_tokens');
  });

  it('says nothing about an explicit 0 price, or prices given only in tiers', () => {
    expect(unpricedModelWarnings([model({ prices: { input_tokens: 0n } })])).toEqual([]);
    expect(unpricedModelWarnings([model({ interfaces: ['video_c'], priceTiers: [{ resolutions: ['720p'], prices: { output_seconds: 0n } }] })])).toEqual([]);
  });

  it('warns about a model whose tiers are all empty', () => {
    expect(unpricedModelWarnings([model({ interfaces: ['video_c'], priceTiers: [{ resolutions: ['720p'], prices: {} }] })])).toHaveLength(1);
  });
});
