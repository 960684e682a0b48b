import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { UpstreamSimulator } from './simulator/upstream-simulator';
import { AdminService } from '../src/admin/admin.service';
import { ADMIN_AUTH } from './support/admin-kit';
import { GatewayHarness } from './support/gateway-harness';
import { launchGateway } from './support/gateway-process';
import { KEYS, VENDOR_KEY } from './support/test-config';
import { until } from './support/until';
import { migratedFolder } from './support/test-database';

/**
 * OpenTelemetry traces (docs/operations.md "Traces"): off unless OTEL_EXPORTER_OTLP_ENDPOINT is
 * set; then each call is a server span continuing the client's `traceparent`, with children for
 * admission, each attempt on a line, translation and metering, sent over OTLP/HTTP to a
 * receiver started here; the call's log line carries the trace id, and the vendor sees no trace
 * context.
 */

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
const UPSTREAM_MODEL = 'vendor-chat-2025-01';
/** OTLP span kinds. */
const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: chat-model
    upstream_model: ${UPSTREAM_MODEL}
    interfaces: [chat_completions, responses]
    lines: [line-a]
    prices: { input_tokens: 2.5, output_tokens: 10 }
  - id: pair-model
    upstream_model: ${UPSTREAM_MODEL}
    interfaces: [chat_completions]
    lines: [line-a, line-b]
    prices: { input_tokens: 2.5, output_tokens: 10 }
owners:
  - id: team-a
    kind: project
    budget: 100
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
`;
}

type Attributes = Record<string, string | number | boolean>;

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Attributes;
  status: { code?: number; message?: string };
  resource: Attributes;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> = []): Attributes {
  const attributes: Attributes = {};
  for (const { key, value } of list) {
    attributes[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue!));
  }
  return attributes;
}

/** An OTLP/HTTP collector: takes what exporters POST to /v1/traces (OTLP JSON, gzipped or not). */
class OtlpReceiver {
  readonly bodies: any[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      void bodyOf(request).then((body) => {
        if (request.method === 'POST' && request.url === '/v1/traces') this.bodies.push(JSON.parse(body.toString('utf8')));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  spans(): ReceivedSpan[] {
    return this.bodies.flatMap((body) =>
      (body.resourceSpans as any[]).flatMap((resourceSpans) =>
        (resourceSpans.scopeSpans as any[]).flatMap((scopeSpans) =>
          (scopeSpans.spans as any[]).map((span) => ({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            start: BigInt(String(span.startTimeUnixNano)),
            end: BigInt(String(span.endTimeUnixNano)),
            attributes: attributesOf(span.attributes),
            status: span.status ?? {},
            resource: attributesOf(resourceSpans.resource?.attributes),
          })),
        ),
      ),
    );
  }

  /** The server span of a request id and its children. */
  call(requestId: string): { server: ReceivedSpan; children: ReceivedSpan[] } {
    const spans = this.spans();
    const server = spans.find((span) => span.kind === SERVER && span.attributes['gateway.request_id'] === requestId);
    if (!server) throw new Error(`no server span for ${requestId} among ${spans.length} spans`);
    return { server, children: spans.filter((span) => span.parentSpanId === server.spanId) };
  }
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

/** What the gateway writes to its log destination. */
class LogCapture {
  text = '';

  write(chunk: string): void {
    this.text += chunk;
  }

  /** The line of a request id with that message: its call line by default. */
  line(requestId: string, msg = 'call'): Record<string, any> {
    const lines = this.text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, any>);
    const line = lines.find((parsed) => parsed.msg === msg && parsed.request_id === requestId);
    if (!line) throw new Error(`no "${msg}" log line for ${requestId}`);
    return line;
  }
}

function sdks(gateway: GatewayHarness): { openai: OpenAI; anthropic: Anthropic } {
  return {
    openai: new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000 }),
    anthropic: new Anthropic({ baseURL: gateway.url, apiKey: KEYS.all, maxRetries: 0, timeout: 10_000 }),
  };
}

const CHAT = { messages: [{ role: 'user' as const, content: 'Say hello to the tracer' }] };

describe('traces', () => {
  const saved = { ...process.env };

  afterAll(() => {
    process.env = saved;
  });

  describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
    const receiver = new OtlpReceiver();
    const log = new LogCapture();
    let gateway: GatewayHarness;
    const ids = { chat: '', failover: '', translated: '', refused: '', failed: '' };
    let exportsBeforeShutdown = -1;

    // The calls are made once, the gateway is shut down (which sends the waiting spans), then
    // each test looks at what the receiver, the log and the vendor got.
    beforeAll(async () => {
      await receiver.start();
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
      // Nothing is sent on a timer during the test: the spans go at shutdown.
      process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
      gateway = await GatewayHarness.start({ configYaml, settings: { logLevel: 'info' }, logDestination: log });
      const { openai, anthropic } = sdks(gateway);
      const headers = { traceparent: TRACEPARENT };

      const chat = await openai.chat.completions.create({ model: 'chat-model', ...CHAT }, { headers }).withResponse();
      ids.chat = chat.response.headers.get('x-request-id')!;
      gateway.simulator.failNext('/v1/chat/completions', { status: 503 });
      const failover = await openai.chat.completions.create({ model: 'pair-model', ...CHAT }, { headers }).withResponse();
      ids.failover = failover.response.headers.get('x-request-id')!;
      const translated = await anthropic.messages.create({ model: 'chat-model', max_tokens: 64, ...CHAT }, { headers }).withResponse();
      ids.translated = translated.response.headers.get('x-request-id')!;
      const refused = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer gk-not-a-real-key-0000', 'content-type': 'application/json', traceparent: TRACEPARENT },
        body: JSON.stringify({ model: 'chat-model', ...CHAT }),
      });
      expect(refused.status).toBe(401);
      ids.refused = refused.headers.get('x-request-id')!;
      // An unexpected failure, written on an error line of its own beside its call line.
      jest.spyOn(gateway.app.get(AdminService), 'owner').mockRejectedValueOnce(new TypeError('owner view lost a member'));
      const failed = await fetch(`${gateway.url}/admin/owners/team-a`, { headers: { ...ADMIN_AUTH, traceparent: TRACEPARENT } });
      expect(failed.status).toBe(500);
      ids.failed = failed.headers.get('x-request-id')!;

      exportsBeforeShutdown = receiver.bodies.length;
      await gateway.stop();
    });

    afterAll(async () => {
      await receiver.stop();
    });

    it('sends the spans that wait when the gateway shuts down', () => {
      expect(exportsBeforeShutdown).toBe(0);
      expect(receiver.spans().length).toBeGreaterThan(0);
      expect(receiver.spans()[0]!.resource['service.name']).toBe('model-gateway');
    });

    it("continues the client's trace: the server span has its trace id and its span as parent", () => {
      const { server } = receiver.call(ids.chat);

      expect([server.traceId, server.parentSpanId]).toEqual([CLIENT_TRACE, CLIENT_SPAN]);
    });

    it('names the server span by operation and model and gives it the GenAI attributes and the request id the client got', () => {
      const { server } = receiver.call(ids.chat);

      expect(server.name).toBe('chat chat-model');
      expect(server.attributes).toMatchObject({
        'gateway.request_id': ids.chat,
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'chat-model',
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'gateway.line': 'line-a',
      });
      expect(server.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(server.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    });

    it('gives the call children for admission, its attempt and metering, within the server span', () => {
      const { server, children } = receiver.call(ids.chat);

      expect(children.map((span) => [span.name, span.kind])).toEqual([
        ['admission', INTERNAL],
        [`chat ${UPSTREAM_MODEL}`, CLIENT],
        ['metering', INTERNAL],
      ]);
      for (const child of children) {
        expect(child.traceId).toBe(CLIENT_TRACE);
        expect(child.start).toBeGreaterThanOrEqual(server.start);
        expect(child.end).toBeLessThanOrEqual(server.end);
        expect(child.end).toBeGreaterThanOrEqual(child.start);
      }
      const attempt = children[1]!;
      expect(attempt.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': UPSTREAM_MODEL,
        'gen_ai.provider.name': 'openai',
        'server.address': '127.0.0.1',
        'gateway.line': 'line-a',
        'gateway.attempt.outcome': 'answered',
        'http.response.status_code': 200,
      });
      expect(attempt.attributes['gen_ai.usage.output_tokens']).toBe(server.attributes['gen_ai.usage.output_tokens']);
      // The admission ends when the attempt starts.
      expect(children[0]!.end).toBeLessThanOrEqual(attempt.start);
    });

    it('makes one attempt span per line tried: the 503 of the first line, then the answer of the second', () => {
      const { server, children } = receiver.call(ids.failover);
      const attempts = children.filter((span) => span.kind === CLIENT);

      expect(
        attempts.map((span) => [span.attributes['gateway.line'], span.attributes['http.response.status_code'], span.attributes['gateway.attempt.outcome']]),
      ).toEqual([
        ['line-a', 503, '5xx'],
        ['line-b', 200, 'answered'],
      ]);
      expect(attempts[0]!.status).toMatchObject({ code: 2, message: '503' });
      expect(attempts[0]!.end).toBeLessThanOrEqual(attempts[1]!.start);
      expect(server.attributes).toMatchObject({ 'gateway.line': 'line-b', 'http.response.status_code': 200 });
    });

    it('gives a translated call a translation span, and its attempt the upstream protocol', () => {
      const { server, children } = receiver.call(ids.translated);
      const translation = children.find((span) => span.name === 'translation');

      expect(server.traceId).toBe(CLIENT_TRACE);
      expect(server.attributes).toMatchObject({ 'gateway.entry': 'messages', 'gen_ai.request.model': 'chat-model', 'http.route': '/v1/messages' });
      expect(translation?.attributes).toEqual({ 'gateway.translation.from': 'messages', 'gateway.translation.to': server.attributes['gateway.translated_to'] });
      expect(children.find((span) => span.kind === CLIENT)?.attributes['gen_ai.provider.name']).toBe('openai');
    });

    it('makes a refused call an admission span with its error code, under its route', () => {
      const { server, children } = receiver.call(ids.refused);

      expect(server.name).toBe('POST /v1/chat/completions');
      expect(server.attributes).toMatchObject({ 'http.response.status_code': 401, 'gateway.error_code': 'invalid_api_key' });
      expect(children.map((span) => [span.name, span.attributes['gateway.error_code']])).toEqual([['admission', 'invalid_api_key']]);
    });

    it("writes the trace id and the server span's id in the call's log line", () => {
      for (const requestId of Object.values(ids)) {
        const { server } = receiver.call(requestId);
        expect(log.line(requestId)).toMatchObject({ trace_id: server.traceId, span_id: server.spanId });
      }
    });

    it('writes the trace id on the error line about a request too', () => {
      const { server } = receiver.call(ids.failed);
      expect(server.traceId).toBe(CLIENT_TRACE);
      expect(log.line(ids.failed, 'request failed')).toMatchObject({ level: 50, trace_id: CLIENT_TRACE });
    });

    it('sends the vendor no trace context', () => {
      expect(gateway.simulator.requests.length).toBeGreaterThanOrEqual(4);
      for (const request of gateway.simulator.requests) {
        expect(Object.keys(request.headers).filter((name) => ['traceparent', 'tracestate', 'baggage'].includes(name))).toEqual([]);
        expect(JSON.stringify(request.headers)).not.toContain(CLIENT_TRACE);
      }
    });
  });

  describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    const receiver = new OtlpReceiver();
    const log = new LogCapture();
    let gateway: GatewayHarness;

    beforeAll(async () => {
      await receiver.start();
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      // Were tracing on by mistake, the spans would go here.
      process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = 'http/json';
      gateway = await GatewayHarness.start({ configYaml, settings: { logLevel: 'info' }, logDestination: log });
    });

    afterAll(async () => {
      await gateway?.stop();
      await receiver.stop();
    });

    it('sends nothing, and writes the line without trace members', async () => {
      const { openai } = sdks(gateway);
      const chat = await openai.chat.completions.create({ model: 'chat-model', ...CHAT }, { headers: { traceparent: TRACEPARENT } }).withResponse();
      const requestId = chat.response.headers.get('x-request-id')!;
      await until(() => log.text.includes(requestId), 'the call line');

      expect(Object.keys(log.line(requestId))).not.toContain('trace_id');
      expect(Object.keys(log.line(requestId))).not.toContain('span_id');
      expect(gateway.simulator.requests.at(-1)!.headers).not.toHaveProperty('traceparent');
      expect(receiver.bodies).toEqual([]);
    });
  });

  /** The built process as operators run it: `npm run build` first. */
  describe('the built gateway', () => {
    const receiver = new OtlpReceiver();
    const simulator = new UpstreamSimulator({ apiKey: VENDOR_KEY });
    let folder = '';
    let simulatorUrl = '';
    /** Loaded before the gateway: at exit it says how many OpenTelemetry modules the process loaded. */
    let hook = '';

    beforeAll(async () => {
      await receiver.start();
      simulatorUrl = await simulator.start();
      folder = await mkdtemp(join(tmpdir(), 'gateway-tracing-'));
      await writeFile(join(folder, 'gateway.yaml'), configYaml(simulatorUrl));
      hook = join(folder, 'count-modules.js');
      await writeFile(
        hook,
        `process.on('exit', () => {
          const loaded = Object.keys(require.cache).filter((path) => path.includes('/node_modules/@opentelemetry/'));
          process.stderr.write('opentelemetry modules loaded: ' + loaded.length + '\\n');
        });\n`,
      );
    });

    afterAll(async () => {
      await simulator.stop();
      await receiver.stop();
      await rm(folder, { recursive: true, force: true });
    });

    // A migrated copy of the embedded database: these tests are not about a first start, whose initdb takes seconds.
    async function launch(env: Record<string, string | undefined>) {
      return launchGateway({
        GATEWAY_CONFIG: join(folder, 'gateway.yaml'),
        DATA_DIR: await migratedFolder(folder),
        TEST_VENDOR_KEY: VENDOR_KEY,
        NODE_OPTIONS: `--require ${hook}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
        OTEL_BSP_SCHEDULE_DELAY: undefined,
        ...env,
      });
    }

    async function chatThrough(url: string): Promise<string> {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', traceparent: TRACEPARENT },
        body: JSON.stringify({ model: 'chat-model', ...CHAT }),
      });
      expect(response.status).toBe(200);
      await response.text();
      return response.headers.get('x-request-id')!;
    }

    it('without an OTLP endpoint never loads an OpenTelemetry module', async () => {
      const gateway = await launch({});
      try {
        await gateway.waitUntilReady();
        await chatThrough(gateway.url);
        expect(await gateway.stop()).toEqual({ code: 0, signal: null });
        expect(gateway.output).toContain('opentelemetry modules loaded: 0\n');
      } finally {
        await gateway.kill();
      }
    });

    it('with one, sends the spans of its last calls when SIGTERM stops it', async () => {
      const gateway = await launch({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test' });
      try {
        await gateway.waitUntilReady();
        const requestId = await chatThrough(gateway.url);
        expect(await gateway.stop()).toEqual({ code: 0, signal: null });

        const { server } = receiver.call(requestId);
        expect([server.traceId, server.parentSpanId, server.resource['service.name']]).toEqual([CLIENT_TRACE, CLIENT_SPAN, 'gateway-under-test']);
        expect(gateway.output).toMatch(/opentelemetry modules loaded: [1-9]/);
      } finally {
        await gateway.kill();
      }
    });

    it('stops the start on an OTEL_ value it cannot honour, naming the variable', async () => {
      const gateway = await launch({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'jaeger_remote' });
      try {
        const exit = await gateway.waitForExit();
        expect(exit.code).not.toBe(0);
        expect(gateway.output).toContain('OTEL_TRACES_SAMPLER must be one of');
      } finally {
        await gateway.kill();
      }
    });
  });
});
