import { modelSpecOf, pricingOf, pricingSpecOf, upstreamSpecOf } from './catalog-spec';
import { loadGatewayConfig, parseModelItem, parseUpstreamItem } from './config.loader';

const FILE = `
upstreams:
  - id: line-a
    base_url: https://vendor.example/
    api_key: sk-file
    auth: x-api-key
    max_concurrency: 4
  - id: line-b
    base_url: http://127.0.0.1:9100
    api_key: sk-other
models:
  - id: video-model
    upstream_model: vendor-video-1
    interfaces: [video_c]
    lines: [line-a, line-b]
    prices: { output_seconds: 0.1 }
    price_tiers:
      - resolution: [1080P, 720p]
        video_input: true
        prices: { output_seconds: "0.000000001" }
  - id: chat-model
    upstream_model: vendor-chat
    interfaces: [chat_completions, responses]
    lines: [line-b]
    capabilities: { image_input: true }
    max_tokens: 4096
    prices: { input_tokens: 2.5, output_tokens: 10 }
    price_tiers:
      - input_tokens_above: 200000
        prices: { input_tokens: 5, output_tokens: 15 }
  - id: weighted-model
    upstream_model: vendor-chat
    interfaces: [messages]
    lines: [{ id: line-a, weight: 3 }, { id: line-b, weight: 0, upstream_model: vendor-chat-b }]
    retry: { attempts: 2, backoff_ms: 100 }
`;

describe('the JSON form of catalog items', () => {
  const config = loadGatewayConfig(FILE, {});
  const lineIds = new Set(config.upstreams.map((upstream) => upstream.id));

  it.each(config.models.map((model) => [model.id, model] as const))('reads model %s back to the same configuration', (_id, model) => {
    const spec = modelSpecOf(model);

    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
    expect(parseModelItem(spec, lineIds)).toEqual({ ok: model });
  });

  it.each(config.upstreams.map((upstream) => [upstream.id, upstream] as const))(
    'reads line %s back to the same configuration, its key kept apart',
    (_id, upstream) => {
      const spec = upstreamSpecOf(upstream);

      expect(spec).not.toHaveProperty('api_key');
      expect(parseUpstreamItem({ ...spec, api_key: upstream.apiKey })).toEqual({ ok: upstream });
    },
  );

  it.each(config.models.map((model) => [model.id, model] as const))("keeps model %s's prices and tiers apart and reads them back exactly", (_id, model) => {
    const spec = JSON.parse(JSON.stringify(pricingSpecOf(model)));

    expect(pricingOf(spec)).toEqual({ prices: model.prices, priceTiers: model.priceTiers });
  });

  it('writes prices as exact decimal strings and fills in the defaults', () => {
    expect(modelSpecOf(config.models[0])).toMatchObject({
      capabilities: { image_input: false },
      prices: { output_seconds: '0.1' },
      price_tiers: [{ resolution: ['1080p', '720p'], video_input: true, prices: { output_seconds: '0.000000001' } }],
    });
    expect(modelSpecOf(config.models[1])).toMatchObject({ price_tiers: [{ input_tokens_above: 200000, prices: { input_tokens: '5', output_tokens: '15' } }] });
    expect(upstreamSpecOf(config.upstreams[1])).toEqual({ id: 'line-b', base_url: 'http://127.0.0.1:9100', timeout_ms: 600000 });
  });

  it('writes plain lines as ids, weighted or renamed lines as items, and only the retry fields set', () => {
    expect(modelSpecOf(config.models[1])).toMatchObject({ lines: ['line-b'] });
    expect(modelSpecOf(config.models[1])).not.toHaveProperty('retry');
    expect(modelSpecOf(config.models[2])).toMatchObject({
      lines: [
        { id: 'line-a', weight: 3 },
        { id: 'line-b', weight: 0, upstream_model: 'vendor-chat-b' },
      ],
      retry: { attempts: 2, backoff_ms: 100 },
    });
  });

  it('names the problems of an item by their path within it', () => {
    const result = parseModelItem({ ...modelSpecOf(config.models[1]), lines: ['line-x'], prices: { input_tokens: -1 } }, lineIds);

    expect(result.problems).toEqual(['lines[0]: unknown upstream "line-x"', expect.stringMatching(/^prices\.input_tokens: /)]);
  });
});
