import { createHash, randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { Clock } from '../src/common/clock';
import { GatewayHarness } from './support/gateway-harness';
import { KEYS } from './support/test-config';

/**
 * Authentication and model scope (SPEC.md Authentication, Errors; DESIGN.md section 7):
 * who may call, which models a key sees and may use, and the error bodies of refusals.
 */

const CHAT_PATH = '/v1/chat/completions';
const MESSAGES_PATH = '/v1/messages';
const MODELS_PATH = '/v1/models';

/** Every model id of the standard test configuration. */
const ALL_MODEL_IDS = ['chat-model', 'messages-model', 'embed-model', 'failover-model', 'dead-model', 'narrow-model', 'image-model'];

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function chatBody(model = 'chat-model') {
  return { model, messages: [{ role: 'user', content: 'Hello there' }] };
}

function messagesBody(model = 'messages-model') {
  return { model, max_tokens: 32, messages: [{ role: 'user', content: 'Hello there' }] };
}

async function call(baseUrl: string, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

/** `{"error":{"message","type","code"}}` with this code. */
function expectChatError(answer: Answer, status: number, code: string | null): void {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'type']);
  expect(typeof answer.body.error.message).toBe('string');
  expect(typeof answer.body.error.type).toBe('string');
}

/** `{"type":"error","error":{"type","message","code"}}` with this code. */
function expectMessagesError(answer: Answer, status: number, code: string | null): void {
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(answer.body).sort()).toEqual(['error', 'type']);
  expect(answer.body.type).toBe('error');
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'type']);
  expect(typeof answer.body.error.message).toBe('string');
  expect(typeof answer.body.error.type).toBe('string');
}

/** One request of each shape: chat-completions, the model list, messages. */
const ENTRIES = [
  { name: 'POST /v1/chat/completions', method: 'POST' as const, path: CHAT_PATH, body: chatBody(), shape: 'chat' as const },
  { name: 'GET /v1/models', method: 'GET' as const, path: MODELS_PATH, body: undefined, shape: 'chat' as const },
  { name: 'POST /v1/messages', method: 'POST' as const, path: MESSAGES_PATH, body: messagesBody(), shape: 'messages' as const },
];

/** Credentials that must all be refused with 401 invalid_api_key. */
const REFUSED_CREDENTIALS: Array<[string, Record<string, string>]> = [
  ['no key at all', {}],
  ['a wrong key', bearer('gk-test-not-a-real-key-9999')],
  ['a disabled key', bearer(KEYS.disabled)],
  ['an expired key', bearer(KEYS.expired)],
  ['a valid key without the Bearer scheme', { authorization: KEYS.all }],
  ['a valid key under the Basic scheme', { authorization: `Basic ${Buffer.from(`user:${KEYS.all}`).toString('base64')}` }],
  ['a valid key under another scheme', { authorization: `Token ${KEYS.all}` }],
  ['a Bearer scheme without a key', { authorization: 'Bearer' }],
  ['a Bearer header with two tokens', { authorization: `Bearer ${KEYS.all} ${KEYS.all}` }],
];

describe('authentication', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start();
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  describe('refused credentials', () => {
    const cases = REFUSED_CREDENTIALS.flatMap(([label, headers]) => ENTRIES.map((entry) => ({ label, headers, entry })));

    it.each(cases)('refuses $label on $entry.name with 401 invalid_api_key in its own error shape', async ({ headers, entry }) => {
      const answer = await call(gateway.url, entry.method, entry.path, headers, entry.body);

      if (entry.shape === 'chat') expectChatError(answer, 401, 'invalid_api_key');
      else expectMessagesError(answer, 401, 'invalid_api_key');
      expect(answer.body.error.type).toBe('authentication_error');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('accepts the valid key on the same entries, so the refusals above are about the key', async () => {
      for (const entry of ENTRIES) {
        const answer = await call(gateway.url, entry.method, entry.path, bearer(KEYS.all), entry.body);
        expect({ entry: entry.name, status: answer.status }).toEqual({ entry: entry.name, status: 200 });
      }
    });

    it('carries an X-Request-Id on a refusal too', async () => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, {}, chatBody());

      expect(answer.status).toBe(401);
      expect(answer.headers.get('x-request-id')).toBeTruthy();
    });
  });

  describe('keys in the URL query', () => {
    const cases = ['key', 'api_key'].flatMap((parameter) => ENTRIES.map((entry) => ({ parameter, entry })));

    it.each(cases)('refuses a key given only as ?$parameter= on $entry.name with 401 and forwards nothing', async ({ parameter, entry }) => {
      const path = `${entry.path}?${parameter}=${encodeURIComponent(KEYS.all)}`;

      const answer = await call(gateway.url, entry.method, path, {}, entry.body);

      if (entry.shape === 'chat') expectChatError(answer, 401, 'invalid_api_key');
      else expectMessagesError(answer, 401, 'invalid_api_key');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('does not pass a query key upstream when the call is authorised by its header', async () => {
      const answer = await call(gateway.url, 'POST', `${CHAT_PATH}?key=${KEYS.member}&api_key=${KEYS.member}`, bearer(KEYS.all), chatBody());

      expect(answer.status).toBe(200);
      expect(gateway.simulator.requests).toHaveLength(1);
      const forwarded = gateway.simulator.requests[0];
      expect(forwarded.path).toBe(CHAT_PATH);
      expect(JSON.stringify(forwarded.headers)).not.toContain(KEYS.member);
      expect(JSON.stringify(forwarded.headers)).not.toContain(KEYS.all);
      expect(forwarded.body.toString('utf8')).not.toContain(KEYS.member);
    });
  });

  describe('model scope', () => {
    it('refuses a chat-only key on messages-model with 403 model_not_allowed in the messages shape', async () => {
      const answer = await call(gateway.url, 'POST', MESSAGES_PATH, bearer(KEYS.chatOnly), messagesBody('messages-model'));

      expectMessagesError(answer, 403, 'model_not_allowed');
      expect(answer.body.error.type).toBe('permission_error');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses a chat-only key on messages-model with 403 model_not_allowed in the chat shape', async () => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, bearer(KEYS.chatOnly), chatBody('messages-model'));

      expectChatError(answer, 403, 'model_not_allowed');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('lets a chat-only key use chat-model', async () => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, bearer(KEYS.chatOnly), chatBody('chat-model'));

      expect(answer.status).toBe(200);
      expect(gateway.simulator.requests).toHaveLength(1);
    });

    it('writes no usage record for a call refused by scope', async () => {
      const answer = await fetch(`${gateway.url}${MESSAGES_PATH}`, {
        method: 'POST',
        headers: { ...bearer(KEYS.chatOnly), 'content-type': 'application/json' },
        body: JSON.stringify(messagesBody()),
      });
      await answer.text();
      const requestId = answer.headers.get('x-request-id') ?? '';

      expect(answer.status).toBe(403);
      expect(requestId).not.toBe('');
      expect(await gateway.usageRecord(requestId)).toBeNull();
    });
  });

  describe('model identifiers', () => {
    const identifiers = [
      ['an unknown id', 'no-such-model'],
      ['the upstream model name', 'vendor-chat-2025-01'],
      ['a display-name-like string', 'Chat Model'],
      ['an id in another case', 'Chat-Model'],
    ];

    it.each(identifiers)('answers %s (%s) on chat-completions with 404 model_not_found', async (_label, model) => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, bearer(KEYS.all), chatBody(model));

      expectChatError(answer, 404, 'model_not_found');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it.each([
      ['an unknown id', 'no-such-model'],
      ['the upstream model name', 'vendor-messages-2025-02'],
      ['a display-name-like string', 'Messages Model'],
    ])('answers %s (%s) on messages with 404 model_not_found in the messages shape', async (_label, model) => {
      const answer = await call(gateway.url, 'POST', MESSAGES_PATH, bearer(KEYS.all), messagesBody(model));

      expectMessagesError(answer, 404, 'model_not_found');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('answers an unknown model with 404 even for a key scoped to other models', async () => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, bearer(KEYS.chatOnly), chatBody('vendor-chat-2025-01'));

      expectChatError(answer, 404, 'model_not_found');
    });
  });

  describe('GET /v1/models', () => {
    async function listed(key: string): Promise<any> {
      const answer = await call(gateway.url, 'GET', MODELS_PATH, bearer(key));
      expect(answer.status).toBe(200);
      return answer.body;
    }

    it('lists only chat-model for a key scoped to chat-model', async () => {
      const list = await listed(KEYS.chatOnly);

      expect(list.object).toBe('list');
      expect(list.data.map((model: { id: string }) => model.id)).toEqual(['chat-model']);
    });

    it('lists every configured model for a key scoped to "*"', async () => {
      const list = await listed(KEYS.all);

      expect(list.object).toBe('list');
      expect(list.data.map((model: { id: string }) => model.id).sort()).toEqual([...ALL_MODEL_IDS].sort());
    });

    it('gives each model its id, capabilities.image_input and max_tokens', async () => {
      const list = await listed(KEYS.all);
      const byId = new Map<string, any>(list.data.map((model: { id: string }) => [model.id, model]));

      expect(byId.get('chat-model')).toMatchObject({ id: 'chat-model', capabilities: { image_input: true }, max_tokens: 16384 });
      expect(byId.get('messages-model')).toMatchObject({ id: 'messages-model', capabilities: { image_input: false }, max_tokens: 8192 });
      for (const model of list.data) {
        expect(typeof model.capabilities.image_input).toBe('boolean');
        expect(model).toHaveProperty('max_tokens');
      }
    });

    it('never shows an upstream model name', async () => {
      const answer = await call(gateway.url, 'GET', MODELS_PATH, bearer(KEYS.all));

      expect(JSON.stringify(answer.body)).not.toMatch(/vendor-/);
    });

    it('lists the same models through the openai SDK', async () => {
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.chatOnly, maxRetries: 0 });

      const page = await client.models.list();

      expect(page.data.map((model) => model.id)).toEqual(['chat-model']);
      expect(page.data[0]).toMatchObject({ id: 'chat-model', capabilities: { image_input: true }, max_tokens: 16384 });
    });

    it('lists every model through the openai SDK for a "*" key', async () => {
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.all, maxRetries: 0 });

      const ids: string[] = [];
      for await (const model of client.models.list()) ids.push(model.id);

      expect(ids.sort()).toEqual([...ALL_MODEL_IDS].sort());
    });

    it('makes the openai SDK raise its AuthenticationError with code invalid_api_key for a disabled key', async () => {
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.disabled, maxRetries: 0 });

      const error = await client.models.list().then(
        () => undefined,
        (caught: unknown) => caught,
      );

      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' });
    });
  });

  describe('key storage', () => {
    it('stores every key only as its SHA-256, with a short display prefix and no plaintext anywhere in the table', async () => {
      const rows: Array<Record<string, unknown>> = await gateway.dataSource.query('SELECT * FROM api_key');
      const plaintexts = Object.values(KEYS);

      expect(rows.map((row) => row.key_sha256).sort()).toEqual(plaintexts.map(sha256).sort());
      const table = JSON.stringify(rows);
      for (const plaintext of plaintexts) expect(table).not.toContain(plaintext);
      for (const row of rows) {
        expect(String(row.display_prefix).length).toBeLessThanOrEqual(12);
        expect(String(row.display_prefix).length).toBeLessThan(KEYS.all.length / 2);
      }
    });

    it('keeps plaintext keys out of the usage records and owners too', async () => {
      const answer = await call(gateway.url, 'POST', CHAT_PATH, bearer(KEYS.all), chatBody());
      expect(answer.status).toBe(200);
      await gateway.flushUsage();

      const records = JSON.stringify(await gateway.dataSource.query('SELECT * FROM usage_record'));
      const owners = JSON.stringify(await gateway.dataSource.query('SELECT * FROM quota_owner'));

      for (const plaintext of Object.values(KEYS)) {
        expect(records).not.toContain(plaintext);
        expect(owners).not.toContain(plaintext);
      }
    });
  });
});

describe('the key cache', () => {
  /** Far above the TTLs under test: the bound of a poll, not a measured timing. */
  const PATIENCE_MS = 15_000;
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ settings: { keyCache: { ttlMs: 300, negativeTtlMs: 100 } } });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  async function modelsStatus(key: string): Promise<Answer> {
    return call(gateway.url, 'GET', MODELS_PATH, bearer(key));
  }

  /** Asks until the answer has `status`; fails after PATIENCE_MS. */
  async function pollUntil(key: string, status: number): Promise<Answer> {
    const deadline = Date.now() + PATIENCE_MS;
    let answer = await modelsStatus(key);
    while (answer.status !== status && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      answer = await modelsStatus(key);
    }
    return answer;
  }

  it('keeps a key disabled in the database working until the TTL passes, then refuses it with 401', async () => {
    // The gateway's clock stands still while the key is read and disabled, so the second
    // call is inside the TTL however slow this machine is; then time runs again.
    const frozenAt = Date.now();
    const frozen = jest.spyOn(gateway.app.get(Clock), 'now').mockImplementation(() => frozenAt);
    try {
      expect((await modelsStatus(KEYS.member)).status).toBe(200);
      await gateway.dataSource.query('UPDATE api_key SET enabled = false WHERE key_sha256 = $1', [sha256(KEYS.member)]);

      expect((await modelsStatus(KEYS.member)).status).toBe(200);
    } finally {
      frozen.mockRestore();
    }

    const refused = await pollUntil(KEYS.member, 401);
    expectChatError(refused, 401, 'invalid_api_key');
  });

  it('lets a key enabled again in the database work again once the TTL passes', async () => {
    await gateway.dataSource.query('UPDATE api_key SET enabled = false WHERE key_sha256 = $1', [sha256(KEYS.member)]);
    expect((await pollUntil(KEYS.member, 401)).status).toBe(401);

    await gateway.dataSource.query('UPDATE api_key SET enabled = true WHERE key_sha256 = $1', [sha256(KEYS.member)]);

    expect((await pollUntil(KEYS.member, 200)).status).toBe(200);
  });

  it('lets a key inserted directly in the database work once the negative TTL has passed', async () => {
    const plaintext = `gk-inserted-directly-${randomUUID()}`;
    expectChatError(await modelsStatus(plaintext), 401, 'invalid_api_key');

    await gateway.dataSource.query(
      `INSERT INTO api_key (id, key_sha256, display_prefix, owner_id, models, enabled, source)
       VALUES ($1, $2, $3, 'team-a', $4, true, 'admin')`,
      [randomUUID(), sha256(plaintext), plaintext.slice(0, 8), JSON.stringify(['chat-model'])],
    );

    const accepted = await pollUntil(plaintext, 200);
    expect(accepted.status).toBe(200);
    expect(accepted.body.data.map((model: { id: string }) => model.id)).toEqual(['chat-model']);
  });
});
