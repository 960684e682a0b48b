import { createHash } from 'node:crypto';
import { ApiKey } from '../src/auth/api-key.entity';
import { UsageRecord } from '../src/metering/usage-record.entity';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { tokenCost } from './support/billing-kit';
import { KEYS } from './support/test-config';
import { parseSse, type SseItem } from './support/sse';

/**
 * Metering (SPEC.md Limits / Metering and billing, DESIGN.md section 4): one usage record per
 * forwarded call and none for rejected ones, exact integer costs from the reported usage, the
 * owner's spend, the budget, and the admin lookup by request id.
 */

const METER_KEY = 'gk-test-meter-owner-0007';
const TINY_KEY = 'gk-test-tiny-budget-0008';
const EMPTY_KEY = 'gk-test-empty-budget-0009';

/** Prices of the YAML below in nano-units per 1M tokens, restated so the test computes costs itself. */
const CHAT_PRICES = { input: 2_500_000_000n, cached: 1_250_000_000n, output: 10_000_000_000n };
const MESSAGES_PRICES = { input: 3_000_000_000n, cached: 300_000_000n, cacheWrite: 3_750_000_000n, output: 15_000_000_000n };
const EMBED_INPUT_PRICE = 20_000_000n;

function meteringConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-dead
    base_url: http://127.0.0.1:1
    api_key: unused
    timeout_ms: 2000
models:
  - id: chat-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions, responses]
    lines: [line-a]
    prices: { input_tokens: 2.5, cached_input_tokens: 1.25, output_tokens: 10 }
  - id: messages-model
    upstream_model: vendor-messages-2025-02
    interfaces: [messages]
    lines: [line-a]
    prices: { input_tokens: 3, cached_input_tokens: 0.3, cache_write_input_tokens: 3.75, output_tokens: 15 }
  - id: embed-model
    upstream_model: vendor-embed-3
    interfaces: [embeddings]
    lines: [line-a]
    prices: { input_tokens: 0.02 }
  - id: dead-model
    upstream_model: vendor-chat-2025-01
    interfaces: [chat_completions]
    lines: [line-dead]
    prices: { input_tokens: 2.5, output_tokens: 10 }
owners:
  - id: team-a
    kind: project
    budget: 100
  - id: team-meter
    kind: project
    budget: 100
  - id: team-tiny
    kind: project
    budget: 0.000001
  - id: team-empty
    kind: project
    budget: 0
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
  - key: ${KEYS.chatOnly}
    owner: team-a
    models: [chat-model]
  - key: ${KEYS.disabled}
    owner: team-a
    models: ["*"]
    enabled: false
  - key: ${METER_KEY}
    owner: team-meter
    models: ["*"]
  - key: ${TINY_KEY}
    owner: team-tiny
    models: ["*"]
  - key: ${EMPTY_KEY}
    owner: team-empty
    models: ["*"]
`;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  requestId: string;
  json(): any;
}

interface CallOptions {
  key?: string;
  headers?: Record<string, string>;
}

async function call(baseUrl: string, path: string, body: unknown, options: CallOptions = {}): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key ?? KEYS.all}`, 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    requestId: response.headers.get('x-request-id') ?? '',
    json: () => JSON.parse(text),
  };
}

async function adminGet(baseUrl: string, path: string, token = ADMIN_TOKEN_FOR_TESTS): Promise<{ status: number; body: any }> {
  const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

function chatBody(content = 'Count these words for the bill', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'chat-model', messages: [{ role: 'user', content }], ...extra };
}

function messagesBody(content = 'Count these words for the bill', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'messages-model', max_tokens: 256, messages: [{ role: 'user', content }], ...extra };
}

function responsesBody(input = 'Count these words for the bill', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'chat-model', input, instructions: 'Be brief.', ...extra };
}

/** Chat-completions usage (prompt tokens include the cached ones). */
function chatCost(usage: any): bigint {
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return tokenCost([
    [usage.prompt_tokens - cached, CHAT_PRICES.input],
    [cached, CHAT_PRICES.cached],
    [usage.completion_tokens, CHAT_PRICES.output],
  ]);
}

/** Responses usage, priced like chat. */
function responsesCost(usage: any): bigint {
  const cached = usage.input_tokens_details?.cached_tokens ?? 0;
  return tokenCost([
    [usage.input_tokens - cached, CHAT_PRICES.input],
    [cached, CHAT_PRICES.cached],
    [usage.output_tokens, CHAT_PRICES.output],
  ]);
}

/** Messages usage (input_tokens excludes cache reads and writes). */
function messagesCost(usage: any): bigint {
  return tokenCost([
    [usage.input_tokens, MESSAGES_PRICES.input],
    [usage.cache_read_input_tokens ?? 0, MESSAGES_PRICES.cached],
    [usage.cache_creation_input_tokens ?? 0, MESSAGES_PRICES.cacheWrite],
    [usage.output_tokens, MESSAGES_PRICES.output],
  ]);
}

/** Messages stream usage: message_start's figures, each overwritten by later message_delta totals. */
function messagesStreamUsage(items: SseItem[]): Record<string, number> {
  let usage: Record<string, number> = {};
  for (const item of items) {
    if (item.event !== 'message_start' && item.event !== 'message_delta') continue;
    const data = JSON.parse(item.data);
    const figures = item.event === 'message_start' ? data.message.usage : data.usage;
    for (const [name, value] of Object.entries(figures ?? {})) {
      if (typeof value === 'number') usage = { ...usage, [name]: value };
    }
  }
  return usage;
}

/** A decimal currency amount from the admin API as exact nano-units (at most 9 decimals). */
function unitsToNano(amount: number): bigint {
  const [whole, fraction] = amount.toFixed(9).split('.');
  return BigInt(whole) * 1_000_000_000n + BigInt(fraction);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

describe('metering', () => {
  let harness: GatewayHarness;

  beforeAll(async () => {
    harness = await GatewayHarness.start({ configYaml: meteringConfigYaml });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  beforeEach(() => harness.simulator.reset());

  const post = (path: string, body: unknown, options?: CallOptions) => call(harness.url, path, body, options);
  const admin = (path: string, token?: string) => adminGet(harness.url, path, token);

  async function recordsOf(requestId: string): Promise<UsageRecord[]> {
    return (await harness.usageRecords()).filter((record) => record.requestId === requestId);
  }

  async function onlyRecordOf(requestId: string): Promise<UsageRecord> {
    const records = await recordsOf(requestId);
    expect(records).toHaveLength(1);
    return records[0];
  }

  async function keyIdOf(plaintext: string): Promise<string> {
    const key = await harness.dataSource.getRepository(ApiKey).findOneByOrFail({ keySha256: sha256Hex(plaintext) });
    return key.id;
  }

  async function spentNano(ownerId: string): Promise<bigint> {
    await harness.flushUsage();
    const owner = await admin(`/admin/owners/${ownerId}`);
    expect(owner.status).toBe(200);
    return unitsToNano(owner.body.spent);
  }

  describe('usage records', () => {
    it('keeps exactly one record per forwarded call, naming request, client request, key, owner, model, interface, line, status and stream', async () => {
      const chat = await post('/v1/chat/completions', chatBody(), { headers: { 'x-client-request-id': 'client-chat-0001' } });
      const messages = await post('/v1/messages', messagesBody('Hi', { stream: true }), {
        headers: { 'x-client-request-id': 'client-messages-0002' },
      });
      const responses = await post('/v1/responses', responsesBody());
      expect([chat.status, messages.status, responses.status]).toEqual([200, 200, 200]);
      const keyId = await keyIdOf(KEYS.all);

      expect(await onlyRecordOf(chat.requestId)).toMatchObject({
        requestId: chat.requestId,
        clientRequestId: 'client-chat-0001',
        keyId,
        ownerId: 'team-a',
        model: 'chat-model',
        interface: 'chat_completions',
        line: 'line-a',
        status: 200,
        errorCode: null,
        stream: false,
      });
      expect(await onlyRecordOf(messages.requestId)).toMatchObject({
        clientRequestId: 'client-messages-0002',
        keyId,
        ownerId: 'team-a',
        model: 'messages-model',
        interface: 'messages',
        line: 'line-a',
        status: 200,
        stream: true,
      });
      expect(await onlyRecordOf(responses.requestId)).toMatchObject({
        clientRequestId: null,
        model: 'chat-model',
        interface: 'responses',
        stream: false,
      });
      expect(harness.simulator.requests).toHaveLength(3);
    });

    it('shows the record through the admin API under the X-Request-Id of the call', async () => {
      const chat = await post('/v1/chat/completions', chatBody(), { headers: { 'x-client-request-id': 'client-lookup-0003' } });

      const lookup = await admin(`/admin/usage/${chat.requestId}`);

      expect(lookup.status).toBe(200);
      expect(lookup.body).toMatchObject({
        request_id: chat.requestId,
        client_request_id: 'client-lookup-0003',
        key_id: await keyIdOf(KEYS.all),
        owner_id: 'team-a',
        model: 'chat-model',
        interface: 'chat_completions',
        line: 'line-a',
        status: 200,
        stream: false,
        cost_nano: chatCost(chat.json().usage).toString(),
      });
    });

    it('ignores a client request id longer than 128 characters', async () => {
      const chat = await post('/v1/chat/completions', chatBody(), { headers: { 'x-client-request-id': 'x'.repeat(129) } });

      expect(chat.status).toBe(200);
      expect(await onlyRecordOf(chat.requestId)).toMatchObject({ clientRequestId: null });
    });

    it.each([
      ['401 for a wrong key', 401, '/v1/chat/completions', chatBody(), 'gk-no-such-key'],
      ['401 for a disabled key', 401, '/v1/chat/completions', chatBody(), KEYS.disabled],
      ['403 for a model outside the key scope', 403, '/v1/messages', messagesBody(), KEYS.chatOnly],
      ['404 for an unknown model', 404, '/v1/chat/completions', { ...chatBody(), model: 'no-such-model' }, KEYS.all],
      ['400 for a repeated top-level field', 400, '/v1/chat/completions', '{"model":"chat-model","model":"chat-model","messages":[]}', KEYS.all],
      ['400 for a model without the interface', 400, '/v1/chat/completions', { ...chatBody(), model: 'embed-model' }, KEYS.all],
      ['402 for a used-up budget', 402, '/v1/chat/completions', chatBody(), EMPTY_KEY],
    ])('keeps no record and forwards nothing when the gateway rejects a call: %s', async (_case, status, path, body, key) => {
      const before = (await harness.usageRecords()).length;

      const rejected = await post(path, body, { key });

      expect(rejected.status).toBe(status);
      expect(rejected.requestId).not.toBe('');
      expect(harness.simulator.requests).toHaveLength(0);
      expect(await recordsOf(rejected.requestId)).toHaveLength(0);
      expect((await admin(`/admin/usage/${rejected.requestId}`)).status).toBe(404);
      expect(await harness.usageRecords()).toHaveLength(before);
    });

    it('keeps the record of a call that failed upstream, with its status and error code', async () => {
      const failed = await post('/v1/chat/completions', { ...chatBody(), model: 'dead-model' });

      expect(failed.status).toBe(502);
      expect(failed.json().error.code).toBe('upstream_failed');
      const record = await onlyRecordOf(failed.requestId);
      expect(record).toMatchObject({ model: 'dead-model', line: 'line-dead', status: 502, errorCode: 'upstream_failed', usage: null });
      expect(record.costNano).toBe(0n);
    });
  });

  describe('costs', () => {
    it('bills chat tokens exactly from the reported usage', async () => {
      const chat = await post('/v1/chat/completions', chatBody('Please answer with a few more words than usual'));
      const usage = chat.json().usage;

      const record = await onlyRecordOf(chat.requestId);

      expect(record.usage).toMatchObject({ input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens });
      expect(record.costNano).toBe(chatCost(usage));
      expect(record.costNano).toBe(BigInt(usage.prompt_tokens) * 2_500n + BigInt(usage.completion_tokens) * 10_000n);
    });

    it('bills a chat stream the same tokens as the same request as JSON', async () => {
      const whole = await post('/v1/chat/completions', chatBody('Stream or not, same bill'));
      const streamed = await post('/v1/chat/completions', chatBody('Stream or not, same bill', { stream: true }));
      expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);

      const wholeRecord = await onlyRecordOf(whole.requestId);
      const streamedRecord = await onlyRecordOf(streamed.requestId);

      expect(streamedRecord.stream).toBe(true);
      expect(streamedRecord.usage).toEqual(wholeRecord.usage);
      expect(streamedRecord.usage).toMatchObject({
        input_tokens: whole.json().usage.prompt_tokens,
        output_tokens: whole.json().usage.completion_tokens,
      });
      expect(streamedRecord.costNano).toBe(chatCost(whole.json().usage));
      expect(streamedRecord.costNano).toBe(wholeRecord.costNano);
    });

    it('keeps cached chat tokens and bills them at the cached price', async () => {
      const chat = await post('/v1/chat/completions', chatBody('cache-me: a long shared prefix that the upstream has cached'));
      const usage = chat.json().usage;
      const cached = usage.prompt_tokens_details.cached_tokens;
      expect(cached).toBeGreaterThan(0);

      const record = await onlyRecordOf(chat.requestId);

      expect(record.usage).toMatchObject({ input_tokens: usage.prompt_tokens, cached_input_tokens: cached });
      expect(record.costNano).toBe(BigInt(usage.prompt_tokens - cached) * 2_500n + BigInt(cached) * 1_250n + BigInt(usage.completion_tokens) * 10_000n);
    });

    it('keeps cached messages tokens and bills cache reads at the cached price', async () => {
      const messages = await post('/v1/messages', messagesBody('cache-me: a long shared prefix that the upstream has cached'));
      const usage = messages.json().usage;
      expect(usage.cache_read_input_tokens).toBeGreaterThan(0);

      const record = await onlyRecordOf(messages.requestId);

      expect(record.usage).toMatchObject({
        input_tokens: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
        cached_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      });
      expect(record.costNano).toBe(messagesCost(usage));
    });

    it('bills a messages stream from message_start and the cumulative message_delta usage', async () => {
      const body = messagesBody('cache-me: stream a reply that is long enough to count', { stream: true });
      const streamed = await post('/v1/messages', body);
      const items = parseSse(streamed.text);
      const delta = JSON.parse(items.find((item) => item.event === 'message_delta')!.data).usage;
      const usage = messagesStreamUsage(items);
      expect(usage.output_tokens).toBe(delta.output_tokens);

      const record = await onlyRecordOf(streamed.requestId);

      expect(record.usage).toMatchObject({
        input_tokens: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
        cached_input_tokens: usage.cache_read_input_tokens,
        output_tokens: delta.output_tokens,
      });
      expect(record.costNano).toBe(messagesCost(usage));
      const whole = await post('/v1/messages', { ...body, stream: false });
      expect(record.costNano).toBe(messagesCost(whole.json().usage));
    });

    it('bills a responses stream from response.completed', async () => {
      const streamed = await post('/v1/responses', responsesBody('cache-me: responses stream billing', { stream: true }));
      const completed = parseSse(streamed.text).find((item) => item.event === 'response.completed');
      expect(completed).toBeDefined();
      const usage = JSON.parse(completed!.data).response.usage;

      const record = await onlyRecordOf(streamed.requestId);

      expect(record).toMatchObject({ interface: 'responses', stream: true });
      expect(record.usage).toMatchObject({
        input_tokens: usage.input_tokens,
        cached_input_tokens: usage.input_tokens_details.cached_tokens,
        output_tokens: usage.output_tokens,
      });
      expect(record.costNano).toBe(responsesCost(usage));
    });

    it('bills responses JSON from its usage', async () => {
      const whole = await post('/v1/responses', responsesBody('responses json billing'));

      const record = await onlyRecordOf(whole.requestId);

      expect(record.costNano).toBe(responsesCost(whole.json().usage));
    });

    it('bills embeddings input tokens', async () => {
      const embeddings = await post('/v1/embeddings', { model: 'embed-model', input: ['first text to embed', 'second one'] });
      const usage = embeddings.json().usage;

      const record = await onlyRecordOf(embeddings.requestId);

      expect(record.usage).toMatchObject({ input_tokens: usage.prompt_tokens });
      expect(record.costNano).toBe(tokenCost([[usage.prompt_tokens, EMBED_INPUT_PRICE]]));
    });

    it('does not bill count_tokens', async () => {
      const before = await spentNano('team-meter');

      const counted = await post(
        '/v1/messages/count_tokens',
        { model: 'messages-model', messages: [{ role: 'user', content: 'count me' }] },
        { key: METER_KEY },
      );

      expect(counted.status).toBe(200);
      expect(counted.json().input_tokens).toBeGreaterThan(0);
      const record = await onlyRecordOf(counted.requestId);
      expect(record).toMatchObject({ model: 'messages-model', status: 200 });
      expect(record.costNano).toBe(0n);
      expect(await spentNano('team-meter')).toBe(before);
    });

    it("grows the owner's spent by exactly the sum of its record costs", async () => {
      const before = await spentNano('team-meter');
      const options = { key: METER_KEY };

      const answers = [
        await post('/v1/chat/completions', chatBody('one'), options),
        await post('/v1/chat/completions', chatBody('cache-me two', { stream: true }), options),
        await post('/v1/messages', messagesBody('three'), options),
        await post('/v1/messages', messagesBody('cache-me four', { stream: true }), options),
        await post('/v1/responses', responsesBody('five'), options),
        await post('/v1/responses', responsesBody('six', { stream: true }), options),
        await post('/v1/embeddings', { model: 'embed-model', input: 'seven' }, options),
        await post('/v1/messages/count_tokens', { model: 'messages-model', messages: [{ role: 'user', content: 'eight' }] }, options),
      ];
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));

      const records = await Promise.all(answers.map((answer) => onlyRecordOf(answer.requestId)));
      const total = records.reduce((sum, record) => sum + record.costNano, 0n);
      expect(records.every((record) => record.ownerId === 'team-meter')).toBe(true);
      expect(total).toBeGreaterThan(0n);
      expect(await spentNano('team-meter')).toBe(before + total);
    });
  });

  describe('budget', () => {
    it('answers 402 insufficient_quota once the budget is used up, in the chat and messages shapes, and forwards nothing', async () => {
      const first = await post('/v1/chat/completions', chatBody('spend the whole tiny budget'), { key: TINY_KEY });
      expect(first.status).toBe(200);
      expect((await admin(`/admin/usage/${first.requestId}`)).status).toBe(200);
      expect(harness.simulator.requests).toHaveLength(1);

      const chat = await post('/v1/chat/completions', chatBody(), { key: TINY_KEY });
      const messages = await post('/v1/messages', messagesBody(), { key: TINY_KEY });

      expect(chat.status).toBe(402);
      expect(chat.json()).toEqual({ error: { message: expect.any(String), type: expect.any(String), code: 'insufficient_quota' } });
      expect(messages.status).toBe(402);
      expect(messages.json()).toEqual({
        type: 'error',
        error: { type: expect.any(String), message: expect.any(String), code: 'insufficient_quota' },
      });
      expect(harness.simulator.requests).toHaveLength(1);
      expect(await recordsOf(chat.requestId)).toHaveLength(0);
      expect(await recordsOf(messages.requestId)).toHaveLength(0);
    });
  });

  describe('admin usage lookup', () => {
    it('answers 404 for an unknown request id', async () => {
      const lookup = await admin('/admin/usage/00000000-0000-4000-8000-000000000000');

      expect(lookup.status).toBe(404);
    });

    it('answers 401 for a wrong admin token, and for a gateway key', async () => {
      const chat = await post('/v1/chat/completions', chatBody());

      expect((await admin(`/admin/usage/${chat.requestId}`, 'not-the-admin-token')).status).toBe(401);
      expect((await admin(`/admin/usage/${chat.requestId}`, KEYS.all)).status).toBe(401);
      expect((await admin('/admin/owners/team-a', 'not-the-admin-token')).status).toBe(401);
    });
  });
});

describe('metering before the usage batch is written', () => {
  let harness: GatewayHarness;

  beforeAll(async () => {
    harness = await GatewayHarness.start({
      configYaml: meteringConfigYaml,
      settings: { usageWriter: { flushIntervalMs: 60_000, batchSize: 500, shutdownDeadlineMs: 5_000 } },
    });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('returns the record by request id right after the call, and the same record once written', async () => {
    const chat = await call(harness.url, '/v1/chat/completions', chatBody('look me up at once'));
    expect(chat.status).toBe(200);

    const early = await adminGet(harness.url, `/admin/usage/${chat.requestId}`);
    const storedEarly = await harness.dataSource.getRepository(UsageRecord).findOneBy({ requestId: chat.requestId });

    expect(storedEarly).toBeNull();
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({
      request_id: chat.requestId,
      model: 'chat-model',
      interface: 'chat_completions',
      line: 'line-a',
      status: 200,
      stream: false,
      cost_nano: chatCost(chat.json().usage).toString(),
    });

    await harness.flushUsage();
    const late = await adminGet(harness.url, `/admin/usage/${chat.requestId}`);
    const { written: _earlyWritten, ...earlyFields } = early.body;
    const { written: _lateWritten, ...lateFields } = late.body;
    expect(late.status).toBe(200);
    expect(lateFields).toEqual(earlyFields);
  });
});
