import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { once } from 'node:events';
import { Agent as HttpAgent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { ReplicaLimits } from '../src/governance/replica-limits';
import { ADMIN_AUTH, httpCall } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { until } from './support/until';

/**
 * The replica's own limits (docs/operations.md "Several replicas"): `MAX_STREAMS` streaming calls
 * in flight, from admission until their response is over however it ends, and
 * `MAX_CLIENT_CONNECTIONS` open client connections. Past either a request gets 503
 * `service_unavailable` in its entry's error shape with `Retry-After: 1`, before anything goes
 * upstream and without a usage record (as a rate limit's 429); a connection past the limit is
 * closed after its first request, and probes are still answered on it.
 */

const KEYS = {
  all: 'gk-replica-all-0001',
  broke: 'gk-replica-broke-0002',
  oneAtATime: 'gk-replica-one-at-a-time-0003',
} as const;

const MAX_STREAMS = 2;
const MAX_CLIENT_CONNECTIONS = 2;
const STREAM_REFUSAL = `This gateway replica has the most streaming calls it takes (${MAX_STREAMS}); retry shortly.`;
const CONNECTION_REFUSAL = `This gateway replica has the most client connections it takes (${MAX_CLIENT_CONNECTIONS}); retry on a new connection.`;

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - { id: chat-model, upstream_model: vendor-chat-2025-01, interfaces: [chat_completions], lines: [line-a], prices: { input_tokens: 1, output_tokens: 1 } }
  - { id: messages-model, upstream_model: vendor-messages-2025-02, interfaces: [messages], lines: [line-a], prices: { input_tokens: 1, output_tokens: 1 } }
owners:
  - { id: team-a, kind: project, budget: 100 }
  - { id: team-broke, kind: project, budget: 0 }
keys:
  - { key: ${KEYS.all}, owner: team-a, models: ["*"] }
  - { key: ${KEYS.broke}, owner: team-broke, models: ["*"] }
  - { key: ${KEYS.oneAtATime}, owner: team-a, models: ["*"], limits: { concurrent_requests: 1 } }
`;
}

/**
 * SDK clients on a connection pool of their own (see test/rate-limits.e2e-spec.ts): closed before
 * the gateway stops, as undici keeps a spare connection after an aborted stream.
 */
class Clients {
  private readonly pool = new Agent();
  private readonly fetch = undiciFetch as unknown as typeof fetch;

  /** No retries: a 503 with Retry-After must reach the test, not be retried by the SDK. */
  openai(gateway: GatewayHarness, key: string = KEYS.all): OpenAI {
    return new OpenAI({
      baseURL: `${gateway.url}/v1`,
      apiKey: key,
      maxRetries: 0,
      timeout: 20_000,
      fetch: this.fetch,
      fetchOptions: { dispatcher: this.pool },
    });
  }

  anthropic(gateway: GatewayHarness, key: string = KEYS.all): Anthropic {
    return new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0, timeout: 20_000, fetch: this.fetch, fetchOptions: { dispatcher: this.pool } });
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
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

function chatStream(client: OpenAI, text = 'Stream to me') {
  return client.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: text }], stream: true });
}

function messagesStream(client: Anthropic, model = 'messages-model') {
  return client.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Stream to me' }], stream: true });
}

/** A streaming chat call the simulator holds after its first event, until the client aborts it. */
async function heldStream(gateway: GatewayHarness, client: OpenAI) {
  gateway.simulator.failNext('/v1/chat/completions', { kind: 'stall-mid-stream', afterEvents: 1 });
  const stream = await chatStream(client, 'Hold on');
  // The first chunk has come through: the call is admitted and under way.
  expect((await stream[Symbol.asyncIterator]().next()).done).toBe(false);
  return stream;
}

/** Reads a stream to its end; what broke it (an upstream that broke off) ends it too. */
async function drain(stream: AsyncIterable<unknown>): Promise<number> {
  let events = 0;
  try {
    for await (const _event of stream) events += 1;
  } catch {
    // broken off: the stream is over all the same
  }
  return events;
}

/** One metric's sample, e.g. `gateway_in_flight_streams`, or one of its labelled series. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe(`MAX_STREAMS=${MAX_STREAMS}`, () => {
  const clients = new Clients();
  let gateway: GatewayHarness;
  let limits: ReplicaLimits;

  /** Waits for the gateway's count of open streams, which drops when a response has closed (a moment after its client saw the end). */
  const streamsOpen = (count: number) => until(() => limits.streams === count, `${count} open streams at the gateway (now ${limits.streams})`);

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml, settings: { replicaLimits: { maxClientConnections: 0, maxStreams: MAX_STREAMS } } });
    limits = gateway.app.get(ReplicaLimits);
  });

  afterAll(async () => {
    await clients.close();
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  it("refuses a third stream with 503 and Retry-After in each entry's shape while two are held, not forwarded nor recorded, and still answers a call that does not stream", async () => {
    const openai = clients.openai(gateway);
    const anthropic = clients.anthropic(gateway);
    const held = [await heldStream(gateway, openai), await heldStream(gateway, openai)];
    try {
      expect(limits.streams).toBe(2);

      const chat = await refusal(chatStream(openai), OpenAI.APIError);
      expect(chat.status).toBe(503);
      expect(chat.headers?.get('retry-after')).toBe('1');
      expect(chat.error).toEqual({ message: STREAM_REFUSAL, type: 'upstream_error', code: 'service_unavailable' });

      const messages = await refusal(messagesStream(anthropic), Anthropic.APIError);
      expect(messages.status).toBe(503);
      expect(messages.headers?.get('retry-after')).toBe('1');
      expect(messages.error).toEqual({ type: 'error', error: { type: 'overloaded_error', message: STREAM_REFUSAL, code: 'service_unavailable' } });

      // A call that does not stream is not limited.
      const whole = await openai.chat.completions.create({ model: 'chat-model', messages: [{ role: 'user', content: 'Not a stream' }] });
      expect(whole.choices[0].message.content).toBe('Hello from vendor-chat-2025-01: Not a stream');

      // Nothing of the refused calls went upstream, and they have no usage record (as a 429 of a rate limit).
      expect(gateway.simulator.requests.map((request) => (request.json as { stream?: boolean }).stream ?? false)).toEqual([true, true, false]);
      for (const requestId of [chat.requestID, messages.requestID]) {
        expect(requestId).toEqual(expect.any(String));
        expect(await gateway.usageRecord(requestId!)).toBeNull();
      }

      const metrics = (await httpCall(gateway.url, 'GET', '/metrics', undefined, {})).text;
      expect(sample(metrics, 'gateway_in_flight_streams')).toBe(2);
      expect(sample(metrics, 'gateway_replica_limited_total{limit="max_streams"}')).toBe(2);
      expect(sample(metrics, 'gateway_replica_limited_total{limit="max_client_connections"}')).toBe(0);
      expect(sample(metrics, 'gateway_client_connections')).toBeGreaterThanOrEqual(1);
    } finally {
      for (const stream of held) stream.controller.abort();
      await streamsOpen(0);
    }
  });

  it('admits a stream again once a client has aborted one, and again once a stream has ended', async () => {
    const openai = clients.openai(gateway);
    const held = [await heldStream(gateway, openai), await heldStream(gateway, openai)];
    try {
      await refusal(chatStream(openai), OpenAI.APIError);

      held[0].controller.abort();
      await streamsOpen(1);
      // Room for one: a stream that runs to its end.
      const whole = await chatStream(openai, 'Run to the end');
      expect(await drain(whole)).toBeGreaterThan(1);
      await streamsOpen(1);

      // The ended stream gave its place back: one more held stream is admitted, and only a third is refused.
      held.push(await heldStream(gateway, openai));
      expect(limits.streams).toBe(2);
      const refused = await refusal(chatStream(openai), OpenAI.APIError);
      expect(refused.status).toBe(503);
    } finally {
      for (const stream of held) stream.controller.abort();
      await streamsOpen(0);
    }
  });

  it('gives the place back however a stream ends: an upstream failure before or during the answer, a translated stream, a native messages stream', async () => {
    const openai = clients.openai(gateway);
    const anthropic = clients.anthropic(gateway);

    gateway.simulator.failNext('/v1/chat/completions', { status: 500 });
    expect((await refusal(chatStream(openai), OpenAI.APIError)).status).toBe(500);
    await streamsOpen(0);

    gateway.simulator.failNext('/v1/chat/completions', { kind: 'reset-before-headers' });
    expect((await refusal(chatStream(openai), OpenAI.APIError)).status).toBe(502);
    await streamsOpen(0);

    gateway.simulator.failNext('/v1/chat/completions', { kind: 'reset-mid-stream', afterEvents: 2 });
    await drain(await chatStream(openai, 'Break off'));
    await streamsOpen(0);

    // The messages entry on a model that offers only chat-completions: translated.
    expect(await drain(await messagesStream(anthropic, 'chat-model'))).toBeGreaterThan(2);
    await streamsOpen(0);
    expect(gateway.simulator.requests.at(-1)?.path).toBe('/v1/chat/completions');

    expect(await drain(await messagesStream(anthropic))).toBeGreaterThan(2);
    await streamsOpen(0);
  });

  it('gives the place back when a stream admitted among the streams is then refused for its budget or a rate limit', async () => {
    const broke = await refusal(chatStream(clients.openai(gateway, KEYS.broke)), OpenAI.APIError);
    expect(broke.status).toBe(402);
    await streamsOpen(0);

    const oneAtATime = clients.openai(gateway, KEYS.oneAtATime);
    const held = await heldStream(gateway, oneAtATime);
    try {
      expect((await refusal(chatStream(oneAtATime), OpenAI.RateLimitError)).status).toBe(429);
      await streamsOpen(1);
    } finally {
      held.controller.abort();
      await streamsOpen(0);
    }
    // Both places are free: two streams are held, and only a third is refused (503, not 429: a key of no limit).
    const openai = clients.openai(gateway);
    const both = [await heldStream(gateway, openai), await heldStream(gateway, openai)];
    try {
      expect((await refusal(chatStream(openai), OpenAI.APIError)).status).toBe(503);
    } finally {
      for (const stream of both) stream.controller.abort();
      await streamsOpen(0);
    }
  });
});

/** The answer to one request on a connection, and the connection's socket. */
interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  socket: Socket;
}

/** One client keep-alive connection (an agent of one socket), as a load balancer keeps to a replica. */
class Connection {
  private readonly agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  send(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      let socket: Socket | undefined;
      const lengthHeader = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
      const request = httpRequest(new URL(path, this.baseUrl), { method, agent: this.agent, headers: { ...headers, ...lengthHeader } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({ status: response.statusCode!, headers: response.headers, text: Buffer.concat(chunks).toString('utf8'), socket: socket! }),
        );
      });
      request.on('socket', (given: Socket) => (socket = given));
      request.on('error', reject);
      request.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Resolves once the socket has closed (at once if it has). */
async function closed(socket: Socket): Promise<void> {
  if (!socket.closed) await once(socket, 'close');
}

describe(`MAX_CLIENT_CONNECTIONS=${MAX_CLIENT_CONNECTIONS}`, () => {
  let gateway: GatewayHarness;
  let limits: ReplicaLimits;
  const connections: Connection[] = [];
  const AUTH = { authorization: `Bearer ${KEYS.all}` };

  const connectionsOpen = (count: number) =>
    until(() => limits.connections === count, `${count} open client connections at the gateway (now ${limits.connections})`);
  const connection = () => {
    const made = new Connection(gateway.url);
    connections.push(made);
    return made;
  };

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml, settings: { replicaLimits: { maxClientConnections: MAX_CLIENT_CONNECTIONS, maxStreams: 0 } } });
    limits = gateway.app.get(ReplicaLimits);
  });

  afterAll(async () => {
    for (const made of connections) made.close();
    await gateway?.stop();
  });

  it('refuses the first request of a connection past the limit (503, Retry-After, Connection: close, its path’s shape) and closes it, answers probes on it, and serves a new connection once one has closed', async () => {
    const [first, second] = [connection(), connection()];
    const kept = [await first.send('GET', '/v1/models', AUTH), await second.send('GET', '/v1/models', AUTH)];
    expect(kept.map((answer) => answer.status)).toEqual([200, 200]);
    expect(kept[0].socket.localPort).not.toBe(kept[1].socket.localPort);
    expect(limits.connections).toBe(2);

    // A chat call on a third connection: refused in the chat shape, never forwarded, and the connection closed.
    const chatBody = JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'One too many' }] });
    const chat = await connection().send('POST', '/v1/chat/completions', { ...AUTH, 'content-type': 'application/json' }, chatBody);
    expect(chat.status).toBe(503);
    expect(chat.headers).toMatchObject({ 'retry-after': '1', connection: 'close', 'x-request-id': expect.any(String) });
    expect(JSON.parse(chat.text)).toEqual({ error: { message: CONNECTION_REFUSAL, type: 'upstream_error', code: 'service_unavailable' } });
    await closed(chat.socket);

    // The messages entry answers in its own shape; a large body on its way is read and dropped, so the client gets the answer.
    const large = JSON.stringify({ model: 'messages-model', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(8 * 1024 * 1024) }] });
    const messages = await connection().send('POST', '/v1/messages', { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, large);
    expect(messages.status).toBe(503);
    expect(messages.headers).toMatchObject({ 'retry-after': '1', connection: 'close', 'request-id': expect.any(String) });
    expect(JSON.parse(messages.text)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: CONNECTION_REFUSAL, code: 'service_unavailable' } });
    await closed(messages.socket);

    // The admin API counts as any client.
    const admin = await connection().send('GET', '/admin/owners', ADMIN_AUTH);
    expect([admin.status, admin.headers.connection]).toEqual([503, 'close']);
    await closed(admin.socket);
    expect(gateway.simulator.requests).toEqual([]);

    // Probes are answered on a connection past the limit, and close it too.
    for (const path of ['/health/live', '/health/ready']) {
      const probe = await connection().send('GET', path);
      expect([probe.status, probe.headers.connection, JSON.parse(probe.text).status]).toEqual([200, 'close', 'ok']);
      await closed(probe.socket);
    }
    const scrape = await connection().send('GET', '/metrics');
    expect([scrape.status, scrape.headers.connection]).toEqual([200, 'close']);
    expect(sample(scrape.text, 'gateway_replica_limited_total{limit="max_client_connections"}')).toBe(3);
    expect(sample(scrape.text, 'gateway_replica_limited_total{limit="max_streams"}')).toBe(0);
    // The two kept connections, the scrape's own, and any refused one whose close the gateway has not seen yet.
    expect(sample(scrape.text, 'gateway_client_connections')).toBeGreaterThanOrEqual(3);
    await closed(scrape.socket);

    // The two connections within the limit go on serving, on the same sockets, kept alive.
    const again = await first.send('GET', '/v1/models', AUTH);
    expect([again.status, again.socket.localPort, again.headers.connection]).toEqual([200, kept[0].socket.localPort, 'keep-alive']);

    // Once one of them has closed (and the refused ones), a new connection is served and kept.
    first.close();
    await connectionsOpen(1);
    const fresh = await connection().send('GET', '/v1/models', AUTH);
    expect([fresh.status, fresh.headers.connection]).toEqual([200, 'keep-alive']);
    expect(limits.connections).toBe(2);
    expect(limits.refusals.max_client_connections).toBe(3);
  });
});
