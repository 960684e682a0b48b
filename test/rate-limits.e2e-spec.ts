import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { Clock } from '../src/common/clock';
import { RateLimiter } from '../src/governance/rate-limiter';
import { QuotaService } from '../src/metering/quota.service';
import { httpCall, keyIdOf } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { oneModelPerInterfaceYaml } from './support/test-config';
import { until } from './support/until';

/**
 * Rate limits of keys and owners (src/governance/): requests counted at admission, tokens when a
 * call is metered, calls under way until their answer is closed, each in a sliding minute. A
 * call over a limit gets 429 `rate_limit_exceeded` in its entry's error shape, with
 * `Retry-After` and `x-ratelimit-*`, and is neither forwarded nor recorded. The clients are the
 * official SDKs, and the gateway's clock is the test's, so the sliding minute moves on command.
 */

const MINUTE_MS = 60_000;

const KEYS = {
  requests: 'gk-rate-requests-0001',
  ownerA: 'gk-rate-owner-a-0002',
  ownerB: 'gk-rate-owner-b-0003',
  heldAborted: 'gk-rate-held-abort-0004',
  heldFinished: 'gk-rate-held-finish-0005',
  tokens: 'gk-rate-tokens-0006',
  metrics: 'gk-rate-metrics-0007',
  unlimited: 'gk-rate-unlimited-0008',
  clientLeft: 'gk-rate-client-left-0009',
  replicasA: 'gk-rate-replicas-a-0010',
  replicasB: 'gk-rate-replicas-b-0011',
  replicasHeld: 'gk-rate-replicas-held-0012',
  primedA: 'gk-rate-primed-a-0013',
  primedB: 'gk-rate-primed-b-0014',
} as const;

/** Each test has its own owner and key, so none depends on another's counts. */
function configYaml(simulator: string): string {
  return oneModelPerInterfaceYaml(
    simulator,
    `
owners:
  - { id: team-requests, kind: project }
  - { id: team-shared, kind: project, limits: { requests_per_minute: 5 } }
  - { id: team-held-abort, kind: project }
  - { id: team-held-finish, kind: project }
  - { id: team-tokens, kind: project }
  - { id: team-metrics, kind: project }
  - { id: team-unlimited, kind: project }
  - { id: team-client-left, kind: project }
  - { id: team-replicas, kind: project, limits: { requests_per_minute: 5 } }
  - { id: team-replicas-held, kind: project }
  - { id: team-primed, kind: project, limits: { requests_per_minute: 3 } }
keys:
  - { key: ${KEYS.requests}, owner: team-requests, models: ["*"], limits: { requests_per_minute: 60 } }
  - { key: ${KEYS.ownerA}, owner: team-shared, models: ["*"] }
  - { key: ${KEYS.ownerB}, owner: team-shared, models: ["*"] }
  - { key: ${KEYS.heldAborted}, owner: team-held-abort, models: ["*"], limits: { concurrent_requests: 2 } }
  - { key: ${KEYS.heldFinished}, owner: team-held-finish, models: ["*"], limits: { concurrent_requests: 2 } }
  - { key: ${KEYS.tokens}, owner: team-tokens, models: ["*"], limits: { tokens_per_minute: 1000 } }
  - { key: ${KEYS.metrics}, owner: team-metrics, models: ["*"], limits: { requests_per_minute: 2, tokens_per_minute: null } }
  - { key: ${KEYS.unlimited}, owner: team-unlimited, models: ["*"] }
  - { key: ${KEYS.clientLeft}, owner: team-client-left, models: ["*"], limits: { concurrent_requests: 1 } }
  - { key: ${KEYS.replicasA}, owner: team-replicas, models: ["*"] }
  - { key: ${KEYS.replicasB}, owner: team-replicas, models: ["*"] }
  - { key: ${KEYS.replicasHeld}, owner: team-replicas-held, models: ["*"], limits: { concurrent_requests: 1 } }
  - { key: ${KEYS.primedA}, owner: team-primed, models: ["*"] }
  - { key: ${KEYS.primedB}, owner: team-primed, models: ["*"] }
`,
  );
}

/** A clock that stands still until the test moves it, shared by the gateways given, as replicas share the wall clock. */
interface TestClock {
  now(): number;
  advance(ms: number): void;
  /** Moves to 30 s into the next minute: a window nothing was counted in, with known Retry-After values. */
  halfwayIntoNextMinute(): void;
}

function controlClock(...gateways: GatewayHarness[]): TestClock {
  let now = Date.now();
  for (const gateway of gateways) jest.spyOn(gateway.app.get(Clock), 'now').mockImplementation(() => now);
  return {
    now: () => now,
    advance: (ms) => (now += ms),
    halfwayIntoNextMinute: () => (now = (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS + MINUTE_MS / 2),
  };
}

/**
 * The SDK clients of one describe, on a connection pool of their own (the SDKs' documented
 * undici setup). After a stream is aborted, undici opens a spare connection that sends nothing,
 * and the gateway's close waits about a minute for such a connection; destroying the pool
 * before the gateway stops hangs it up.
 */
class Clients {
  private readonly pool = new Agent();
  /** undici's own fetch, which takes its Agent (the SDKs' typings name the global one). */
  private readonly fetch = undiciFetch as unknown as typeof fetch;

  openai(gateway: GatewayHarness, key: string): OpenAI {
    // No retries: a 429 must reach the test, not be retried by the SDK after Retry-After.
    return new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: key,
      maxRetries: 0,
      timeout: 20_000,
      fetch: this.fetch,
      fetchOptions: { dispatcher: this.pool },
    });
  }

  anthropic(gateway: GatewayHarness, key: string): Anthropic {
    return new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0, timeout: 20_000, fetch: this.fetch, fetchOptions: { dispatcher: this.pool } });
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}

function chat(client: OpenAI, text = 'Count me') {
  return client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: text }] }).withResponse();
}

/** The error a call was refused with; fails when the call was admitted. */
async function refusal<T>(call: Promise<unknown>, errorClass: abstract new (...args: any[]) => T): Promise<T> {
  const outcome = await call.then(
    () => new Error('the call was admitted'),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(errorClass);
  return outcome as T;
}

/** The Retry-After and `x-ratelimit-*` headers of an answer. */
function limitHeaders(headers: Headers): Record<string, string> {
  const picked: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (name === 'retry-after' || name.startsWith('x-ratelimit-')) picked[name] = value;
  });
  return picked;
}

async function adminUsageStatus(gateway: GatewayHarness, requestId: string): Promise<number> {
  return (await httpCall(gateway.url, 'GET', `/admin/usage/${encodeURIComponent(requestId)}`)).status;
}

async function metricsText(gateway: GatewayHarness): Promise<string> {
  return (await httpCall(gateway.url, 'GET', '/metrics', undefined, {})).text;
}

/** The gateway's count of refusals for one entry and limit (0 before the first). */
async function refusalsCounted(gateway: GatewayHarness, entry: string, limit: string): Promise<number> {
  const line = (await metricsText(gateway))
    .split('\n')
    .find((candidate) => candidate.startsWith(`gateway_rate_limited_total{entry="${entry}",limit="${limit}"} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** A streaming chat call the simulator holds after its first event, until the client aborts it. */
async function heldStream(gateway: GatewayHarness, client: OpenAI) {
  gateway.simulator.failNext('/v1/chat/completions', { kind: 'stall-mid-stream', afterEvents: 1 });
  const { data: stream, request_id: requestId } = await client.chat.completions
    .create({ model: 'chat-model', messages: [{ role: 'user', content: 'Hold on' }], stream: true })
    .withResponse();
  // The first chunk has come through: the call is under way at the gateway, not waiting to be admitted.
  expect((await stream[Symbol.asyncIterator]().next()).done).toBe(false);
  return { stream, requestId: requestId ?? '' };
}

describe('rate limits per key and per owner', () => {
  const clients = new Clients();
  let gateway: GatewayHarness;
  let clock: TestClock;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml });
    clock = controlClock(gateway);
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await clients.close();
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.reset();
    clock.halfwayIntoNextMinute();
  });

  it('answers 60 chat calls of a key limited to 60 a minute, refuses the 61st (429, Retry-After, not forwarded, not recorded) and admits again once the minute has slid on', async () => {
    const client = clients.openai(gateway, KEYS.requests);
    const admitted = await Promise.all(Array.from({ length: 60 }, () => chat(client)));
    expect(admitted.map(({ response }) => response.status)).toEqual(Array(60).fill(200));

    const refused = await refusal(chat(client), OpenAI.RateLimitError);
    expect(refused.status).toBe(429);
    expect(refused.error).toEqual({
      message: "This key's limit of 60 requests per minute is reached; retry after 31 s.",
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
    });
    // 30 s left of this minute, then one second until the 60 calls have faded to 59.
    expect(limitHeaders(refused.headers!)).toEqual({
      'retry-after': '31',
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '31s',
    });
    expect(gateway.simulator.requests).toHaveLength(60);

    // An admitted call is found by the same lookup, so the refused call's 404 means it has no record.
    await gateway.flushUsage();
    expect(await adminUsageStatus(gateway, admitted[0].request_id!)).toBe(200);
    expect(refused.requestID).toEqual(expect.any(String));
    expect(await adminUsageStatus(gateway, refused.requestID!)).toBe(404);

    // Retry-After is the first whole second that lets a call in: one second earlier is still refused.
    const retryAfterMs = Number(refused.headers!.get('retry-after')) * 1000;
    clock.advance(retryAfterMs - 1000);
    await refusal(chat(client), OpenAI.RateLimitError);
    clock.advance(1000);
    const again = await chat(client, 'After the wait');
    expect(again.response.status).toBe(200);
    expect(again.data.choices[0].message.content).toBe('Hello from vendor-chat-2025-01: After the wait');
    // One second into the new minute: 59 of the previous minute's calls plus this one; the next waits a second of fading.
    const full = await refusal(chat(client), OpenAI.RateLimitError);
    expect(full.headers!.get('retry-after')).toBe('1');
    expect(gateway.simulator.requests).toHaveLength(61);
  });

  it("counts an owner's limit over all its keys, refusing messages calls in the messages error shape with the owner's message", async () => {
    const keyA = clients.anthropic(gateway, KEYS.ownerA);
    const keyB = clients.anthropic(gateway, KEYS.ownerB);
    const message = (client: Anthropic) =>
      client.messages.create({ model: 'messages-model', max_tokens: 64, messages: [{ role: 'user', content: 'Share the limit' }] });
    for (let call = 0; call < 3; call++) await message(keyA);
    for (let call = 0; call < 2; call++) await message(keyB);

    const refused = await refusal(message(keyB), Anthropic.RateLimitError);
    expect(refused.status).toBe(429);
    // 30 s to the minute's end, then 12 s until the five calls have faded to four.
    expect(refused.error).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: "This key's owner's limit of 5 requests per minute is reached; retry after 42 s.",
        code: 'rate_limit_exceeded',
      },
    });
    expect(limitHeaders(refused.headers)).toEqual({
      'retry-after': '42',
      'x-ratelimit-limit-requests': '5',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '42s',
    });
    // Key A is refused as well: the count is the owner's, not key B's.
    await refusal(message(keyA), Anthropic.RateLimitError);
    expect(gateway.simulator.requests).toHaveLength(5);
  });

  it('refuses a third call while two held streams of a key limited to 2 concurrent calls run, and admits one once the client aborts a stream', async () => {
    const client = clients.openai(gateway, KEYS.heldAborted);
    const held = [await heldStream(gateway, client), await heldStream(gateway, client)];
    try {
      const refused = await refusal(chat(client), OpenAI.RateLimitError);
      expect(refused.status).toBe(429);
      expect(refused.error).toMatchObject({ code: 'rate_limit_exceeded', message: "This key's limit of 2 concurrent requests is reached; retry after 1 s." });
      expect(limitHeaders(refused.headers!)).toEqual({
        'retry-after': '1',
        'x-ratelimit-limit-concurrent': '2',
        'x-ratelimit-remaining-concurrent': '0',
        'x-ratelimit-reset-concurrent': '1s',
      });
      expect(gateway.simulator.requests).toHaveLength(2);

      held[0].stream.controller.abort();
      // The gateway records the aborted call (499) once it has seen its answer closed.
      await until(async () => (await gateway.usageRecord(held[0].requestId))?.status === 499, 'the aborted call to be recorded');
      expect((await chat(client, 'A slot is free')).response.status).toBe(200);

      // The other stream still holds its slot: one more held stream fills the limit again.
      held.push(await heldStream(gateway, client));
      await refusal(chat(client), OpenAI.RateLimitError);
      expect(gateway.simulator.requests).toHaveLength(4);
    } finally {
      for (const { stream } of held) stream.controller.abort();
    }
  });

  it('frees both slots of a key limited to 2 concurrent calls once its two calls have finished', async () => {
    const client = clients.openai(gateway, KEYS.heldFinished);
    // The simulator holds both answers for a while; the third call comes while they wait.
    gateway.simulator.failNext('/v1/chat/completions', { kind: 'delay', ms: 1500 }, 2);
    let settled = 0;
    const slow = [chat(client, 'Slow one'), chat(client, 'Slow two')].map((call) => call.finally(() => (settled += 1)));
    await until(() => gateway.simulator.requests.length === 2, 'both calls to reach the simulator');

    const refused = await refusal(chat(client), OpenAI.RateLimitError);
    expect(refused.error).toMatchObject({ code: 'rate_limit_exceeded', message: "This key's limit of 2 concurrent requests is reached; retry after 1 s." });
    expect(settled).toBe(0);

    const finished = await Promise.all(slow);
    expect(finished.map(({ data }) => data.choices[0].message.content)).toEqual([
      'Hello from vendor-chat-2025-01: Slow one',
      'Hello from vendor-chat-2025-01: Slow two',
    ]);
    // The client can have its answer a moment before the gateway has closed it.
    const keyId = await keyIdOf(gateway.dataSource, KEYS.heldFinished);
    await until(() => gateway.app.get(RateLimiter).subjects.get(`key:${keyId}`)?.inFlight === 0, 'the finished calls to end at the limiter');

    // Both slots are free: two held streams are admitted, and only a third call after them is refused.
    const held = [await heldStream(gateway, client), await heldStream(gateway, client)];
    try {
      await refusal(chat(client), OpenAI.RateLimitError);
    } finally {
      for (const { stream } of held) stream.controller.abort();
    }
  });

  it("admits a call while the minute's tokens are under the limit, counts its usage once metered, refuses the next call and admits again once the tokens have slid out", async () => {
    const client = clients.openai(gateway, KEYS.tokens);
    // The simulator answers with the question: 1,500 words in and out, one answer well over the 1,000 tokens a minute.
    const first = await chat(client, 'many '.repeat(1500).trim());
    expect(first.response.status).toBe(200);
    const usage = first.data.usage!;
    const tokens = usage.prompt_tokens + usage.completion_tokens;
    expect(tokens).toBeGreaterThan(2000);

    await until(async () => (await gateway.usageRecord(first.request_id!)) !== null, 'the first call to be metered');
    const refused = await refusal(chat(client), OpenAI.RateLimitError);
    expect(refused.status).toBe(429);
    // Admitted once tokens × (1 − the part of the previous minute gone) is under 1,000: 30 s to the minute's end, then the fade.
    const retryAfter = Math.ceil((MINUTE_MS / 2 + MINUTE_MS * (1 - 1000 / tokens)) / 1000);
    expect(refused.error).toEqual({
      message: `This key's limit of 1000 tokens per minute is reached; retry after ${retryAfter} s.`,
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
    });
    expect(limitHeaders(refused.headers!)).toEqual({
      'retry-after': String(retryAfter),
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': `${retryAfter}s`,
    });
    expect(gateway.simulator.requests).toHaveLength(1);

    clock.advance((retryAfter - 1) * 1000);
    await refusal(chat(client), OpenAI.RateLimitError);
    clock.advance(1000);
    expect((await chat(client, 'Small again')).response.status).toBe(200);
    expect(gateway.simulator.requests).toHaveLength(2);
  });

  it('counts refusals in gateway_rate_limited_total by entry and limit, with no key or owner label', async () => {
    const client = clients.openai(gateway, KEYS.metrics);
    const before = await refusalsCounted(gateway, 'chat_completions', 'requests_per_minute');
    await chat(client);
    await chat(client);
    for (let call = 0; call < 3; call++) await refusal(chat(client), OpenAI.RateLimitError);

    expect(await refusalsCounted(gateway, 'chat_completions', 'requests_per_minute')).toBe(before + 3);
    const samples = (await metricsText(gateway)).split('\n').filter((line) => line.startsWith('gateway_rate_limited_total'));
    expect(samples.length).toBeGreaterThan(0);
    for (const sample of samples) {
      expect(sample).toMatch(/^gateway_rate_limited_total\{entry="[a-z_]+",limit="(requests_per_minute|tokens_per_minute|concurrent_requests)"\} \d+$/);
    }
  });

  it('never refuses a key when neither it nor its owner has limits, and keeps no count of it', async () => {
    const client = clients.openai(gateway, KEYS.unlimited);
    const answers = await Promise.all(Array.from({ length: 100 }, () => chat(client)));
    expect(answers.map(({ response }) => response.status)).toEqual(Array(100).fill(200));
    expect(gateway.simulator.requests).toHaveLength(100);
    const keyId = await keyIdOf(gateway.dataSource, KEYS.unlimited);
    const tracked = [...gateway.app.get(RateLimiter).subjects.keys()];
    expect(tracked.filter((id) => id === `key:${keyId}` || id === 'owner:team-unlimited')).toEqual([]);
  });

  it('stops counting a call whose client left while its admission waited for the owner balance', async () => {
    // An owner's balance is read from the database when its cache is cold; this read waits until the client has gone.
    const quota = gateway.app.get(QuotaService);
    const admit = quota.admit.bind(quota);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let admission: Promise<void> | undefined;
    jest.spyOn(quota, 'admit').mockImplementationOnce((ownerId) => (admission = gate.then(() => admit(ownerId))));

    const server = gateway.app.getHttpServer() as Server;
    const accepted: Socket[] = [];
    const onConnection = (socket: Socket) => accepted.push(socket);
    server.on('connection', onConnection);
    try {
      const leaving = connect(Number(new URL(gateway.url).port), '127.0.0.1');
      await new Promise((resolve) => leaving.once('connect', resolve));
      const body = JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'Leaving early' }] });
      const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEYS.clientLeft}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
      leaving.write(head + body);
      await until(() => admission !== undefined, 'the admission to wait for the balance');
      const serverSide = accepted.find((socket) => socket.remotePort === leaving.localPort);
      leaving.destroy();
      expect(serverSide).toBeDefined();
      await until(() => serverSide!.destroyed, 'the gateway to see the client gone');
    } finally {
      server.off('connection', onConnection);
      release();
    }
    await admission;

    // A call that was admitted after its client left may count for a moment, not for good.
    const client = clients.openai(gateway, KEYS.clientLeft);
    const admitted = async () => {
      try {
        return (await chat(client, 'The only call under way')).response.status === 200;
      } catch (error) {
        if (error instanceof OpenAI.RateLimitError) return false;
        throw error;
      }
    };
    await until(admitted, "the key's only slot to be free (the call whose client left still holds it)", 3_000);
    // Nor is it sent upstream for nobody: the client had left before it went, so it has no record either.
    const keyId = await keyIdOf(gateway.dataSource, KEYS.clientLeft);
    await until(async () => (await httpCall(gateway.url, 'GET', `/admin/usage?key=${keyId}`)).body.data.length === 1, 'the admitted call recorded');
    const records = (await httpCall(gateway.url, 'GET', `/admin/usage?key=${keyId}`)).body.data;
    expect(records.map((record: { status: number }) => record.status)).toEqual([200]);
    expect(JSON.stringify(gateway.simulator.requests)).not.toContain('Leaving early');
  });
});

describe('rate limits across replicas', () => {
  const clients = new Clients();
  let first: GatewayHarness;
  let second: GatewayHarness;
  let clock: TestClock;

  beforeAll(async () => {
    first = await GatewayHarness.start({ configYaml });
    second = await GatewayHarness.start({ configYaml, sharing: first });
    clock = controlClock(first, second);
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await clients.close();
    await second?.stop();
    await first?.stop();
  });

  beforeEach(() => {
    first.simulator.reset();
    clock.halfwayIntoNextMinute();
  });

  /** What a replica counts of a subject now: its own calls, and the others' as of its last sync. */
  function seen(gateway: GatewayHarness, subject: string): { requests: number; othersInFlight: number } {
    const found = gateway.app.get(RateLimiter).subjects.get(subject);
    return { requests: found?.counts('requests', clock.now()).current ?? 0, othersInFlight: found?.othersInFlight ?? 0 };
  }

  it("shares an owner's request count between replicas through the database", async () => {
    const onFirst = clients.openai(first, KEYS.replicasA);
    const onSecond = clients.openai(second, KEYS.replicasB);
    await chat(onSecond);
    for (let call = 0; call < 3; call++) await chat(onFirst);
    // Each replica learns the other's calls at its next sync (RATE_LIMIT_SYNC_MS, 250 ms by default).
    await until(
      () => seen(first, 'owner:team-replicas').requests === 4 && seen(second, 'owner:team-replicas').requests === 4,
      'both replicas to count 4 calls',
    );

    expect((await chat(onSecond)).response.status).toBe(200);
    await until(() => seen(first, 'owner:team-replicas').requests === 5, 'the first replica to count the fifth call');
    const refused = await refusal(chat(onFirst), OpenAI.RateLimitError);
    expect(refused.error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: expect.stringMatching(/^This key's owner's limit of 5 requests per minute is reached/),
    });
    await refusal(chat(onSecond), OpenAI.RateLimitError);
    expect(first.simulator.requests).toHaveLength(5);
  });

  it("refuses the first call of an owner on a replica when the owner's limit was reached on another", async () => {
    const onFirst = clients.openai(first, KEYS.primedA);
    for (let call = 0; call < 3; call++) expect((await chat(onFirst)).response.status).toBe(200);
    const shared = async () => {
      const rows: Array<{ requests: string }> = await first.dataSource.query("SELECT requests FROM rate_count WHERE subject = 'owner:team-primed'");
      return rows.reduce((sum, row) => sum + Number(row.requests), 0);
    };
    await until(async () => (await shared()) === 3, 'the first replica to write its 3 calls');

    // The second replica has seen no call of this owner: it reads the shared counts before admitting one.
    expect(second.app.get(RateLimiter).subjects.has('owner:team-primed')).toBe(false);
    const refused = await refusal(chat(clients.openai(second, KEYS.primedB)), OpenAI.RateLimitError);
    expect(refused.error).toMatchObject({ message: expect.stringMatching(/^This key's owner's limit of 3 requests per minute is reached/) });
    expect(first.simulator.requests).toHaveLength(3);
  });

  it("counts a replica's calls under way on the other replicas until they end", async () => {
    const onFirst = clients.openai(first, KEYS.replicasHeld);
    const onSecond = clients.openai(second, KEYS.replicasHeld);
    const keyId = await keyIdOf(first.dataSource, KEYS.replicasHeld);
    // The second replica follows the key once a call of it has come its way.
    expect((await chat(onSecond)).response.status).toBe(200);

    const held = await heldStream(first, onFirst);
    try {
      await until(() => seen(second, `key:${keyId}`).othersInFlight === 1, 'the second replica to see the held call');
      const refused = await refusal(chat(onSecond), OpenAI.RateLimitError);
      expect(refused.error).toMatchObject({ message: "This key's limit of 1 concurrent requests is reached; retry after 1 s." });
    } finally {
      held.stream.controller.abort();
    }
    await until(() => seen(second, `key:${keyId}`).othersInFlight === 0, 'the second replica to see the held call end');
    expect((await chat(onSecond)).response.status).toBe(200);
  });
});
