import Anthropic from '@anthropic-ai/sdk';
import type { Usage } from '@anthropic-ai/sdk/resources/messages';
import OpenAI from 'openai';
import type { CompletionUsage } from 'openai/resources/completions';
import { GatewayHarness } from './support/gateway-harness';
import { recordingClients, tokenCost } from './support/billing-kit';
import { httpCall } from './support/admin-kit';
import { KEYS } from './support/test-config';
import { decodeMessagesTurn } from './simulator/messages-route';
import { planReply, type ReplyUsage } from './simulator/scripted-model';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * Long-context prices (`price_tiers[].input_tokens_above`), through the official SDKs against
 * the real app: a call whose `input_tokens` figure (the whole prompt, cache reads and writes
 * included) is above the threshold is billed at the tier's prices for the whole call, output
 * included, natively, streamed and translated; a call at or below it at the model's prices. The
 * threshold is changed through the admin API around a call's exact figure, and refused where it
 * cannot apply.
 */

const OWNER = 'team-long';

/** The tiers' threshold: the simulator counts a quarter of the prompt JSON's bytes as input tokens. */
const THRESHOLD = 300;

/** Asks the simulator for cache reads (half the input) and cache writes (a quarter each for 5 minutes and for an hour). */
const CACHE_MARKERS = 'cache-me, cache-write-5m and cache-write-1h:';

/** Some 1,800 bytes of words: with it a prompt is well above THRESHOLD tokens, without it well below. */
const FILLER = 'a long shared prefix of many plain words '.repeat(45).trim();

const SHORT_CACHED_PROMPT = `${CACHE_MARKERS} a short question`;
const LONG_CACHED_PROMPT = `${CACHE_MARKERS} ${FILLER}`;
const LONG_PLAIN_PROMPT = `No markers here: ${FILLER}`;

interface MessagesPrices {
  input: bigint;
  cached: bigint;
  write5m: bigint;
  write1h: bigint;
  output: bigint;
}

interface ChatPrices {
  input: bigint;
  cached: bigint;
  output: bigint;
}

/** The YAML's prices of `long-messages` in nano-units per 1M tokens: its own, and its tier's. */
const MESSAGES_BASE: MessagesPrices = {
  input: 3_000_000_000n,
  cached: 300_000_000n,
  write5m: 3_750_000_000n,
  write1h: 6_000_000_000n,
  output: 15_000_000_000n,
};
const MESSAGES_TIER: MessagesPrices = {
  input: 6_000_000_000n,
  cached: 700_000_000n,
  write5m: 7_500_000_000n,
  write1h: 12_000_000_000n,
  output: 22_500_000_000n,
};

/**
 * `long-chat`'s prices: its tier names input_tokens and output_tokens only, so cache reads keep
 * the model's own cached-input price above the threshold.
 */
const CHAT_BASE: ChatPrices = { input: 2_000_000_000n, cached: 1_000_000_000n, output: 8_000_000_000n };
const CHAT_TIER: ChatPrices = { input: 4_000_000_000n, cached: 1_000_000_000n, output: 12_000_000_000n };

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: long-messages
    upstream_model: vendor-messages-long
    interfaces: [messages]
    lines: [line-a]
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_5m_input_tokens: 3.75, cache_write_1h_input_tokens: 6, output_tokens: 15 }
    price_tiers:
      - input_tokens_above: ${THRESHOLD}
        prices: { input_tokens: 6, cached_input_tokens: 0.7, cache_write_5m_input_tokens: 7.5, cache_write_1h_input_tokens: 12, output_tokens: 22.5 }
  - id: long-chat
    upstream_model: vendor-chat-long
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2, cached_input_tokens: 1, output_tokens: 8 }
    price_tiers:
      - input_tokens_above: ${THRESHOLD}
        prices: { input_tokens: 4, output_tokens: 12 }
  - id: boundary-chat
    upstream_model: vendor-chat-boundary
    interfaces: [chat_completions]
    lines: [line-a]
    prices: { input_tokens: 2, cached_input_tokens: 1, output_tokens: 8 }
    price_tiers:
      - input_tokens_above: ${THRESHOLD}
        prices: { input_tokens: 4, output_tokens: 12 }
owners:
  - id: ${OWNER}
    kind: project
    budget: 100
keys:
  - key: ${KEYS.all}
    owner: ${OWNER}
    models: ["*"]
`;
}

/** What a messages usage should cost, read from the wire: its `input_tokens` is the uncached input only. */
function messagesCost(usage: Usage, prices: MessagesPrices): bigint {
  return tokenCost([
    [usage.input_tokens, prices.input],
    [usage.cache_read_input_tokens ?? 0, prices.cached],
    [usage.cache_creation?.ephemeral_5m_input_tokens ?? 0, prices.write5m],
    [usage.cache_creation?.ephemeral_1h_input_tokens ?? 0, prices.write1h],
    [usage.output_tokens, prices.output],
  ]);
}

/** The whole prompt of a messages usage: what the gateway records as `input_tokens` and compares with the threshold. */
function wholePrompt(usage: Usage): number {
  return usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
}

/** What a chat usage should cost: `prompt_tokens` holds the cached ones. */
function chatCost(usage: CompletionUsage, prices: ChatPrices): bigint {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return tokenCost([
    [usage.prompt_tokens - cached, prices.input],
    [cached, prices.cached],
    [usage.completion_tokens, prices.output],
  ]);
}

/** What the simulated messages upstream reported for a request it got (its rules are deterministic). */
function upstreamUsage(request: RecordedRequest): ReplyUsage {
  return planReply(decodeMessagesTurn(request.json as Record<string, unknown>, request.body.toString('utf8'))).usage;
}

describe('long-context prices (price_tiers[].input_tokens_above)', () => {
  let gateway: GatewayHarness;
  let anthropic: Anthropic;
  let openai: OpenAI;
  /** X-Request-Id of every answer the SDKs received, streams included. */
  let requestIds: string[];

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml });
    ({ anthropic, openai, requestIds } = recordingClients(gateway.url, KEYS.all));
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
    requestIds.length = 0;
  });

  async function recordOf(requestId: string) {
    const record = await gateway.usageRecord(requestId);
    expect(record).not.toBeNull();
    return record!;
  }

  const admin = (method: Parameters<typeof httpCall>[1], path: string, body?: unknown) => httpCall(gateway.url, method, path, body);

  const ask = (content: string): Anthropic.MessageCreateParamsNonStreaming => ({
    model: 'long-messages',
    max_tokens: 4096,
    messages: [{ role: 'user', content }],
  });

  const chat = (model: string, content: string) => ({ model, messages: [{ role: 'user' as const, content }] });

  describe('native messages calls (@anthropic-ai/sdk)', () => {
    it('bills a short prompt at the model prices and a long one at the tier prices for every figure, cache reads, cache writes and output included', async () => {
      const short = await anthropic.messages.create(ask(SHORT_CACHED_PROMPT));
      const long = await anthropic.messages.create(ask(LONG_CACHED_PROMPT));
      const plain = await anthropic.messages.create(ask(LONG_PLAIN_PROMPT));
      const [shortRecord, longRecord, plainRecord] = await Promise.all(requestIds.map(recordOf));

      expect(wholePrompt(short.usage)).toBeLessThanOrEqual(THRESHOLD);
      expect(wholePrompt(long.usage)).toBeGreaterThan(THRESHOLD);
      expect(wholePrompt(plain.usage)).toBeGreaterThan(THRESHOLD);
      // The long call's uncached input alone is below the threshold: the whole prompt is what counts.
      expect(long.usage.input_tokens).toBeLessThanOrEqual(THRESHOLD);
      expect(long.usage.cache_read_input_tokens).toBeGreaterThan(0);
      expect(long.usage.cache_creation!.ephemeral_5m_input_tokens).toBeGreaterThan(0);
      expect(long.usage.cache_creation!.ephemeral_1h_input_tokens).toBeGreaterThan(0);
      expect(plain.usage.cache_read_input_tokens).toBe(0);
      expect(plain.usage.cache_creation_input_tokens).toBe(0);

      expect(shortRecord).toMatchObject({ model: 'long-messages', interface: 'messages', translatedTo: null, status: 200, stream: false });
      expect(shortRecord.usage).toMatchObject({ input_tokens: wholePrompt(short.usage), output_tokens: short.usage.output_tokens });
      expect(shortRecord.costNano).toBe(messagesCost(short.usage, MESSAGES_BASE));
      expect(shortRecord.costNano).not.toBe(messagesCost(short.usage, MESSAGES_TIER));

      expect(longRecord.usage).toEqual({
        input_tokens: wholePrompt(long.usage),
        cached_input_tokens: long.usage.cache_read_input_tokens,
        cache_write_input_tokens: long.usage.cache_creation_input_tokens,
        cache_write_5m_input_tokens: long.usage.cache_creation!.ephemeral_5m_input_tokens,
        cache_write_1h_input_tokens: long.usage.cache_creation!.ephemeral_1h_input_tokens,
        output_tokens: long.usage.output_tokens,
      });
      expect(longRecord.costNano).toBe(messagesCost(long.usage, MESSAGES_TIER));
      expect(longRecord.costNano).not.toBe(messagesCost(long.usage, MESSAGES_BASE));
      // Output at the tier's price too, not only the input figures.
      expect(longRecord.costNano).not.toBe(messagesCost(long.usage, { ...MESSAGES_TIER, output: MESSAGES_BASE.output }));

      expect(plainRecord.usage).toMatchObject({ input_tokens: plain.usage.input_tokens, output_tokens: plain.usage.output_tokens });
      expect(plainRecord.costNano).toBe(messagesCost(plain.usage, MESSAGES_TIER));
      expect(plainRecord.costNano).not.toBe(messagesCost(plain.usage, { ...MESSAGES_TIER, input: MESSAGES_BASE.input }));
    });

    it('bills the long prompt streamed at the tier prices, the same figures and cost as JSON', async () => {
      const json = await anthropic.messages.create(ask(LONG_CACHED_PROMPT));
      const streamed = await anthropic.messages.stream(ask(LONG_CACHED_PROMPT)).finalMessage();
      const [jsonRecord, streamRecord] = await Promise.all(requestIds.map(recordOf));

      expect(streamed.usage.cache_creation).toEqual(json.usage.cache_creation);
      expect(wholePrompt(streamed.usage)).toBeGreaterThan(THRESHOLD);
      expect(streamRecord).toMatchObject({ model: 'long-messages', interface: 'messages', stream: true, status: 200 });
      expect(streamRecord.usage).toEqual(jsonRecord.usage);
      expect(streamRecord.costNano).toBe(messagesCost(streamed.usage, MESSAGES_TIER));
      expect(streamRecord.costNano).toBe(jsonRecord.costNano);
      expect(streamRecord.costNano).not.toBe(messagesCost(streamed.usage, MESSAGES_BASE));
    });
  });

  describe('chat_completions calls (openai SDK)', () => {
    it('bills JSON and streamed calls below the threshold at the model prices and above it at the tier prices, keeping unnamed prices', async () => {
      const usages: CompletionUsage[] = [];
      for (const content of [`cache-me: a short question`, `cache-me: ${FILLER}`]) {
        const json = await openai.chat.completions.create(chat('long-chat', content));
        usages.push(json.usage!);
        const stream = await openai.chat.completions.create({ ...chat('long-chat', content), stream: true, stream_options: { include_usage: true } });
        let streamedUsage: CompletionUsage | null | undefined;
        for await (const chunk of stream) streamedUsage = chunk.usage ?? streamedUsage;
        expect(streamedUsage).toEqual(json.usage);
        usages.push(streamedUsage!);
      }
      const records = await Promise.all(requestIds.map(recordOf));

      expect(records.map((record) => record.stream)).toEqual([false, true, false, true]);
      records.forEach((record, index) => {
        expect(record).toMatchObject({ model: 'long-chat', interface: 'chat_completions', status: 200 });
        expect(record.usage).toMatchObject({
          input_tokens: usages[index].prompt_tokens,
          cached_input_tokens: usages[index].prompt_tokens_details!.cached_tokens,
          output_tokens: usages[index].completion_tokens,
        });
      });
      const [shortJson, shortStream, longJson, longStream] = records;
      expect(usages[0].prompt_tokens).toBeLessThanOrEqual(THRESHOLD);
      expect(usages[2].prompt_tokens).toBeGreaterThan(THRESHOLD);
      expect(usages[2].prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);

      expect(shortJson.costNano).toBe(chatCost(usages[0], CHAT_BASE));
      expect(shortJson.costNano).not.toBe(chatCost(usages[0], CHAT_TIER));
      expect(shortStream.costNano).toBe(shortJson.costNano);

      expect(longJson.costNano).toBe(chatCost(usages[2], CHAT_TIER));
      expect(longJson.costNano).not.toBe(chatCost(usages[2], CHAT_BASE));
      // The tier names no cached-input price: cache reads stay at the model's, not the tier's input price.
      expect(longJson.costNano).not.toBe(chatCost(usages[2], { ...CHAT_TIER, cached: CHAT_TIER.input }));
      expect(longStream.costNano).toBe(longJson.costNano);
    });
  });

  describe('translated calls', () => {
    it('bills a long responses call (openai SDK) on a messages-only model at the tier prices, JSON and streamed', async () => {
      const request = { model: 'long-messages', input: LONG_CACHED_PROMPT };
      const response = await openai.responses.create(request);
      const upstream = upstreamUsage(gateway.simulator.requests[0]);
      expect(upstream.inputTokens).toBeGreaterThan(THRESHOLD);
      expect(upstream.cachedTokens).toBeGreaterThan(0);
      expect(upstream.cacheWrite5mTokens).toBeGreaterThan(0);
      expect(upstream.cacheWrite1hTokens).toBeGreaterThan(0);
      expect(response.usage).toMatchObject({
        input_tokens: upstream.inputTokens,
        input_tokens_details: { cached_tokens: upstream.cachedTokens },
        output_tokens: upstream.outputTokens,
      });

      const record = await recordOf(requestIds[0]);

      expect(record).toMatchObject({ model: 'long-messages', interface: 'responses', translatedTo: 'messages', status: 200, stream: false });
      expect(record.usage).toMatchObject({ input_tokens: response.usage!.input_tokens, output_tokens: response.usage!.output_tokens });
      const cost = (prices: MessagesPrices) =>
        tokenCost([
          [upstream.inputTokens - upstream.cachedTokens - upstream.cacheWrite5mTokens - upstream.cacheWrite1hTokens, prices.input],
          [upstream.cachedTokens, prices.cached],
          [upstream.cacheWrite5mTokens, prices.write5m],
          [upstream.cacheWrite1hTokens, prices.write1h],
          [upstream.outputTokens, prices.output],
        ]);
      expect(record.costNano).toBe(cost(MESSAGES_TIER));
      expect(record.costNano).not.toBe(cost(MESSAGES_BASE));

      await openai.responses.stream(request).finalResponse();
      const streamRecord = await recordOf(requestIds[1]);
      expect(streamRecord).toMatchObject({ interface: 'responses', translatedTo: 'messages', stream: true });
      expect(streamRecord.usage).toEqual(record.usage);
      expect(streamRecord.costNano).toBe(record.costNano);
    });
  });

  describe('the threshold through the admin API', () => {
    it('shows the tier in the JSON form, bills a prompt exactly at the threshold at the model prices and one token over it at the tier prices', async () => {
      const shown = await admin('GET', '/admin/models/long-messages');
      expect(shown.status).toBe(200);
      expect(shown.body.price_tiers).toEqual([
        {
          input_tokens_above: THRESHOLD,
          prices: {
            input_tokens: '6',
            cached_input_tokens: '0.7',
            cache_write_5m_input_tokens: '7.5',
            cache_write_1h_input_tokens: '12',
            output_tokens: '22.5',
          },
        },
      ]);

      const body = chat('boundary-chat', 'cache-me: the same words every time');
      const first = await openai.chat.completions.create(body);
      const firstRecord = await recordOf(requestIds[0]);
      const tokens = firstRecord.usage!.input_tokens!;
      expect(tokens).toBe(first.usage!.prompt_tokens);
      expect(tokens).toBeLessThanOrEqual(THRESHOLD);
      expect(first.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
      expect(firstRecord.costNano).toBe(chatCost(first.usage!, CHAT_BASE));

      const setThreshold = async (above: number) => {
        const read = await admin('GET', '/admin/models/boundary-chat');
        const patched = await admin('PATCH', '/admin/models/boundary-chat', {
          price_tiers: [{ input_tokens_above: above, prices: { input_tokens: 4, output_tokens: 12 } }],
          version: read.body.version,
        });
        expect(patched.status).toBe(200);
        expect(patched.body.price_tiers).toEqual([{ input_tokens_above: above, prices: { input_tokens: '4', output_tokens: '12' } }]);
      };

      await setThreshold(tokens);
      const atThreshold = await openai.chat.completions.create(body);
      await setThreshold(tokens - 1);
      const overThreshold = await openai.chat.completions.create(body);
      const [atRecord, overRecord] = await Promise.all(requestIds.slice(1).map(recordOf));

      expect(atThreshold.usage).toEqual(first.usage);
      expect(overThreshold.usage).toEqual(first.usage);
      expect(atRecord.usage).toEqual(firstRecord.usage);
      expect(overRecord.usage).toEqual(firstRecord.usage);
      expect(atRecord.costNano).toBe(chatCost(first.usage!, CHAT_BASE));
      expect(overRecord.costNano).toBe(chatCost(first.usage!, CHAT_TIER));
      expect(overRecord.costNano).not.toBe(atRecord.costNano);
    });

    it.each([
      [
        'input_tokens_above on a video model',
        {
          id: 'bad-video-model',
          upstream_model: 'vendor-video-c-2',
          interfaces: ['video_c'],
          lines: ['line-a'],
          prices: { output_seconds: 0.05 },
          price_tiers: [{ input_tokens_above: THRESHOLD, prices: { output_seconds: 0.1 } }],
        },
        "price_tiers[0].input_tokens_above: the model's interfaces (video_c) do not meter input_tokens",
      ],
      [
        'input_tokens_above: 0',
        {
          id: 'bad-zero-model',
          upstream_model: 'vendor-chat-long',
          interfaces: ['chat_completions'],
          lines: ['line-a'],
          prices: { input_tokens: 2, output_tokens: 8 },
          price_tiers: [{ input_tokens_above: 0, prices: { input_tokens: 4 } }],
        },
        'price_tiers[0].input_tokens_above: must be a positive integer',
      ],
    ])('refuses a model with %s with 400 naming the field', async (_label, body, message) => {
      const refused = await admin('POST', '/admin/models', body);

      expect(refused.status).toBe(400);
      // The message starts with the field's path within the item.
      expect(refused.body.error.message.slice(0, message.length)).toBe(message);
      expect((await admin('GET', `/admin/models/${body.id}`)).status).toBe(404);
    });
  });
});
