import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadGatewayConfig, loadGatewayConfigFile } from './config.loader';

/** DESIGN.md section 3, verbatim. */
const DESIGN_EXAMPLE = `
upstreams:                      # "lines": where requests go
  - id: line-a
    base_url: http://127.0.0.1:9100     # provider root, no trailing path
    api_key: \${LINE_A_KEY}
    auth: bearer                 # bearer | x-api-key | x-alt-api-key; default by interface (below)
    max_concurrency: 256         # optional: in-flight requests on this line; full on every line -> 429
    timeout_ms: 600000           # optional: no response headers in time -> 504
models:
  - id: text-model-1             # the id clients use (GET /v1/models \`id\`)
    upstream_model: vendor-text-model-1-2025-01
    interfaces: [chat_completions, responses]   # native interfaces this model offers
    lines: [line-a, line-b]      # tried in order; failover before the first response byte
    capabilities: { image_input: true }
    max_tokens: 16384
    prices: { input_tokens: 2.5, output_tokens: 10 }   # currency units per 1M tokens
owners:                          # quota owners
  - id: team-a
    kind: project                # project | member
    budget: 100                  # currency units; absent = unlimited
keys:
  - key: gk-team-a-0001          # plaintext (stored only as its SHA-256), or key_sha256: <hex>
    owner: team-a
    models: ["*"]                # scope: model ids, or "*"
    enabled: true
    expires_at: 2027-01-01T00:00:00Z   # optional
`;

/** The example names `line-b` without defining it; this adds that line. */
const DESIGN_EXAMPLE_WITH_LINE_B = DESIGN_EXAMPLE.replace(
  'models:',
  ['  - id: line-b', '    base_url: https://backup.example.com/', '    api_key: b-key', 'models:'].join('\n'),
);

const ENV = { LINE_A_KEY: 'vendor-secret' };
const HASH = 'ab'.repeat(32);

const MINIMAL = `
upstreams:
  - { id: line-a, base_url: "http://127.0.0.1:9100", api_key: k }
models:
  - { id: model-a, upstream_model: up-a, interfaces: [chat_completions], lines: [line-a] }
owners:
  - { id: team-a, kind: project }
keys:
  - { key: gk-0001, owner: team-a, models: ["*"] }
`;

function problemsOf(yamlText: string, env: NodeJS.ProcessEnv = ENV): string[] {
  try {
    loadGatewayConfig(yamlText, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** MINIMAL with one more section appended or one line replaced. */
function minimalWith(search: string, replacement: string): string {
  if (!MINIMAL.includes(search)) throw new Error(`MINIMAL does not contain ${search}`);
  return MINIMAL.replace(search, replacement);
}

describe(loadGatewayConfig.name, () => {
  it('loads the DESIGN.md example once its second line is defined', () => {
    const config = loadGatewayConfig(DESIGN_EXAMPLE_WITH_LINE_B, ENV);

    expect(config.upstreams).toEqual([
      { id: 'line-a', baseUrl: 'http://127.0.0.1:9100', apiKey: 'vendor-secret', auth: 'bearer', maxConcurrency: 256, timeoutMs: 600000 },
      { id: 'line-b', baseUrl: 'https://backup.example.com', apiKey: 'b-key', timeoutMs: 600000 },
    ]);
    expect(config.models).toEqual([
      {
        id: 'text-model-1',
        upstreamModel: 'vendor-text-model-1-2025-01',
        interfaces: ['chat_completions', 'responses'],
        lines: ['line-a', 'line-b'],
        capabilities: { imageInput: true },
        maxTokens: 16384,
        prices: { input_tokens: 2_500_000_000n, output_tokens: 10_000_000_000n },
        priceTiers: [],
      },
    ]);
    expect(config.owners).toEqual([
      { id: 'team-a', kind: 'project', budgetNano: 100_000_000_000n, limits: null, terms: { period: null, timezone: null, alerts: [] } },
    ]);
    expect(config.keys).toEqual([
      {
        keySha256: createHash('sha256').update('gk-team-a-0001').digest('hex'),
        displayPrefix: 'gk-team-',
        owner: 'team-a',
        models: ['*'],
        enabled: true,
        expiresAt: new Date('2027-01-01T00:00:00Z'),
        limits: null,
      },
    ]);
  });

  it('reports the undefined line-b of the verbatim DESIGN.md example and nothing else', () => {
    expect(problemsOf(DESIGN_EXAMPLE)).toEqual(['models[0].lines[1]: unknown upstream "line-b"']);
  });

  it('fills the defaults of optional fields', () => {
    const config = loadGatewayConfig(MINIMAL, {});

    expect(config.upstreams[0].timeoutMs).toBe(600_000);
    expect(config.upstreams[0].auth).toBeUndefined();
    expect(config.models[0].capabilities).toEqual({ imageInput: false });
    expect(config.models[0].prices).toEqual({});
    expect(config.models[0].priceTiers).toEqual([]);
    expect(config.owners[0].budgetNano).toBeUndefined();
    expect(config.keys[0].enabled).toBe(true);
    expect(config.keys[0].expiresAt).toBeUndefined();
  });

  it('treats absent sections and an empty file as empty lists', () => {
    const empty = { upstreams: [], models: [], owners: [], keys: [] };
    expect(loadGatewayConfig('', {})).toEqual(empty);
    expect(loadGatewayConfig('upstreams: []\nmodels:\n', {})).toEqual(empty);
  });

  it('replaces an environment variable in the middle of a string', () => {
    const config = loadGatewayConfig(minimalWith('api_key: k', 'api_key: "pre-${PART}-post"'), { PART: 'middle' });
    expect(config.upstreams[0].apiKey).toBe('pre-middle-post');
  });

  it('does not read a substituted value as YAML', () => {
    const config = loadGatewayConfig(minimalWith('api_key: k', 'api_key: "${KEY}"'), { KEY: '[1, 2]' });
    expect(config.upstreams[0].apiKey).toBe('[1, 2]');
  });

  it('names the YAML path of a missing environment variable', () => {
    expect(problemsOf(DESIGN_EXAMPLE_WITH_LINE_B, {})).toEqual(['upstreams[0].api_key: environment variable LINE_A_KEY is not set']);
  });

  it('keeps only the plaintext key hash and a display prefix, or a hash prefix when only the hash is given', () => {
    const config = loadGatewayConfig(minimalWith('key: gk-0001', `key_sha256: ${HASH.toUpperCase()}`), {});
    expect(config.keys[0]).toMatchObject({ keySha256: HASH, displayPrefix: 'sha256:abababab' });
  });

  it('reads the rate limits of owners and keys, leaving out the ones not given', () => {
    const config = loadGatewayConfig(
      minimalWith('kind: project', 'kind: project, limits: { requests_per_minute: 600, tokens_per_minute: 200000, concurrent_requests: 20 }').replace(
        'models: ["*"]',
        'models: ["*"], limits: { requests_per_minute: 60, concurrent_requests: null }',
      ),
      {},
    );

    expect(config.owners[0].limits).toEqual({ requests_per_minute: 600, tokens_per_minute: 200000, concurrent_requests: 20 });
    expect(config.keys[0].limits).toEqual({ requests_per_minute: 60, tokens_per_minute: null, concurrent_requests: null });
  });

  it('reads budget periods, time zones, alerts and key budgets', () => {
    const config = loadGatewayConfig(
      minimalWith('kind: project', 'kind: project, budget: 100, budget_period: month, budget_timezone: Europe/Berlin, alerts: [100, 50, 80, 50]').replace(
        'models: ["*"]',
        'models: ["*"], budget: 12.5',
      ),
      {},
    );

    expect(config.owners[0].terms).toEqual({ period: 'month', timezone: 'Europe/Berlin', alerts: [50, 80, 100] });
    expect(config.keys[0].budgetNano).toBe(12_500_000_000n);
  });

  it('reports a YAML syntax error with its line', () => {
    expect(problemsOf('upstreams:\n  - id: a\n    id: b\n')).toEqual(['line 3, column 5: Map keys must be unique']);
  });

  it.each([
    ['upstreams', '  - { id: line-a, base_url: "http://127.0.0.1:9100", api_key: k }', 'upstreams[1]'],
    ['models', '  - { id: model-a, upstream_model: up-a, interfaces: [chat_completions], lines: [line-a] }', 'models[1]'],
    ['owners', '  - { id: team-a, kind: project }', 'owners[1]'],
    ['keys', '  - { key: gk-0001, owner: team-a, models: ["*"] }', 'keys[1]'],
  ])('rejects a list nested directly in %s, empty or not', (_section, entry, path) => {
    expect(problemsOf(minimalWith(entry, `${entry}\n  - []`))).toEqual([`${path}: must be a mapping`]);
    expect(problemsOf(minimalWith(entry, `${entry}\n  - [[]]`))).toContain(`${path}: must be a mapping`);
  });

  it('rejects a document that is not a mapping', () => {
    expect(problemsOf('- 1\n')).toEqual(['(root): must be a mapping with upstreams, models, owners and keys']);
  });

  it.each<[string, string, string, string]>([
    ['an unknown field', 'api_key: k', 'api_key: k, colour: red', 'upstreams[0].colour: unknown field'],
    ['a timeout that is not a positive integer', 'api_key: k', 'api_key: k, timeout_ms: -5', 'upstreams[0].timeout_ms: must be a positive integer'],
    ['an unknown auth style', 'api_key: k', 'api_key: k, auth: basic', 'upstreams[0].auth: unknown auth style "basic"'],
    ['a base URL that is not http(s)', '"http://127.0.0.1:9100"', '"ftp://host"', 'upstreams[0].base_url: must be an http or https URL'],
    ['a base URL with a path', '"http://127.0.0.1:9100"', '"http://host/v1"', 'upstreams[0].base_url: must be the provider root, without a path'],
    ['an unknown interface', '[chat_completions]', '[chat_completions, telepathy]', 'models[0].interfaces: unknown interface "telepathy"'],
    ['an empty interface list', '[chat_completions]', '[]', 'models[0].interfaces: must not be empty'],
    ['an empty line list', '[line-a]', '[]', 'models[0].lines: must not be empty'],
    ['a line that points at an unknown upstream', '[line-a]', '[line-a, x]', 'models[0].lines[1]: unknown upstream "x"'],
    ['an unknown price name', 'lines: [line-a]', 'lines: [line-a], prices: { sugar: 1 }', 'models[0].prices.sugar: unknown price "sugar"'],
    [
      'a price finer than a nano-unit',
      'lines: [line-a]',
      'lines: [line-a], prices: { input_tokens: 1e-10 }',
      'models[0].prices.input_tokens: 1e-10 has more than 9 decimals',
    ],
    ['a negative budget', 'kind: project', 'kind: project, budget: -1', 'owners[0].budget: must not be negative'],
    ['an unknown owner kind', 'kind: project', 'kind: boss', 'owners[0].kind: unknown owner kind "boss"'],
    [
      'an owner rate limit that is not a whole number',
      'kind: project',
      'kind: project, limits: { requests_per_minute: 1.5 }',
      'owners[0].limits.requests_per_minute: must be a whole number from 1 to 1000000000000, or null',
    ],
    [
      'an unknown rate limit',
      'kind: project',
      'kind: project, limits: { requests_per_hour: 10 }',
      'owners[0].limits.requests_per_hour: unknown limit (expected one of: requests_per_minute, tokens_per_minute, concurrent_requests)',
    ],
    ['limits that are not a mapping', 'models: ["*"]', 'models: ["*"], limits: 60', 'keys[0].limits: must be a mapping of requests_per_minute'],
    [
      'a key concurrency limit of 0',
      'models: ["*"]',
      'models: ["*"], limits: { concurrent_requests: 0 }',
      'keys[0].limits.concurrent_requests: must be a whole number',
    ],
    ['an unknown budget period', 'kind: project', 'kind: project, budget_period: year', 'owners[0].budget_period: must be one of day, week, month'],
    [
      'an unknown time zone',
      'kind: project',
      'kind: project, budget_period: day, budget_timezone: Mars/Olympus',
      'owners[0].budget_timezone: must be an IANA time zone name such as Europe/Berlin or UTC',
    ],
    ['a time zone without a period', 'kind: project', 'kind: project, budget_timezone: UTC', 'owners[0].budget_timezone: needs a budget_period'],
    ['an alert threshold of 0', 'kind: project', 'kind: project, alerts: [50, 0]', 'owners[0].alerts[1]: must be a whole per cent from 1 to 1000'],
    [
      'alerts that are not a list',
      'kind: project',
      'kind: project, alerts: 80',
      'owners[0].alerts: must be a list of per cent thresholds, such as [50, 80, 100]',
    ],
    ['a negative key budget', 'models: ["*"]', 'models: ["*"], budget: -2', 'keys[0].budget: must not be negative'],
    ['a key naming an unknown owner', 'owner: team-a', 'owner: team-z', 'keys[0].owner: unknown owner "team-z"'],
    ['a key scope naming an unknown model', '["*"]', '[model-a, model-z]', 'keys[0].models[1]: unknown model "model-z"'],
    ['a key without a scope', 'models: ["*"]', 'enabled: true', 'keys[0].models: is required'],
    ['a key with an empty scope', 'models: ["*"]', 'models: []', 'keys[0].models: must not be empty'],
    ['a model without upstream_model', 'upstream_model: up-a, ', '', 'models[0].upstream_model: is required'],
    ['a key with both key and key_sha256', 'key: gk-0001', `key: gk-0001, key_sha256: ${HASH}`, 'keys[0]: give exactly one of key and key_sha256'],
    ['a key with neither key nor key_sha256', 'key: gk-0001, ', '', 'keys[0]: give exactly one of key and key_sha256'],
    ['a key_sha256 that is not 64 hex characters', 'key: gk-0001', 'key_sha256: abc', 'keys[0].key_sha256: must be 64 hexadecimal characters'],
    [
      'an expiry that is not ISO 8601',
      'models: ["*"]',
      'models: ["*"], expires_at: tomorrow',
      'keys[0].expires_at: must be an ISO 8601 date or date-time with a zone',
    ],
    [
      'an expiry without a time zone',
      'models: ["*"]',
      'models: ["*"], expires_at: "2027-01-01T00:00:00"',
      'keys[0].expires_at: must be an ISO 8601 date or date-time with a zone',
    ],
  ])('names the YAML path of %s', (_rule, search, replacement, problem) => {
    const problems = problemsOf(minimalWith(search, replacement));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });

  it.each([
    ['upstreams', '  - { id: line-a, base_url: "http://127.0.0.1:9100", api_key: k }\n', 'line-a'],
    ['models', '  - { id: model-a, upstream_model: up-a, interfaces: [chat_completions], lines: [line-a] }\n', 'model-a'],
    ['owners', '  - { id: team-a, kind: project }\n', 'team-a'],
  ])('reports a duplicate id among %s', (section, entry, id) => {
    expect(problemsOf(minimalWith(entry, entry + entry))).toEqual([`${section}[1].id: duplicate id "${id}" (also at ${section}[0])`]);
  });

  it('reports the same key given twice', () => {
    const yamlText = `${MINIMAL}  - { key_sha256: "${createHash('sha256').update('gk-0001').digest('hex')}", owner: team-a, models: ["*"] }\n`;
    expect(problemsOf(yamlText)).toEqual(['keys[1]: same key as keys[0]']);
  });

  it('lists every problem of the file at once, one per line of the message', () => {
    const yamlText = MINIMAL.replace('api_key: k', 'api_key: "${MISSING}", timeout_ms: 0')
      .replace('[line-a] }', '[line-x] }')
      .replace('owner: team-a', 'owner: nobody');

    let thrown: unknown;
    try {
      loadGatewayConfig(yamlText, {});
    } catch (error) {
      thrown = error;
    }

    const expected = [
      'upstreams[0].api_key: environment variable MISSING is not set',
      'upstreams[0].timeout_ms: must be a positive integer',
      'models[0].lines[0]: unknown upstream "line-x"',
      'keys[0].owner: unknown owner "nobody"',
    ];
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).problems).toEqual(expected);
    expect((thrown as ConfigError).message.split('\n').slice(1)).toEqual(expected.map((problem) => `  ${problem}`));
  });
});

describe('price tiers', () => {
  /** MINIMAL plus a video model whose `price_tiers:` value is `tiers` (flow style, one line). */
  function withTiers(tiers: string): string {
    const videoModel = `  - { id: video-model, upstream_model: up-v, interfaces: [video_c], lines: [line-a], prices: { output_seconds: 0.05 }, price_tiers: ${tiers} }\n`;
    return minimalWith('owners:', `${videoModel}owners:`);
  }

  it('parses the tiers in file order, with exact prices and lower-cased resolutions', () => {
    const yamlText = minimalWith(
      'owners:',
      [
        '  - id: video-c-model',
        '    upstream_model: vendor-video-2',
        '    interfaces: [video_c]',
        '    lines: [line-a]',
        '    prices: { output_seconds: 0.05, input_seconds: 0.02, input_image_count: 0.01 }',
        '    price_tiers:',
        '      - resolution: 1080p',
        '        video_input: true',
        '        prices: { output_seconds: 0.12 }',
        '      - resolution: [1080p, 1080P-HD]',
        '        prices: { output_seconds: 0.1, input_seconds: "0.000000001", input_image_count: }',
        '      - video_input: false',
        '        prices: { input_image_count: 0 }',
        'owners:',
      ].join('\n'),
    );

    const model = loadGatewayConfig(yamlText, {}).models[1];

    expect(model.prices).toStrictEqual({ output_seconds: 50_000_000n, input_seconds: 20_000_000n, input_image_count: 10_000_000n });
    expect(model.priceTiers).toStrictEqual([
      { resolutions: ['1080p'], videoInput: true, prices: { output_seconds: 120_000_000n } },
      { resolutions: ['1080p', '1080p-hd'], prices: { output_seconds: 100_000_000n, input_seconds: 1n } },
      { videoInput: false, prices: { input_image_count: 0n } },
    ]);
  });

  it('parses output pixel tiers, alone or with other conditions, for image and speech prices', () => {
    const yamlText = minimalWith(
      'owners:',
      [
        '  - id: image-b-model',
        '    upstream_model: seedream-4',
        '    interfaces: [images_b]',
        '    lines: [line-a]',
        '    prices: { output_images: 0.045, input_images: 0.01 }',
        '    price_tiers:',
        '      - max_output_pixels: 1048576',
        '        prices: { output_images: 0.02 }',
        '      - max_output_pixels: 4194304',
        '        resolution: 2K',
        '        prices: { output_images: 0.035 }',
        '  - id: speech-model',
        '    upstream_model: speech-02-hd',
        '    interfaces: [speech_c]',
        '    lines: [line-a]',
        '    prices: { input_characters: 100 }',
        'owners:',
      ].join('\n'),
    );

    const config = loadGatewayConfig(yamlText, {});

    expect(config.models[1].priceTiers).toStrictEqual([
      { maxOutputPixels: 1_048_576, prices: { output_images: 20_000_000n } },
      { resolutions: ['2k'], maxOutputPixels: 4_194_304, prices: { output_images: 35_000_000n } },
    ]);
    expect(config.models[2].prices).toStrictEqual({ input_characters: 100_000_000_000n });
  });

  it('parses long-context tiers on a text model', () => {
    const yamlText = minimalWith(
      'owners:',
      [
        '  - id: chat-long',
        '    upstream_model: vendor-chat',
        '    interfaces: [messages, chat_completions]',
        '    lines: [line-a]',
        '    prices: { input_tokens: 3, output_tokens: 15 }',
        '    price_tiers:',
        '      - input_tokens_above: 1000000',
        '        prices: { input_tokens: 9, output_tokens: 30 }',
        '      - input_tokens_above: 200000',
        '        prices: { input_tokens: 6, cache_write_1h_input_tokens: 12, output_tokens: 22.5 }',
        'owners:',
      ].join('\n'),
    );

    expect(loadGatewayConfig(yamlText, {}).models[1].priceTiers).toStrictEqual([
      { inputTokensAbove: 1_000_000, prices: { input_tokens: 9_000_000_000n, output_tokens: 30_000_000_000n } },
      { inputTokensAbove: 200_000, prices: { input_tokens: 6_000_000_000n, cache_write_1h_input_tokens: 12_000_000_000n, output_tokens: 22_500_000_000n } },
    ]);
  });

  it.each<[string, string, string]>([
    ['an input_tokens_above of 0', '0', 'models[1].price_tiers[0].input_tokens_above: must be a positive integer'],
    ['a fractional input_tokens_above', '200000.5', 'models[1].price_tiers[0].input_tokens_above: must be a positive integer'],
    ['an input_tokens_above that is a string', '"200k"', 'models[1].price_tiers[0].input_tokens_above: must be a positive integer'],
  ])('names the YAML path of %s on a text model', (_rule, above, problem) => {
    const textModel = `  - { id: chat-long, upstream_model: up-c, interfaces: [chat_completions], lines: [line-a], prices: { input_tokens: 1 }, price_tiers: [{ input_tokens_above: ${above}, prices: { input_tokens: 2 } }] }\n`;
    expect(problemsOf(minimalWith('owners:', `${textModel}owners:`), {})).toEqual([problem]);
  });

  it('refuses a long-context tier on a model that does not meter input_tokens', () => {
    expect(problemsOf(withTiers('[{ input_tokens_above: 200000, prices: { output_seconds: 1 } }]'), {})).toEqual([
      "models[1].price_tiers[0].input_tokens_above: the model's interfaces (video_c) do not meter input_tokens",
    ]);
  });

  it('accepts a max_output_pixels of 1', () => {
    expect(loadGatewayConfig(withTiers('[{ max_output_pixels: 1, prices: {} }]'), {}).models[1].priceTiers).toStrictEqual([{ maxOutputPixels: 1, prices: {} }]);
  });

  it('reads an absent or empty price_tiers as no tiers', () => {
    expect(loadGatewayConfig(withTiers('[]'), {}).models[1].priceTiers).toEqual([]);
    expect(loadGatewayConfig(withTiers('null'), {}).models[1].priceTiers).toEqual([]);
  });

  it.each<[string, string, string]>([
    ['price_tiers that is not a list', '{ resolution: 1080p, prices: {} }', 'models[1].price_tiers: must be a list'],
    ['a tier that is a string', '[1080p]', 'models[1].price_tiers[0]: must be a mapping'],
    ['a tier that is an empty list', '[{ resolution: 720p, prices: {} }, []]', 'models[1].price_tiers[1]: must be a mapping'],
    [
      'a tier without a condition',
      '[{ prices: { output_seconds: 1 } }]',
      'models[1].price_tiers[0]: must name resolution, video_input, max_output_pixels or input_tokens_above',
    ],
    [
      'a tier whose conditions are empty',
      '[{ resolution: , video_input: , prices: {} }]',
      'models[1].price_tiers[0]: must name resolution, video_input, max_output_pixels or input_tokens_above',
    ],
    [
      'an empty resolution',
      '[{ resolution: "", prices: {} }]',
      'models[1].price_tiers[0].resolution: must be a non-empty string or a list of non-empty strings',
    ],
    [
      'a resolution that is a number',
      '[{ resolution: 1080, prices: {} }]',
      'models[1].price_tiers[0].resolution: must be a non-empty string or a list of non-empty strings',
    ],
    [
      'a resolution that is a mapping',
      '[{ resolution: { p: 1080 }, prices: {} }]',
      'models[1].price_tiers[0].resolution: must be a non-empty string or a list of non-empty strings',
    ],
    ['an empty resolution list', '[{ resolution: [], prices: {} }]', 'models[1].price_tiers[0].resolution: must not be empty'],
    ['a resolution list with an empty entry', '[{ resolution: [720p, ""], prices: {} }]', 'models[1].price_tiers[0].resolution: must list non-empty strings'],
    ['a resolution list with a number', '[{ resolution: [720p, 1080], prices: {} }]', 'models[1].price_tiers[0].resolution: must list non-empty strings'],
    ['a video_input that is not a boolean', '[{ video_input: yes, prices: {} }]', 'models[1].price_tiers[0].video_input: must be true or false'],
    ['a tier without prices', '[{ resolution: 720p }]', 'models[1].price_tiers[0].prices: is required'],
    ['tier prices that are not a mapping', '[{ resolution: 720p, prices: [1] }]', 'models[1].price_tiers[0].prices: must be a mapping'],
    [
      'an unknown tier price',
      '[{ resolution: 720p, prices: { output_secs: 1 } }]',
      'models[1].price_tiers[0].prices.output_secs: unknown price "output_secs" (expected one of: input_tokens,',
    ],
    [
      'a tier price finer than a nano-unit',
      '[{ resolution: 720p, prices: { output_seconds: 1e-10 } }]',
      'models[1].price_tiers[0].prices.output_seconds: 1e-10 has more than 9 decimals',
    ],
    ['a negative tier price', '[{ resolution: 720p, prices: { output_seconds: -1 } }]', 'models[1].price_tiers[0].prices.output_seconds: must not be negative'],
    [
      'a tier price that is not an amount',
      '[{ resolution: 720p, prices: { output_seconds: [1] } }]',
      'models[1].price_tiers[0].prices.output_seconds: must be a decimal amount',
    ],
    ['an unknown tier field', '[{ resolution: 720p, size: 4k, prices: {} }]', 'models[1].price_tiers[0].size: unknown field'],
    [
      'a problem in a later tier',
      '[{ resolution: 720p, prices: {} }, { video_input: true, prices: { output_secs: 1 } }]',
      'models[1].price_tiers[1].prices.output_secs: unknown price',
    ],
    ['a max_output_pixels of 0', '[{ max_output_pixels: 0, prices: {} }]', 'models[1].price_tiers[0].max_output_pixels: must be a positive integer'],
    ['a negative max_output_pixels', '[{ max_output_pixels: -4194304, prices: {} }]', 'models[1].price_tiers[0].max_output_pixels: must be a positive integer'],
    [
      'a fractional max_output_pixels',
      '[{ max_output_pixels: 1048576.5, prices: {} }]',
      'models[1].price_tiers[0].max_output_pixels: must be a positive integer',
    ],
    [
      'a max_output_pixels that is a string',
      '[{ max_output_pixels: "4194304", prices: {} }]',
      'models[1].price_tiers[0].max_output_pixels: must be a positive integer',
    ],
    [
      'a max_output_pixels that is a size',
      '[{ max_output_pixels: 2048x2048, prices: {} }]',
      'models[1].price_tiers[0].max_output_pixels: must be a positive integer',
    ],
    [
      'a max_output_pixels that is a list',
      '[{ max_output_pixels: [1024], prices: {} }]',
      'models[1].price_tiers[0].max_output_pixels: must be a positive integer',
    ],
    [
      'an empty max_output_pixels as the only condition',
      '[{ max_output_pixels: , prices: {} }]',
      'models[1].price_tiers[0]: must name resolution, video_input, max_output_pixels or input_tokens_above',
    ],
  ])('names the YAML path of %s', (_rule, tiers, problem) => {
    const problems = problemsOf(withTiers(tiers), {});
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });

  it('reports every problem of every tier', () => {
    expect(problemsOf(withTiers('[{ resolution: [], prices: { sugar: 1 } }, { prices: {} }, { video_input: 1, prices: 2 }]'), {})).toEqual([
      'models[1].price_tiers[0].resolution: must not be empty',
      'models[1].price_tiers[2].video_input: must be true or false',
      'models[1].price_tiers[2].prices: must be a mapping',
      expect.stringContaining('models[1].price_tiers[0].prices.sugar: unknown price "sugar"'),
      'models[1].price_tiers[1]: must name resolution, video_input, max_output_pixels or input_tokens_above',
    ]);
  });
});

describe('prices that no call uses', () => {
  /** MINIMAL plus a model (flow style, one line) as models[1]. */
  function withModel(fields: string): string {
    return minimalWith('owners:', `  - { id: model-b, upstream_model: up-b, lines: [line-a], ${fields} }\nowners:`);
  }

  it("refuses a price the model's only interface does not meter, naming its path and the figures metered", () => {
    expect(problemsOf(withModel('interfaces: [video_b], prices: { output_tokens: 2 }'), {})).toEqual([
      "models[1].prices.output_tokens: the model's interfaces (video_b) do not meter output_tokens, so it would never be billed; they meter: output_video_tokens",
    ]);
  });

  it('refuses such a price inside a tier', () => {
    const yamlText = withModel('interfaces: [video_b], prices: { output_video_tokens: 2 }, price_tiers: [{ resolution: 1080p, prices: { output_tokens: 3 } }]');

    expect(problemsOf(yamlText, {})).toEqual([
      "models[1].price_tiers[0].prices.output_tokens: the model's interfaces (video_b) do not meter output_tokens, so it would never be billed; they meter: output_video_tokens",
    ]);
  });

  it.each<[string, string, string]>([
    ['a chat model', '[chat_completions, responses]', 'output_image_tokens'],
    ['a chat-completions model', '[chat_completions]', 'cache_write_input_tokens'],
    ['an embeddings model', '[embeddings]', 'output_tokens'],
    ['an images format C model', '[images_c]', 'output_tokens'],
    ['an images format B model', '[images_b]', 'output_image_tokens'],
    ['a video vendor-c model', '[video_c]', 'output_video_tokens'],
    ['a speech model', '[speech_c]', 'input_tokens'],
  ])('refuses on %s a figure its interfaces do not meter', (_kind, interfaces, price) => {
    const problems = problemsOf(withModel(`interfaces: ${interfaces}, prices: { ${price}: 1 }`), {});
    expect(problems).toEqual([expect.stringContaining(`models[1].prices.${price}: the model's interfaces (`)]);
  });

  it('accepts on a model with several interfaces a price that any one of them meters', () => {
    const yamlText = withModel(
      'interfaces: [chat_completions, messages, video_b], prices: { input_tokens: 1, cache_write_input_tokens: 1.25, output_tokens: 5, output_video_tokens: 2 }',
    );

    expect(loadGatewayConfig(yamlText, {}).models[1].prices).toStrictEqual({
      input_tokens: 1_000_000_000n,
      cache_write_input_tokens: 1_250_000_000n,
      output_tokens: 5_000_000_000n,
      output_video_tokens: 2_000_000_000n,
    });
  });

  it('lists what all the interfaces meter', () => {
    expect(problemsOf(withModel('interfaces: [embeddings, speech_c], prices: { output_tokens: 1 }'), {})).toEqual([
      expect.stringContaining('(embeddings, speech_c) do not meter output_tokens, so it would never be billed; they meter: input_tokens, input_characters'),
    ]);
  });

  it('accepts a figure named without a price, which prices nothing', () => {
    expect(loadGatewayConfig(withModel('interfaces: [video_b], prices: { output_tokens: , output_video_tokens: 2 }'), {}).models[1].prices).toStrictEqual({
      output_video_tokens: 2_000_000_000n,
    });
  });

  it('reports only the unknown interface of a model whose interfaces are not all known', () => {
    expect(problemsOf(withModel('interfaces: [video_b, telepathy], prices: { output_tokens: 1 }'), {})).toEqual([
      expect.stringContaining('models[1].interfaces: unknown interface "telepathy"'),
    ]);
  });
});

describe('weighted lines, line model names and retries', () => {
  const TWO_LINES = minimalWith(
    '  - { id: line-a, base_url: "http://127.0.0.1:9100", api_key: k }\n',
    '  - { id: line-a, base_url: "http://127.0.0.1:9100", api_key: k }\n  - { id: line-b, base_url: "http://127.0.0.1:9101", api_key: k }\n',
  );
  function withLines(lines: string, more = ''): string {
    return TWO_LINES.replace('lines: [line-a] }', `lines: ${lines}${more} }`);
  }

  it('reads line ids and { id, weight, upstream_model } items; lines without a weight weigh 1', () => {
    const [model] = loadGatewayConfig(withLines('[{ id: line-a, weight: 3 }, { id: line-b, upstream_model: deployment-b }]'), {}).models;
    expect(model.lines).toEqual(['line-a', 'line-b']);
    expect(model.lineWeights).toEqual([3, 1]);
    expect(model.lineModels).toEqual({ 'line-b': 'deployment-b' });
    expect(model.retry).toBeUndefined();
  });

  it('keeps plain ids as they were: no weights, no line models', () => {
    const [model] = loadGatewayConfig(withLines('[line-a, { id: line-b }]'), {}).models;
    expect(model).toMatchObject({ lines: ['line-a', 'line-b'] });
    expect(model.lineWeights).toBeUndefined();
    expect(model.lineModels).toBeUndefined();
  });

  it("drops a line's upstream_model equal to the model's own", () => {
    expect(loadGatewayConfig(withLines('[{ id: line-a, upstream_model: up-a }]'), {}).models[0].lineModels).toBeUndefined();
  });

  it('reads retry, leaving out the fields not given', () => {
    expect(loadGatewayConfig(withLines('[line-a]', ', retry: { attempts: 2, max_backoff_ms: 3000 }'), {}).models[0].retry).toEqual({
      attempts: 2,
      maxBackoffMs: 3000,
    });
  });

  it.each([
    ['[{ id: line-a, weight: -1 }]', 'models[0].lines[0].weight: must be a whole number from 0 to 1000'],
    ['[{ id: line-a, weight: 1.5 }]', 'models[0].lines[0].weight: must be a whole number from 0 to 1000'],
    ['[{ id: line-a, weight: "3" }]', 'models[0].lines[0].weight: must be a whole number from 0 to 1000'],
    ['[{ id: line-a, weight: 0 }, { id: line-b, weight: 0 }]', 'models[0].lines: at least one line needs a weight above 0'],
    ['[{ id: line-a, upstream_model: "" }]', 'models[0].lines[0].upstream_model: must be a non-empty string'],
    ['[{ id: line-a, priority: 1 }]', 'models[0].lines[0].priority: unknown field'],
    ['[{ weight: 1 }]', 'models[0].lines[0].id: must be a non-empty string'],
    ['[3]', 'models[0].lines[0]: must be a line id or a mapping with id, weight, upstream_model'],
    ['[{ id: line-x, weight: 1 }]', 'models[0].lines[0]: unknown upstream "line-x"'],
    ['[line-a, { id: line-a, weight: 2 }]', 'models[0].lines[1]: line "line-a" is listed twice'],
  ])('refuses lines %s', (lines, problem) => {
    expect(problemsOf(withLines(lines), {})).toEqual([problem]);
  });

  it.each([
    ['{ attempts: 11 }', 'models[0].retry.attempts: must be a whole number from 0 to 10'],
    ['{ attempts: -1 }', 'models[0].retry.attempts: must be a whole number from 0 to 10'],
    ['{ backoff_ms: 1.5 }', 'models[0].retry.backoff_ms: must be a whole number of milliseconds, at least 0'],
    ['{ max_backoff_ms: -5 }', 'models[0].retry.max_backoff_ms: must be a whole number of milliseconds, at least 0'],
    ['{ tries: 2 }', 'models[0].retry.tries: unknown field'],
    ['3', 'models[0].retry: must be a mapping'],
  ])('refuses retry %s', (retry, problem) => {
    expect(problemsOf(withLines('[line-a]', `, retry: ${retry}`), {})).toEqual([problem]);
  });
});

describe(loadGatewayConfigFile.name, () => {
  it('names the file in the error', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'gateway-config-')), 'gateway.yaml');
    writeFileSync(path, 'upstreams: 5\n');
    expect(() => loadGatewayConfigFile(path, {})).toThrow(`Invalid ${path} (1 problem):\n  upstreams: must be a list`);
  });

  it('reports a file that cannot be read', () => {
    expect(() => loadGatewayConfigFile('/nonexistent/gateway.yaml', {})).toThrow(ConfigError);
  });
});
