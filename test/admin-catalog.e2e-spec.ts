import OpenAI from 'openai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayHarness } from './support/gateway-harness';
import { Answer, httpCall, ISO_INSTANT } from './support/admin-kit';
import { KEYS, standardConfigYaml, VENDOR_KEY } from './support/test-config';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { until } from './support/until';
import { defaultSettings } from '../src/config/gateway-options';

/**
 * The live catalog through the admin API: lines and models of the configuration file shown as
 * `source: config`, added, changed and deleted as JSON forms of file items, checked by the
 * file's rules, versioned, and served at once by the replica that took the change and by
 * another replica on the same database after its next check.
 */

/** A vendor key variable every replica of these tests has. */
const KEY_VARIABLE = 'CATALOG_TEST_VENDOR_KEY';

function newModel(id: string, lines = ['line-a'], prices: Record<string, unknown> = { input_tokens: 2, output_tokens: 8 }) {
  return { id, upstream_model: 'vendor-chat-2025-01', interfaces: ['chat_completions'], lines, prices };
}

function openai(gateway: GatewayHarness, key: string = KEYS.all): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
}

/** Every answer of the test, to look for a vendor key in any of them. */
const answers: Answer[] = [];

async function admin(gateway: GatewayHarness, method: Parameters<typeof httpCall>[1], path: string, body?: unknown): Promise<Answer> {
  const answer = await httpCall(gateway.url, method, path, body);
  answers.push(answer);
  return answer;
}

describe('the live catalog through the admin API', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    process.env[KEY_VARIABLE] = VENDOR_KEY;
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
    delete process.env[KEY_VARIABLE];
  });

  describe('what the file declared', () => {
    it('lists the lines of the file as source config, with whether a key is set and its last four characters only', async () => {
      const lines = await admin(gateway, 'GET', '/admin/upstreams');

      expect(lines.status).toBe(200);
      expect(lines.body.data.map((line: { id: string }) => line.id)).toEqual(['line-a', 'line-b', 'line-dead', 'line-narrow']);
      expect(lines.body.data[0]).toEqual({
        id: 'line-a',
        base_url: gateway.simulatorUrl,
        timeout_ms: 600000,
        api_key: { set: true, last4: VENDOR_KEY.slice(-4), reference: null },
        source: 'config',
        version: 1,
        created_at: expect.stringMatching(ISO_INSTANT),
        updated_at: expect.stringMatching(ISO_INSTANT),
      });
      expect(lines.text).not.toContain(VENDOR_KEY);
    });

    it('shows a model of the file in its JSON form, defaults filled in and prices as exact decimals', async () => {
      const model = await admin(gateway, 'GET', '/admin/models/chat-model');

      expect(model.status).toBe(200);
      expect(model.body).toEqual({
        id: 'chat-model',
        upstream_model: 'vendor-chat-2025-01',
        interfaces: ['chat_completions', 'responses'],
        lines: ['line-a'],
        capabilities: { image_input: true },
        max_tokens: 16384,
        prices: { input_tokens: '2.5', cached_input_tokens: '1.25', output_tokens: '10' },
        price_tiers: [],
        source: 'config',
        version: 1,
        created_at: expect.stringMatching(ISO_INSTANT),
        updated_at: expect.stringMatching(ISO_INSTANT),
      });
    });

    it('answers 404 for an id it does not have', async () => {
      expect((await admin(gateway, 'GET', '/admin/models/no-such-model')).status).toBe(404);
      expect((await admin(gateway, 'GET', '/admin/upstreams/no-such-line')).status).toBe(404);
    });
  });

  describe('a model added through the API', () => {
    it('is created as source admin at version 1, listed by /v1/models and served at once, key scopes included', async () => {
      const created = await admin(gateway, 'POST', '/admin/models', newModel('added-model'));
      const key = await admin(gateway, 'POST', '/admin/keys', { owner: 'team-a', models: ['added-model'] });

      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ id: 'added-model', source: 'admin', version: 1, prices: { input_tokens: '2', output_tokens: '8' } });
      const listed = await openai(gateway).models.list();
      expect(listed.data.map((model) => model.id)).toContain('added-model');
      const { data, response } = await openai(gateway, key.body.key)
        .chat.completions.create({ model: 'added-model', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      expect(data.choices[0].message.content).toEqual(expect.any(String));
      expect((gateway.simulator.requests.at(-1)!.json as { model: string }).model).toBe('vendor-chat-2025-01');
      expect(await gateway.usageRecord(response.headers.get('x-request-id')!)).toMatchObject({ model: 'added-model', ownerId: 'team-a', status: 200 });
    });

    it('refuses a second model of that id with 409', async () => {
      const again = await admin(gateway, 'POST', '/admin/models', newModel('added-model'));

      expect(again.status).toBe(409);
      expect(again.body.error.message).toContain('added-model');
    });

    it.each([
      ['an unknown line', newModel('bad-model', ['no-such-line']), 'lines[0]: unknown upstream "no-such-line"'],
      ['a price in words', newModel('bad-model', ['line-a'], { input_tokens: 'lots' }), 'prices.input_tokens'],
      ['a price its interfaces never bill', newModel('bad-model', ['line-a'], { output_images: 1 }), 'prices.output_images: the model'],
      ['an unknown field', { ...newModel('bad-model'), colour: 'blue' }, 'colour: unknown field'],
      ['no interfaces', { ...newModel('bad-model'), interfaces: [] }, 'interfaces'],
      ['a tier without a condition', { ...newModel('bad-model'), price_tiers: [{ prices: { input_tokens: 1 } }] }, 'price_tiers[0]: must name'],
      ['a negative line weight', newModel('bad-model', [{ id: 'line-a', weight: -1 }] as never), 'lines[0].weight: must be a whole number'],
      ['too many retries', { ...newModel('bad-model'), retry: { attempts: 11 } }, 'retry.attempts: must be a whole number from 0 to 10'],
    ])('refuses a model with %s with 400 naming the field', async (_label, body, message) => {
      const refused = await admin(gateway, 'POST', '/admin/models', body);

      expect(refused.status).toBe(400);
      // The message starts with the field's path within the item.
      expect(refused.body.error.message.slice(0, message.length)).toBe(message);
      expect((await admin(gateway, 'GET', '/admin/models/bad-model')).status).toBe(404);
    });
  });

  describe('versions', () => {
    it('replaces a model with the version read, counting it up, and refuses the stale version with 409', async () => {
      const read = await admin(gateway, 'GET', '/admin/models/added-model');

      const first = await admin(gateway, 'PUT', '/admin/models/added-model', { ...newModel('added-model'), max_tokens: 100, version: read.body.version });
      const second = await admin(gateway, 'PUT', '/admin/models/added-model', { ...newModel('added-model'), max_tokens: 200, version: read.body.version });

      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ max_tokens: 100, version: read.body.version + 1 });
      expect(second.status).toBe(409);
      expect(second.body.error.message).toContain(`version ${read.body.version + 1}`);
      expect((await admin(gateway, 'GET', '/admin/models/added-model')).body.max_tokens).toBe(100);
    });

    it('patches fields over the stored item, and refuses a write without a version or with another id', async () => {
      const read = await admin(gateway, 'GET', '/admin/models/added-model');

      const patched = await admin(gateway, 'PATCH', '/admin/models/added-model', { max_tokens: 300, version: read.body.version });
      const unversioned = await admin(gateway, 'PATCH', '/admin/models/added-model', { max_tokens: 400 });
      const renamed = await admin(gateway, 'PATCH', '/admin/models/added-model', { id: 'other', version: patched.body.version });

      expect(patched.body).toMatchObject({ max_tokens: 300, lines: ['line-a'], prices: { input_tokens: '2', output_tokens: '8' } });
      expect(unversioned.status).toBe(400);
      expect(unversioned.body.error.message).toContain('version: is required');
      expect(renamed.status).toBe(400);
      expect(renamed.body.error.message).toContain('id: must be "added-model"');
    });
  });

  describe('lines with weights and names of their own', () => {
    it('are stored and shown as items, with retry, and the line is called with its own name for the model', async () => {
      const read = await admin(gateway, 'GET', '/admin/models/added-model');
      const lines = [{ id: 'line-a', weight: 2, upstream_model: 'deployment-a' }];

      const patched = await admin(gateway, 'PATCH', '/admin/models/added-model', { lines, retry: { attempts: 1 }, version: read.body.version });

      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ lines, retry: { attempts: 1 } });
      expect((await admin(gateway, 'GET', '/admin/models/added-model')).body).toMatchObject({ lines, retry: { attempts: 1 } });
      await openai(gateway).chat.completions.create({ model: 'added-model', messages: [{ role: 'user', content: 'hi' }] });
      expect((gateway.simulator.requests.at(-1)!.json as { model: string }).model).toBe('deployment-a');
    });
  });

  describe('prices', () => {
    it('bills a call admitted before a price change at the old price and the next call at the new one', async () => {
      await admin(gateway, 'POST', '/admin/models', newModel('priced-model', ['line-a'], { input_tokens: 1, output_tokens: 1 }));
      gateway.simulator.failNext('/v1/chat/completions', { kind: 'delay', ms: 1_000 });
      const before = openai(gateway)
        .chat.completions.create({ model: 'priced-model', messages: [{ role: 'user', content: 'the same words' }] })
        .withResponse();
      await until(
        () => gateway.simulator.requests.some((request) => (request.json as { model?: string } | undefined)?.model === 'vendor-chat-2025-01'),
        'the first call to reach the upstream',
      );

      const read = await admin(gateway, 'GET', '/admin/models/priced-model');
      const changed = await admin(gateway, 'PATCH', '/admin/models/priced-model', {
        prices: { input_tokens: 3, output_tokens: 3 },
        version: read.body.version,
      });
      const after = await openai(gateway)
        .chat.completions.create({ model: 'priced-model', messages: [{ role: 'user', content: 'the same words' }] })
        .withResponse();
      const first = await before;

      expect(changed.status).toBe(200);
      const old = await gateway.usageRecord(first.response.headers.get('x-request-id')!);
      const next = await gateway.usageRecord(after.response.headers.get('x-request-id')!);
      expect(old!.usage).toEqual(next!.usage);
      expect(old!.costNano).toBeGreaterThan(0n);
      expect(next!.costNano).toBe(3n * old!.costNano);
    });
  });

  describe('lines', () => {
    it('refuses a literal vendor key without GATEWAY_SECRET_KEY, saying why, and a reference to a variable this replica lacks', async () => {
      const literal = await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-new', base_url: gateway.simulatorUrl, api_key: 'sk-literal-0001' });
      const unset = await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-new', base_url: gateway.simulatorUrl, api_key: '${NO_SUCH_VARIABLE_X}' });

      expect(literal.status).toBe(400);
      expect(literal.body.error.message).toContain('GATEWAY_SECRET_KEY');
      expect(unset.status).toBe(400);
      expect(unset.body.error.message).toContain('NO_SUCH_VARIABLE_X is not set');
      expect((await admin(gateway, 'GET', '/admin/upstreams/line-new')).status).toBe(404);
    });

    it('adds a line whose key is a ${VAR} reference, and a model on it serves with that key', async () => {
      const line = await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-ref', base_url: gateway.simulatorUrl, api_key: `\${${KEY_VARIABLE}}` });
      await admin(gateway, 'POST', '/admin/models', newModel('ref-model', ['line-ref']));

      const completion = await openai(gateway).chat.completions.create({ model: 'ref-model', messages: [{ role: 'user', content: 'hi' }] });

      expect(line.status).toBe(201);
      expect(line.body.api_key).toEqual({ set: true, last4: VENDOR_KEY.slice(-4), reference: `\${${KEY_VARIABLE}}` });
      expect(completion.choices).toHaveLength(1);
      expect(gateway.simulator.requests.at(-1)!.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
    });

    it('refuses to delete a line a model names with 409 naming the model, and deletes it once the model is gone', async () => {
      const refused = await admin(gateway, 'DELETE', '/admin/upstreams/line-ref');
      const model = await admin(gateway, 'DELETE', '/admin/models/ref-model');
      const stale = await admin(gateway, 'DELETE', '/admin/upstreams/line-ref?version=7');
      const deleted = await admin(gateway, 'DELETE', '/admin/upstreams/line-ref?version=1');

      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toContain('ref-model');
      expect(model.status).toBe(200);
      expect(stale.status).toBe(409);
      expect(deleted.status).toBe(200);
      expect((await admin(gateway, 'GET', '/admin/upstreams/line-ref')).status).toBe(404);
      const gone = await openai(gateway)
        .chat.completions.create({ model: 'ref-model', messages: [{ role: 'user', content: 'hi' }] })
        .catch((error: unknown) => error);
      expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    });

    it('lets a stream in flight on a deleted line finish', async () => {
      const slow = new UpstreamSimulator({ apiKey: VENDOR_KEY, chunkDelayMs: 60 });
      const slowUrl = await slow.start();
      try {
        await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-slow', base_url: slowUrl, api_key: `\${${KEY_VARIABLE}}` });
        await admin(gateway, 'POST', '/admin/models', newModel('slow-model', ['line-slow']));
        const stream = await openai(gateway).chat.completions.create({
          model: 'slow-model',
          stream: true,
          messages: [{ role: 'user', content: 'a long answer' }],
        });
        const chunks: string[] = [];
        const iterator = stream[Symbol.asyncIterator]();
        const first = await iterator.next();
        chunks.push(first.value?.choices[0]?.delta?.content ?? '');

        expect((await admin(gateway, 'DELETE', '/admin/models/slow-model')).status).toBe(200);
        expect((await admin(gateway, 'DELETE', '/admin/upstreams/line-slow')).status).toBe(200);
        for (let next = await iterator.next(); !next.done; next = await iterator.next()) chunks.push(next.value.choices[0]?.delta?.content ?? '');

        expect(chunks.length).toBeGreaterThan(2);
        expect(slow.requests).toHaveLength(1);
      } finally {
        await slow.stop();
      }
    });
  });

  it('never shows a vendor key in any answer', () => {
    expect(answers.length).toBeGreaterThan(20);
    for (const answer of answers) expect(answer.text).not.toContain(VENDOR_KEY);
  });
});

describe('literal vendor keys, with GATEWAY_SECRET_KEY', () => {
  let gateway: GatewayHarness;
  const secretKey = randomBytes(32);
  /** Everything the gateway logs, at debug level, Nest's own lines included. */
  let log = '';

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      settings: { catalog: { ...defaultSettings().catalog, secretKey }, logLevel: 'debug' },
      logDestination: { write: (chunk: string) => (log += chunk) },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  it('stores the key encrypted, shows its last four characters only, and calls the vendor with it', async () => {
    const line = await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-sealed', base_url: gateway.simulatorUrl, api_key: VENDOR_KEY });
    await admin(gateway, 'POST', '/admin/models', newModel('sealed-model', ['line-sealed']));

    const completion = await openai(gateway).chat.completions.create({ model: 'sealed-model', messages: [{ role: 'user', content: 'hi' }] });
    const [stored] = await gateway.dataSource.query(`SELECT * FROM upstream_line WHERE id = 'line-sealed'`);

    expect(line.status).toBe(201);
    expect(line.body.api_key).toEqual({ set: true, last4: VENDOR_KEY.slice(-4), reference: null });
    expect(line.text).not.toContain(VENDOR_KEY);
    expect(JSON.stringify(stored)).not.toContain(VENDOR_KEY);
    expect(stored.api_key_sealed).toMatch(/^v1:/);
    expect(completion.choices).toHaveLength(1);
    expect(gateway.simulator.requests.at(-1)!.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
  });

  it('keeps the stored key when a change leaves api_key out', async () => {
    const read = await admin(gateway, 'GET', '/admin/upstreams/line-sealed');

    const changed = await admin(gateway, 'PATCH', '/admin/upstreams/line-sealed', { timeout_ms: 30000, version: read.body.version });
    await openai(gateway).chat.completions.create({ model: 'sealed-model', messages: [{ role: 'user', content: 'hi' }] });

    expect(changed.body).toMatchObject({ timeout_ms: 30000, api_key: { set: true, last4: VENDOR_KEY.slice(-4) }, version: read.body.version + 1 });
    expect(gateway.simulator.requests.at(-1)!.headers.authorization).toBe(`Bearer ${VENDOR_KEY}`);
  });

  it('serves a sealed line without its key on a replica lacking GATEWAY_SECRET_KEY, saying why in its log', async () => {
    let otherLog = '';
    const other = await GatewayHarness.start({
      sharing: gateway,
      settings: { logLevel: 'error' },
      logDestination: { write: (chunk: string) => (otherLog += chunk) },
    });
    try {
      const refused = await openai(other)
        .chat.completions.create({ model: 'sealed-model', messages: [{ role: 'user', content: 'hi' }] })
        .catch((error: unknown) => error);

      expect(refused).toBeInstanceOf(OpenAI.APIError);
      expect(gateway.simulator.requests.at(-1)!.headers.authorization).not.toBe(`Bearer ${VENDOR_KEY}`);
      expect(otherLog).toContain('upstream line line-sealed: its stored vendor key cannot be read: GATEWAY_SECRET_KEY is not set');
    } finally {
      await other.stop();
    }
  });

  it('writes the vendor key into no log line, at debug level', async () => {
    const failing = await admin(gateway, 'POST', '/admin/upstreams', { id: 'line-bad', base_url: 'not a url', api_key: VENDOR_KEY });

    expect(failing.status).toBe(400);
    expect(log.split('\n').filter((line) => line.includes('"call"')).length).toBeGreaterThanOrEqual(2);
    expect(log).not.toContain(VENDOR_KEY);
  });
});

describe('two replicas on one database', () => {
  let first: GatewayHarness;
  let second: GatewayHarness;

  beforeAll(async () => {
    first = await GatewayHarness.start();
    second = await GatewayHarness.start({ sharing: first, settings: { catalog: { ...defaultSettings().catalog, checkIntervalMs: 100 } } });
  });

  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it('serves a model added through one replica on the other after its next check, and stops serving it once deleted', async () => {
    const unknown = await openai(second)
      .chat.completions.create({ model: 'shared-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);

    await admin(first, 'POST', '/admin/models', newModel('shared-model'));
    await until(async () => (await openai(second).models.list()).data.some((model) => model.id === 'shared-model'), 'the other replica to list the model');
    const served = await openai(second).chat.completions.create({ model: 'shared-model', messages: [{ role: 'user', content: 'hi' }] });

    await admin(first, 'DELETE', '/admin/models/shared-model');
    await until(async () => !(await openai(second).models.list()).data.some((model) => model.id === 'shared-model'), 'the other replica to drop the model');

    expect(served.choices).toHaveLength(1);
  });
});

describe('reading the configuration file again', () => {
  let gateway: GatewayHarness;
  let folder: string;
  let file: string;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'catalog-reload-'));
    file = join(folder, 'gateway.yaml');
    process.env.TEST_VENDOR_KEY = VENDOR_KEY;
    gateway = await GatewayHarness.start({ settings: { catalog: { ...defaultSettings().catalog, configFile: file } } });
    writeFileSync(file, standardConfigYaml(gateway.simulatorUrl));
  });

  afterAll(async () => {
    await gateway?.stop();
    delete process.env.TEST_VENDOR_KEY;
    rmSync(folder, { recursive: true, force: true });
  });

  it('applies a changed price and a new model of the file, as source config', async () => {
    const yaml = standardConfigYaml(gateway.simulatorUrl)
      .replace('prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }', 'prices: { input_tokens: 5, output_tokens: 10 }')
      .replace('owners:', '  - id: reloaded-model\n    upstream_model: vendor-chat-2025-01\n    interfaces: [chat_completions]\n    lines: [line-b]\nowners:');
    writeFileSync(file, yaml);

    const reloaded = await admin(gateway, 'POST', '/admin/reload');
    const completion = await openai(gateway).chat.completions.create({ model: 'reloaded-model', messages: [{ role: 'user', content: 'hi' }] });

    expect(reloaded.status).toBe(200);
    expect(reloaded.body).toEqual({ upstreams: 4, models: 8, owners: 3, keys: expect.any(Number) });
    expect((await admin(gateway, 'GET', '/admin/models/chat-model')).body).toMatchObject({ prices: { input_tokens: '5', output_tokens: '10' }, version: 2 });
    expect((await admin(gateway, 'GET', '/admin/models/reloaded-model')).body).toMatchObject({ source: 'config', lines: ['line-b'] });
    expect(completion.choices).toHaveLength(1);
  });

  it('changes nothing for a file with a problem, answering 400 with the problem by its YAML path', async () => {
    const before = await admin(gateway, 'GET', '/admin/models');
    writeFileSync(
      file,
      standardConfigYaml(gateway.simulatorUrl).replace('lines: [line-a]', 'lines: [line-gone]').replace('input_tokens: 2.5', 'input_tokens: 7'),
    );

    const refused = await admin(gateway, 'POST', '/admin/reload');

    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('Nothing changed');
    expect(refused.body.error.message).toContain('models[0].lines[0]: unknown upstream "line-gone"');
    expect((await admin(gateway, 'GET', '/admin/models')).body).toEqual(before.body);
  });

  it('answers 400 when the gateway was started without a file', async () => {
    const other = await GatewayHarness.start({ sharing: gateway });
    try {
      const refused = await admin(other, 'POST', '/admin/reload');

      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toContain('without GATEWAY_CONFIG');
    } finally {
      await other.stop();
    }
  });
});
