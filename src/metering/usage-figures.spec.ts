import type { CanonicalUsage } from '../translation/canonical/response';
import { parseSseEvent } from '../translation/sse/decode-sse';
import { planTranslation, StreamTranslation, translateAnswer } from '../translation/translate';
import type { TextProtocol, TranslatableEntry } from '../translation/translation-routes';
import { ChatMeter, MessagesMeter, ResponseMeter, ResponsesMeter } from './response-meter';
import {
  canonicalUsageFigures,
  chatUsageFigures,
  generateContentUsageFigures,
  imagesUsageFigures,
  messagesUsageFigures,
  responsesUsageFigures,
  speechUsageFigures,
  UsageFigures,
} from './usage-figures';

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

describe(canonicalUsageFigures.name, () => {
  it('names each canonical usage member as the figure it is billed as', () => {
    const usage: Required<CanonicalUsage> = {
      inputTokens: 115,
      cachedInputTokens: 100,
      cacheWriteInputTokens: 5,
      cacheWrite5mInputTokens: 2,
      cacheWrite1hInputTokens: 3,
      outputTokens: 40,
      reasoningTokens: 12,
    };

    expect(canonicalUsageFigures(usage)).toStrictEqual({
      input_tokens: 115,
      cached_input_tokens: 100,
      cache_write_input_tokens: 5,
      cache_write_5m_input_tokens: 2,
      cache_write_1h_input_tokens: 3,
      output_tokens: 40,
      reasoning_tokens: 12,
    });
  });

  it('leaves members the upstream did not report absent, neither 0 nor undefined', () => {
    const figures = canonicalUsageFigures({ outputTokens: 3 });

    expect(figures).toStrictEqual({ output_tokens: 3 });
    expect(Object.keys(figures!)).toEqual(['output_tokens']);
  });

  it('keeps a reported 0', () => {
    expect(canonicalUsageFigures({ inputTokens: 0, cachedInputTokens: 0 })).toStrictEqual({ input_tokens: 0, cached_input_tokens: 0 });
  });

  it('gives no figures for a usage without any', () => {
    expect(canonicalUsageFigures({})).toBeUndefined();
  });
});

/**
 * The same upstream usage JSON, metered on the native path (the response meters, on the answer
 * and on its stream) and on the translated path (the translation of the answer and of the
 * stream, mapped by `canonicalUsageFigures` as translated-call.service.ts does). Each case names
 * the figures it must give, so a mapping broken on both paths alike fails too.
 */
describe('text usage: native and translated calls bill the same figures', () => {
  type Case = [name: string, usageJson: string, figures: UsageFigures | undefined];

  const CHAT_CASES: Case[] = [
    [
      'every figure',
      '{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":8}}',
      { input_tokens: 100, cached_input_tokens: 40, output_tokens: 20, reasoning_tokens: 8 },
    ],
    ['no details (chat-compatible upstreams)', '{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}', { input_tokens: 12, output_tokens: 3 }],
    [
      'zeros, and details that are null or empty',
      '{"prompt_tokens":0,"completion_tokens":0,"prompt_tokens_details":null,"completion_tokens_details":{}}',
      { input_tokens: 0, output_tokens: 0 },
    ],
    ['only the output', '{"completion_tokens":5}', { output_tokens: 5 }],
    [
      'negative, non-finite and string figures (none is a report)',
      '{"prompt_tokens":10,"completion_tokens":-1,"prompt_tokens_details":{"cached_tokens":-4},"completion_tokens_details":{"reasoning_tokens":1e999}}',
      { input_tokens: 10 },
    ],
    ['nothing usable', '{"prompt_tokens":"12","completion_tokens":null}', undefined],
    ['an empty usage', '{}', undefined],
  ];

  const RESPONSES_CASES: Case[] = [
    [
      'every figure',
      '{"input_tokens":100,"input_tokens_details":{"cached_tokens":40},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":8},"total_tokens":120}',
      { input_tokens: 100, cached_input_tokens: 40, output_tokens: 20, reasoning_tokens: 8 },
    ],
    [
      'reported zeros',
      '{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":0}',
      { input_tokens: 5, cached_input_tokens: 0, output_tokens: 0 },
    ],
    ['no details', '{"input_tokens":7,"output_tokens":2}', { input_tokens: 7, output_tokens: 2 }],
    ['a negative cached count', '{"input_tokens":7,"input_tokens_details":{"cached_tokens":-7},"output_tokens":2}', { input_tokens: 7, output_tokens: 2 }],
    ['nothing usable', '{"input_tokens":"7","output_tokens":-2,"input_tokens_details":[]}', undefined],
  ];

  const MESSAGES_CASES: Case[] = [
    [
      'cache reads and writes (input is their sum with the uncached part)',
      '{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":7}',
      { input_tokens: 115, cached_input_tokens: 100, cache_write_input_tokens: 5, output_tokens: 7 },
    ],
    [
      'cache writes split by duration, beside their total, and thinking tokens',
      '{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":7,"output_tokens_details":{"thinking_tokens":4},"service_tier":"standard"}',
      {
        input_tokens: 140,
        cached_input_tokens: 100,
        cache_write_input_tokens: 30,
        cache_write_5m_input_tokens: 10,
        cache_write_1h_input_tokens: 20,
        output_tokens: 7,
        reasoning_tokens: 4,
      },
    ],
    [
      'a split of zeros, as the API sends it without cache writes',
      '{"input_tokens":9,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1}',
      {
        input_tokens: 9,
        cached_input_tokens: 0,
        cache_write_input_tokens: 0,
        cache_write_5m_input_tokens: 0,
        cache_write_1h_input_tokens: 0,
        output_tokens: 1,
      },
    ],
    [
      'a split without its total: the total is the split, counted in the input',
      '{"input_tokens":10,"cache_creation":{"ephemeral_5m_input_tokens":6,"ephemeral_1h_input_tokens":null},"output_tokens":2}',
      { input_tokens: 16, cache_write_input_tokens: 6, cache_write_5m_input_tokens: 6, output_tokens: 2 },
    ],
    [
      'a null split, as the API allows',
      '{"input_tokens":10,"cache_creation_input_tokens":5,"cache_creation":null,"output_tokens":2}',
      { input_tokens: 15, cache_write_input_tokens: 5, output_tokens: 2 },
    ],
    [
      'null cache figures, as the API sends them',
      '{"input_tokens":10,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":3}',
      { input_tokens: 10, output_tokens: 3 },
    ],
    ['only cache reads', '{"input_tokens":0,"cache_read_input_tokens":50,"output_tokens":2}', { input_tokens: 50, cached_input_tokens: 50, output_tokens: 2 }],
    [
      'reported zero cache figures',
      '{"input_tokens":9,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}',
      { input_tokens: 9, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 1 },
    ],
    [
      'cache figures without the uncached input: the input stays unknown',
      '{"cache_read_input_tokens":50,"cache_creation_input_tokens":5,"output_tokens":2}',
      { cached_input_tokens: 50, cache_write_input_tokens: 5, output_tokens: 2 },
    ],
    [
      'thinking tokens',
      '{"input_tokens":4,"output_tokens":30,"output_tokens_details":{"thinking_tokens":12}}',
      { input_tokens: 4, output_tokens: 30, reasoning_tokens: 12 },
    ],
    [
      'a negative cache read, neither summed nor kept',
      '{"input_tokens":10,"cache_read_input_tokens":-5,"output_tokens":1}',
      { input_tokens: 10, output_tokens: 1 },
    ],
    ['nothing usable', '{"input_tokens":"10","output_tokens":-1}', undefined],
  ];

  const answers: Record<TextProtocol, (usage: string) => string> = {
    chat_completions: (usage) =>
      `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-a","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":${usage}}`,
    responses: (usage) =>
      `{"id":"resp_1","object":"response","status":"completed","model":"up-a","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],"usage":${usage}}`,
    messages: (usage) =>
      `{"id":"msg_1","type":"message","role":"assistant","model":"up-a","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":${usage}}`,
  };

  const event = (name: string | undefined, data: string) => Buffer.from(`${name ? `event: ${name}\n` : ''}data: ${data}\n\n`);

  const streams: Record<TextProtocol, (usage: string) => Buffer[]> = {
    chat_completions: (usage) => [
      event(
        undefined,
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"up-a","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":null}',
      ),
      event(
        undefined,
        '{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"up-a","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}',
      ),
      event(undefined, `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"up-a","choices":[],"usage":${usage}}`),
      event(undefined, '[DONE]'),
    ],
    responses: (usage) => [
      event(
        'response.created',
        '{"type":"response.created","response":{"id":"resp_1","model":"up-a","status":"in_progress","output":[],"usage":null,"error":null}}',
      ),
      event(
        'response.completed',
        `{"type":"response.completed","response":{"id":"resp_1","model":"up-a","status":"completed","output":[],"usage":${usage},"error":null}}`,
      ),
    ],
    // A message_delta that repeats no figure: the start's usage is the whole usage.
    messages: (usage) => messagesStream(usage, '{}'),
  };

  /** A messages stream: `message_start` with its usage, `message_delta` with cumulative totals. */
  function messagesStream(startUsage: string, deltaUsage: string): Buffer[] {
    return [
      event(
        'message_start',
        `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"up-a","content":[],"stop_reason":null,"usage":${startUsage}}}`,
      ),
      event('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
      event('content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}'),
      event('content_block_stop', '{"type":"content_block_stop","index":0}'),
      event('message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":${deltaUsage}}`),
      event('message_stop', '{"type":"message_stop"}'),
    ];
  }

  const meters: Record<TextProtocol, () => ResponseMeter> = {
    chat_completions: () => new ChatMeter(true),
    responses: () => new ResponsesMeter(),
    messages: () => new MessagesMeter(),
  };

  /** The client entries a model of each upstream protocol is translated from. */
  const ENTRIES: Record<TextProtocol, TranslatableEntry[]> = {
    chat_completions: ['messages', 'responses'],
    responses: ['messages'],
    messages: ['responses'],
  };

  function plan(entry: TranslatableEntry, upstream: TextProtocol) {
    const body = entry === 'responses' ? { model: 'model-a', input: 'Hi' } : { model: 'model-a', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };
    return planTranslation(entry, upstream, body, { upstreamModel: 'up-a' });
  }

  const context = () => ({ newId: (prefix: string) => `${prefix}_1`, now: () => 1_800_000_000 });

  function nativeAnswer(upstream: TextProtocol, answer: string): UsageFigures | undefined {
    const meter = meters[upstream]();
    meter.readJson(Buffer.from(answer));
    return meter.figures();
  }

  function nativeStream(upstream: TextProtocol, events: Buffer[]): UsageFigures | undefined {
    const meter = meters[upstream]();
    for (const raw of events) meter.readEvent(raw);
    return meter.figures();
  }

  function translatedAnswer(entry: TranslatableEntry, upstream: TextProtocol, answer: string): UsageFigures | undefined {
    return canonicalUsageFigures(translateAnswer(plan(entry, upstream), JSON.parse(answer), context()).usage);
  }

  function translatedStream(entry: TranslatableEntry, upstream: TextProtocol, events: Buffer[]): UsageFigures | undefined {
    let usage: CanonicalUsage = {};
    const translation = new StreamTranslation(plan(entry, upstream), context(), (known) => (usage = known));
    for (const raw of events) if (!translation.finished) translation.read(parseSseEvent(raw)!);
    translation.end();
    return canonicalUsageFigures(usage);
  }

  const PROTOCOL_CASES: Array<[TextProtocol, Case[]]> = [
    ['chat_completions', CHAT_CASES],
    ['responses', RESPONSES_CASES],
    ['messages', MESSAGES_CASES],
  ];

  describe.each(PROTOCOL_CASES)('%s upstream', (upstream, cases) => {
    it.each(cases)('%s: the same figures in a JSON answer', (_case, usage, figures) => {
      const answer = answers[upstream](usage);

      expect(nativeAnswer(upstream, answer)).toStrictEqual(figures);
      for (const entry of ENTRIES[upstream]) expect(translatedAnswer(entry, upstream, answer)).toStrictEqual(figures);
    });

    it.each(cases)('%s: the same figures in a stream', (_case, usage, figures) => {
      const events = streams[upstream](usage);

      expect(nativeStream(upstream, events)).toStrictEqual(figures);
      for (const entry of ENTRIES[upstream]) expect(translatedStream(entry, upstream, events)).toStrictEqual(figures);
    });
  });

  it.each([
    [
      'message_delta with output totals only',
      '{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}',
      '{"output_tokens":40}',
      { input_tokens: 115, cached_input_tokens: 100, cache_write_input_tokens: 5, output_tokens: 40 },
    ],
    [
      'message_delta repeating only part of the input: summed with the cache figures known before',
      '{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}',
      '{"input_tokens":12,"output_tokens":40}',
      { input_tokens: 112, cached_input_tokens: 100, output_tokens: 40 },
    ],
    [
      'null figures in message_delta overwrite nothing',
      '{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":null,"output_tokens":1}',
      '{"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":5}',
      { input_tokens: 30, cache_write_input_tokens: 20, output_tokens: 5 },
    ],
    ['no usage in message_start', '{}', '{"output_tokens":5,"input_tokens":3}', { input_tokens: 3, output_tokens: 5 }],
    [
      'the split in message_start and a message_delta with totals only: the split is kept',
      '{"input_tokens":10,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":1}',
      '{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":0,"output_tokens":40,"output_tokens_details":{"thinking_tokens":25}}',
      {
        input_tokens: 40,
        cached_input_tokens: 0,
        cache_write_input_tokens: 30,
        cache_write_5m_input_tokens: 10,
        cache_write_1h_input_tokens: 20,
        output_tokens: 40,
        reasoning_tokens: 25,
      },
    ],
    [
      'a message_delta with a cumulative split: its totals overwrite those of message_start',
      '{"input_tokens":10,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":1}',
      '{"cache_creation_input_tokens":36,"cache_creation":{"ephemeral_5m_input_tokens":36,"ephemeral_1h_input_tokens":0},"output_tokens":40}',
      { input_tokens: 46, cache_write_input_tokens: 36, cache_write_5m_input_tokens: 36, cache_write_1h_input_tokens: 0, output_tokens: 40 },
    ],
    [
      'a message_delta naming one duration: it overwrites that one, the other stays as message_start said',
      '{"input_tokens":10,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":1}',
      '{"cache_creation_input_tokens":36,"cache_creation":{"ephemeral_1h_input_tokens":26,"ephemeral_5m_input_tokens":null},"output_tokens":40}',
      { input_tokens: 46, cache_write_input_tokens: 36, cache_write_5m_input_tokens: 10, cache_write_1h_input_tokens: 26, output_tokens: 40 },
    ],
  ])('messages stream, %s: the same figures', (_case, startUsage, deltaUsage, figures) => {
    const events = messagesStream(startUsage, deltaUsage);

    expect(nativeStream('messages', events)).toStrictEqual(figures);
    expect(translatedStream('responses', 'messages', events)).toStrictEqual(figures);
  });

  it('reads usage the way the per-protocol functions do', () => {
    expect(chatUsageFigures(JSON.parse(CHAT_CASES[0][1]))).toStrictEqual(CHAT_CASES[0][2]);
    expect(responsesUsageFigures(JSON.parse(RESPONSES_CASES[0][1]))).toStrictEqual(RESPONSES_CASES[0][2]);
    expect(messagesUsageFigures(JSON.parse(MESSAGES_CASES[0][1]))).toStrictEqual(MESSAGES_CASES[0][2]);
  });
});
