import Anthropic from '@anthropic-ai/sdk';
import type { Usage } from '@anthropic-ai/sdk/resources/messages';
import OpenAI from 'openai';
import { GatewayHarness } from './support/gateway-harness';
import { recordingClients, tokenCost } from './support/billing-kit';
import { KEYS } from './support/test-config';
import { decodeMessagesTurn } from './simulator/messages-route';
import { decodeResponsesTurn } from './simulator/responses-route';
import { planReply, type ReplyUsage } from './simulator/scripted-model';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * Cache writes by duration (messages `usage.cache_creation`) and reasoning tokens, through the
 * official SDKs against the real app: the usage record keeps the split beside the cache-write
 * total, each duration is billed at its own price (falling back to the cache-write price, then
 * the input price) and no input token twice, natively and on translated calls.
 */

const OWNER = 'team-cache';

/** Asks the simulator for cache reads (half the input) and cache writes (a quarter each for 5 minutes and for an hour). */
const CACHED_PROMPT = 'cache-me, cache-write-5m and cache-write-1h: a long shared prefix';

interface Prices {
  input: bigint;
  cached: bigint;
  cacheWrite: bigint;
  write5m: bigint;
  write1h: bigint;
  output: bigint;
}

/**
 * The YAML's prices in nano-units per 1M tokens, with the fallbacks worked out by hand: a model
 * without a duration's price pays the cache-write price for it, and without that the input price.
 */
const PRICES: Record<'split-priced' | 'write-priced' | 'input-priced', Prices> = {
  'split-priced': {
    input: 3_000_000_000n,
    cached: 300_000_000n,
    cacheWrite: 4_000_000_000n,
    write5m: 3_750_000_000n,
    write1h: 6_000_000_000n,
    output: 15_000_000_000n,
  },
  'write-priced': {
    input: 3_000_000_000n,
    cached: 300_000_000n,
    cacheWrite: 3_750_000_000n,
    write5m: 3_750_000_000n,
    write1h: 3_750_000_000n,
    output: 15_000_000_000n,
  },
  'input-priced': {
    input: 3_000_000_000n,
    cached: 3_000_000_000n,
    cacheWrite: 3_000_000_000n,
    write5m: 3_000_000_000n,
    write1h: 3_000_000_000n,
    output: 15_000_000_000n,
  },
};

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: split-priced
    upstream_model: vendor-messages-split
    interfaces: [messages]
    lines: [line-a]
    max_tokens: 8192
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 4, cache_write_5m_input_tokens: 3.75, cache_write_1h_input_tokens: 6, output_tokens: 15 }
  - id: write-priced
    upstream_model: vendor-messages-write
    interfaces: [messages]
    lines: [line-a]
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: input-priced
    upstream_model: vendor-messages-input
    interfaces: [messages]
    lines: [line-a]
    prices: { input_tokens: 3, output_tokens: 15 }
  - id: responses-model
    upstream_model: vendor-responses-1
    interfaces: [responses]
    lines: [line-a]
    max_tokens: 8192
    prices: { input_tokens: 2, cached_input_tokens: 1, output_tokens: 8 }
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

/**
 * What a messages usage should cost, read from the wire: uncached input, cache reads, each
 * duration at its price, whatever of the total the split leaves at the cache-write price, output.
 */
function messagesCost(usage: Usage, prices: Prices): bigint {
  const write5m = usage.cache_creation?.ephemeral_5m_input_tokens ?? 0;
  const write1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return tokenCost([
    [usage.input_tokens, prices.input],
    [usage.cache_read_input_tokens ?? 0, prices.cached],
    [Math.max((usage.cache_creation_input_tokens ?? 0) - write5m - write1h, 0), prices.cacheWrite],
    [write5m, prices.write5m],
    [write1h, prices.write1h],
    [usage.output_tokens, prices.output],
  ]);
}

/** The figures a messages usage is recorded as: the input summed, the cache-write total beside its split. */
function messagesFigures(usage: Usage): Record<string, number> {
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  return {
    input_tokens: usage.input_tokens + read + written,
    cached_input_tokens: read,
    cache_write_input_tokens: written,
    cache_write_5m_input_tokens: usage.cache_creation!.ephemeral_5m_input_tokens,
    cache_write_1h_input_tokens: usage.cache_creation!.ephemeral_1h_input_tokens,
    output_tokens: usage.output_tokens,
  };
}

/** What the simulated upstream reported for a request it got (its rules are deterministic). */
function upstreamUsage(request: RecordedRequest): ReplyUsage {
  const body = request.json as Record<string, unknown>;
  const raw = request.body.toString('utf8');
  return request.path === '/v1/messages' ? planReply(decodeMessagesTurn(body, raw)).usage : planReply(decodeResponsesTurn(body, raw)).usage;
}

describe('cache writes by duration and reasoning tokens on the usage record', () => {
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

  const ask = (model: string, extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {}): Anthropic.MessageCreateParamsNonStreaming => ({
    model,
    max_tokens: 4096,
    messages: [{ role: 'user', content: CACHED_PROMPT }],
    ...extra,
  });

  describe('native messages calls (@anthropic-ai/sdk)', () => {
    it('records the 5-minute and 1-hour cache writes beside their total and bills each at its own price, no token twice', async () => {
      const message = await anthropic.messages.create(ask('split-priced'));
      const usage = message.usage;
      expect(usage.cache_creation!.ephemeral_5m_input_tokens).toBeGreaterThan(0);
      expect(usage.cache_creation!.ephemeral_1h_input_tokens).toBeGreaterThan(0);
      expect(usage.cache_creation_input_tokens).toBe(usage.cache_creation!.ephemeral_5m_input_tokens + usage.cache_creation!.ephemeral_1h_input_tokens);

      const record = await recordOf(requestIds[0]);

      expect(record).toMatchObject({ model: 'split-priced', interface: 'messages', translatedTo: null, status: 200, stream: false });
      expect(record.usage).toEqual(messagesFigures(usage));
      expect(record.costNano).toBe(messagesCost(usage, PRICES['split-priced']));
      // The split replaced the cache-write price for its tokens rather than adding to it.
      expect(record.costNano).not.toBe(messagesCost({ ...usage, cache_creation: null }, PRICES['split-priced']));
    });

    it('bills a stream with thinking from message_start and the cumulative message_delta: the same figures and cost as JSON, reasoning kept', async () => {
      const params = ask('split-priced', { thinking: { type: 'enabled', budget_tokens: 2048 } });
      const json = await anthropic.messages.create(params);
      const streamed = await anthropic.messages.stream(params).finalMessage();
      const [jsonId, streamId] = requestIds;

      const jsonRecord = await recordOf(jsonId);
      const streamRecord = await recordOf(streamId);

      const thinking = streamed.usage.output_tokens_details!.thinking_tokens;
      expect(thinking).toBeGreaterThan(0);
      expect(streamed.usage.cache_creation).toEqual(json.usage.cache_creation);
      expect(streamRecord).toMatchObject({ interface: 'messages', stream: true, status: 200 });
      expect(streamRecord.usage).toEqual({ ...messagesFigures(streamed.usage), reasoning_tokens: thinking });
      expect(streamRecord.usage).toEqual(jsonRecord.usage);
      expect(streamRecord.costNano).toBe(messagesCost(streamed.usage, PRICES['split-priced']));
      expect(streamRecord.costNano).toBe(jsonRecord.costNano);
    });

    it.each([
      ['write-priced', 'the cache-write price'],
      ['input-priced', 'the input price'],
    ] as const)('bills both durations of %s, which prices neither, at %s', async (model, _price) => {
      const message = await anthropic.messages.create(ask(model));

      const record = await recordOf(requestIds[0]);

      expect(record.usage).toEqual(messagesFigures(message.usage));
      expect(record.costNano).toBe(messagesCost(message.usage, PRICES[model]));
    });
  });

  describe('translated calls', () => {
    it('keeps the split and the reasoning tokens of a messages upstream on the record of a responses call (openai SDK)', async () => {
      const request = { model: 'split-priced', input: CACHED_PROMPT, reasoning: { effort: 'low' as const } };
      const response = await openai.responses.create(request);
      const upstream = upstreamUsage(gateway.simulator.requests[0]);
      const written = upstream.cacheWrite5mTokens + upstream.cacheWrite1hTokens;
      expect(upstream.cacheWrite5mTokens).toBeGreaterThan(0);
      expect(upstream.reasoningTokens).toBeGreaterThan(0);

      const record = await recordOf(requestIds[0]);

      expect(record).toMatchObject({ model: 'split-priced', interface: 'responses', translatedTo: 'messages', status: 200 });
      expect(record.usage).toEqual({
        input_tokens: upstream.inputTokens,
        cached_input_tokens: upstream.cachedTokens,
        cache_write_input_tokens: written,
        cache_write_5m_input_tokens: upstream.cacheWrite5mTokens,
        cache_write_1h_input_tokens: upstream.cacheWrite1hTokens,
        output_tokens: upstream.outputTokens,
        reasoning_tokens: upstream.reasoningTokens,
      });
      const prices = PRICES['split-priced'];
      expect(record.costNano).toBe(
        tokenCost([
          [upstream.inputTokens - upstream.cachedTokens - written, prices.input],
          [upstream.cachedTokens, prices.cached],
          [upstream.cacheWrite5mTokens, prices.write5m],
          [upstream.cacheWrite1hTokens, prices.write1h],
          [upstream.outputTokens, prices.output],
        ]),
      );
      expect(response.usage).toMatchObject({
        input_tokens: upstream.inputTokens,
        input_tokens_details: { cached_tokens: upstream.cachedTokens },
        output_tokens: upstream.outputTokens,
        output_tokens_details: { reasoning_tokens: upstream.reasoningTokens },
      });

      await openai.responses.stream(request).finalResponse();
      const streamRecord = await recordOf(requestIds[1]);
      expect(streamRecord).toMatchObject({ interface: 'responses', translatedTo: 'messages', stream: true });
      expect(streamRecord.usage).toEqual(record.usage);
      expect(streamRecord.costNano).toBe(record.costNano);
    });

    it('keeps the cached and reasoning tokens of a responses upstream on the record of a messages call, with no cache writes', async () => {
      const params = ask('responses-model', { thinking: { type: 'enabled', budget_tokens: 2048 } });
      await anthropic.messages.create(params);
      await anthropic.messages.stream(params).finalMessage();
      const upstream = upstreamUsage(gateway.simulator.requests[0]);
      expect(upstream.cachedTokens).toBeGreaterThan(0);
      expect(upstream.reasoningTokens).toBeGreaterThan(0);

      const [jsonRecord, streamRecord] = await Promise.all(requestIds.map(recordOf));

      const figures = {
        input_tokens: upstream.inputTokens,
        cached_input_tokens: upstream.cachedTokens,
        output_tokens: upstream.outputTokens,
        reasoning_tokens: upstream.reasoningTokens,
      };
      expect(jsonRecord).toMatchObject({ interface: 'messages', translatedTo: 'responses', stream: false, usage: figures });
      expect(streamRecord).toMatchObject({ interface: 'messages', translatedTo: 'responses', stream: true, usage: figures });
      expect(jsonRecord.usage).toEqual(figures);
      expect(streamRecord.usage).toEqual(figures);
    });
  });
});
