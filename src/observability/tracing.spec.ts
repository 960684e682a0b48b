import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import * as resources from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { FastifyRequest } from 'fastify';
import pino from 'pino';
import { performance } from 'node:perf_hooks';
import type { ModelConfig } from '../config/gateway-config';
import type { TracingSettings } from '../config/settings/tracing.settings';
import type { AdmittedCall } from '../forwarding/request-state';
import type { LineRegistry } from '../upstream/line-registry';
import type { CallTracer } from './call-telemetry';
import { lineAddressOf, startCallTracing, tracingResource } from './tracing';
import { callFacts } from '../../test/support/call-facts';

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';

function settings(sampler: TracingSettings['sampler']['name'] = 'parentbased_always_on'): TracingSettings {
  // A long delay: only shutdown sends the spans, so a test sees all of them at once.
  return {
    sampler: { name: sampler, ratio: 1 },
    batch: { scheduledDelayMillis: 60_000, exportTimeoutMillis: 5_000, maxQueueSize: 100, maxExportBatchSize: 100 },
  };
}

/** Keeps what the batch processor exports. */
class CollectingExporter implements SpanExporter {
  readonly spans: ReadableSpan[] = [];

  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.spans.push(...spans);
    done({ code: 0 });
  }

  async shutdown(): Promise<void> {}
}

const FACTS = callFacts();

interface Fixture {
  tracer: CallTracer;
  exporter: CollectingExporter;
}

async function fixture(sampler?: TracingSettings['sampler']['name']): Promise<Fixture> {
  const exporter = new CollectingExporter();
  const tracer = await startCallTracing(settings(sampler), { log: pino({ level: 'silent' }), lineAddress: () => undefined, exporter });
  return { tracer, exporter };
}

/** A chat call that arrived a second ago and went to line-a 4 ms later; its answer ended after 60 ms, its record 2 ms after. */
function calledRequest(tracer: CallTracer, headers: Record<string, string> = {}): FastifyRequest {
  const startedAt = performance.now() - 1_000;
  const request = {
    id: 'request-1',
    headers,
    startedAt,
    call: { entry: 'chat_completions', model: { id: 'chat-model', upstreamModel: 'vendor-chat-1' } as ModelConfig } as AdmittedCall,
    forwarded: {
      upstreamStartedAt: startedAt + 4,
      attempts: [{ line: 'line-a', outcome: 'answered', status: 200, startedAt: startedAt + 4, endedAt: startedAt + 9 }],
      upstreamEndedAt: startedAt + 44,
      settledAt: startedAt + 46,
      responseClosed: false,
      record: {
        interface: 'chat_completions',
        line: 'line-a',
        translatedTo: null,
        status: 200,
        errorCode: null,
        usage: FACTS.usage,
        costNano: 90n,
        upstreamHeadersMs: 5,
      },
    },
  } as unknown as FastifyRequest;
  request.trace = tracer.begin(request);
  return request;
}

function milliseconds([seconds, nanoseconds]: [number, number]): number {
  return seconds * 1_000 + nanoseconds / 1e6;
}

describe(startCallTracing.name, () => {
  it("continues a client's traceparent: its trace id, and a span id of the gateway's own", async () => {
    const { tracer } = await fixture();
    const trace = tracer.begin({ headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=x' } } as unknown as FastifyRequest);

    expect(trace.traceId).toBe(CLIENT_TRACE);
    expect(trace.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(trace.spanId).not.toBe(CLIENT_SPAN);
    expect(trace.parent).toMatchObject({ traceId: CLIENT_TRACE, spanId: CLIENT_SPAN, traceFlags: 1, isRemote: true });
    expect(trace.parent!.traceState!.get('vendor')).toBe('x');
    await tracer.shutdown();
  });

  it('starts a trace for a call without a valid traceparent', async () => {
    const { tracer } = await fixture();
    for (const headers of [{}, { traceparent: 'not-a-traceparent' }, { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01` }]) {
      const trace = tracer.begin({ headers } as unknown as FastifyRequest);
      expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(trace.traceId).not.toBe(CLIENT_TRACE);
      expect(trace.parent).toBeUndefined();
    }
    await tracer.shutdown();
  });

  it('exports the server span with the ids made at arrival, under the client span, and its children under it, with the noted times', async () => {
    const { tracer, exporter } = await fixture();
    const request = calledRequest(tracer, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    tracer.record(request, FACTS);
    await tracer.shutdown();

    const server = exporter.spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.name).toBe('chat chat-model');
    expect(server.spanContext()).toMatchObject({ traceId: CLIENT_TRACE, spanId: request.trace!.spanId });
    expect(server.parentSpanContext).toMatchObject({ spanId: CLIENT_SPAN, isRemote: true });
    expect(server.attributes).toMatchObject({ 'gateway.request_id': 'request-1', 'gen_ai.request.model': 'chat-model', 'gen_ai.usage.output_tokens': 7 });
    expect(milliseconds(server.duration)).toBeCloseTo(60, 3);
    const children = exporter.spans.filter((span) => span !== server);
    expect(children.map((span) => [span.name, span.kind])).toEqual([
      ['admission', SpanKind.INTERNAL],
      ['chat vendor-chat-1', SpanKind.CLIENT],
      ['metering', SpanKind.INTERNAL],
    ]);
    for (const child of children) {
      expect(child.spanContext().traceId).toBe(CLIENT_TRACE);
      expect(child.parentSpanContext?.spanId).toBe(request.trace!.spanId);
      expect(child.spanContext().spanId).not.toBe(request.trace!.spanId);
    }
    const [admission, attempt] = children;
    expect(milliseconds(attempt!.startTime) - milliseconds(server.startTime)).toBeCloseTo(4, 3);
    expect(milliseconds(attempt!.duration)).toBeCloseTo(40, 3);
    expect(milliseconds(admission!.duration)).toBeCloseTo(4, 3);
  });

  it('gives a span of a failed operation an error status', async () => {
    const { tracer, exporter } = await fixture();
    tracer.record(calledRequest(tracer), { ...FACTS, status: 502, errorCode: 'upstream_failed' });
    await tracer.shutdown();

    const server = exporter.spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream_failed' });
    expect(server.parentSpanContext).toBeUndefined();
  });

  it('follows the sampler: a client that did not sample its trace gets none from the gateway either', async () => {
    const unsampled = await fixture();
    const notSampled = calledRequest(unsampled.tracer, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-00` });
    unsampled.tracer.record(notSampled, FACTS);
    const sampled = calledRequest(unsampled.tracer, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` });
    await unsampled.tracer.shutdown();
    const off = await fixture('always_off');
    const never = calledRequest(off.tracer);
    off.tracer.record(never, FACTS);
    await off.tracer.shutdown();

    expect([unsampled.exporter.spans, off.exporter.spans]).toEqual([[], []]);
    // Decided at arrival, so the report of an unsampled call makes nothing; its log line still has the ids.
    expect([notSampled.trace!.sampled, sampled.trace!.sampled, never.trace!.sampled]).toEqual([false, true, false]);
    expect(never.trace!.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe(tracingResource.name, () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('names the service model-gateway unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise', () => {
    delete process.env.OTEL_SERVICE_NAME;
    delete process.env.OTEL_RESOURCE_ATTRIBUTES;
    expect(tracingResource(resources).attributes['service.name']).toBe('model-gateway');
    process.env.OTEL_RESOURCE_ATTRIBUTES = 'service.name=from-attributes,deployment.environment.name=staging';
    expect(tracingResource(resources).attributes).toMatchObject({ 'service.name': 'from-attributes', 'deployment.environment.name': 'staging' });
    process.env.OTEL_SERVICE_NAME = 'gateway-eu';
    expect(tracingResource(resources).attributes['service.name']).toBe('gateway-eu');
  });
});

describe(lineAddressOf.name, () => {
  it("reads a line's host and port from its base URL, with the scheme's port when none is given", () => {
    const urls: Record<string, string> = { a: 'https://api.vendor.example/v1', b: 'http://127.0.0.1:9100', c: 'http://[::1]:8080' };
    const lines = { find: (id: string) => (urls[id] ? { config: { baseUrl: urls[id] } } : undefined) } as unknown as LineRegistry;
    const addressOf = lineAddressOf(lines);

    expect(['a', 'b', 'c', 'gone'].map(addressOf)).toEqual([
      { address: 'api.vendor.example', port: 443 },
      { address: '127.0.0.1', port: 9100 },
      { address: '::1', port: 8080 },
      undefined,
    ]);
  });
});
