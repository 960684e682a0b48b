import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { performance } from 'node:perf_hooks';
import { format } from 'node:util';
import type { Logger } from 'pino';
import type { Context, DiagLogger, HrTime, Span, SpanContext, SpanKind } from '@opentelemetry/api';
import type { IdGenerator, Sampler, SpanExporter } from '@opentelemetry/sdk-trace';
import type { TracingSettings } from '../config/settings/tracing.settings';
import { LineRegistry } from '../upstream/line-registry';
import { callSpansOf, LineAddress, SpanPlan, SpanRole } from './call-spans';
import { CallTelemetry, type CallTracer } from './call-telemetry';
import type { TraceIds } from './trace-ids';

/**
 * OpenTelemetry traces of calls (docs/operations.md "Traces"), on only when an OTLP endpoint is
 * configured. The SDK's modules are loaded here, when tracing starts: a gateway without tracing
 * never loads them, and its request path meets one undefined check (CallTelemetry).
 *
 * Nothing is live while a call runs: at arrival the call gets the ids of its server span (its
 * log line carries them), and when it is reported its spans are made at once, with the start and
 * end times the request noted (call-spans.ts). No context manager is installed, so no async
 * hooks run, and nothing is propagated upstream: the forwarded headers are a fixed list.
 */

export interface TracingOptions {
  log: Logger;
  lineAddress: LineAddress;
  /** Default: OTLP over HTTP, configured by the exporter's own `OTEL_EXPORTER_OTLP_*` variables. */
  exporter?: SpanExporter;
}

/** Longest wait at shutdown for the last spans to be sent: a collector that is away does not hold the exit up. */
const SHUTDOWN_PATIENCE_MS = 5_000;

/** Resource attribute the gateway names itself by unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` say otherwise. */
export const DEFAULT_SERVICE_NAME = 'model-gateway';

/** Starts tracing the calls of `app` (its CallTelemetry, its lines' addresses). */
export async function traceCalls(app: NestFastifyApplication, settings: TracingSettings, log: Logger): Promise<void> {
  const tracer = await startCallTracing(settings, { log, lineAddress: lineAddressOf(app.get(LineRegistry)) });
  // Every request gets the member up front, so traced requests keep one shape.
  app.getHttpAdapter().getInstance().decorateRequest('trace', undefined);
  app.get(CallTelemetry).traceWith(tracer);
}

/** `server.address` and `server.port` of a line, from its base URL (read once per URL). */
export function lineAddressOf(lines: LineRegistry): LineAddress {
  const known = new Map<string, ReturnType<LineAddress>>();
  return (id) => {
    const baseUrl = lines.find(id)?.config.baseUrl;
    if (baseUrl === undefined) return undefined;
    if (!known.has(baseUrl)) known.set(baseUrl, addressOf(baseUrl));
    return known.get(baseUrl);
  };
}

function addressOf(baseUrl: string): ReturnType<LineAddress> {
  try {
    const url = new URL(baseUrl);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { address: url.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return undefined;
  }
}

/** The tracer of the gateway's calls; the SDK's modules are loaded now. */
export async function startCallTracing(settings: TracingSettings, options: TracingOptions): Promise<CallTracer> {
  const [api, core, sdk, resources, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  // Export failures (a collector away) and the SDK's warnings go to the gateway's log.
  api.diag.setLogger(diagLoggerOf(options.log), { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true });
  const ids = new PresetIdGenerator(new sdk.RandomIdGenerator());
  const sampler = samplerOf(sdk, settings.sampler);
  const provider = new sdk.TracerProvider({
    resource: tracingResource(resources),
    sampler,
    idGenerator: ids,
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: options.exporter ?? new otlp.OTLPTraceExporter(), ...settings.batch })],
  });
  const kinds: Record<SpanRole, SpanKind> = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL };
  const tracer = provider.getTracer('model-gateway');

  /** A span of the plan, started at its time (`at` turns a `performance.now()` time into the wall clock's). */
  function emit(plan: SpanPlan, parent: Context, at: (time: number) => HrTime): Span {
    const span = tracer.startSpan(plan.name, { kind: kinds[plan.kind], startTime: at(plan.startedAt), attributes: plan.attributes }, parent);
    if (plan.error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: plan.error });
    return span;
  }

  return {
    begin(request) {
      const parent = remoteParentOf(core, request.headers.traceparent, request.headers.tracestate);
      const traceId = parent?.traceId ?? ids.random.generateTraceId();
      // The built-in samplers decide by the trace id and the parent alone, as they will when the
      // server span starts: deciding now spares an unsampled call its span plan and its spans.
      const context = parent ? api.trace.setSpanContext(api.ROOT_CONTEXT, parent) : api.ROOT_CONTEXT;
      const decision = sampler.shouldSample(context, traceId, '', api.SpanKind.SERVER, {}, []).decision;
      return { traceId, spanId: ids.random.generateSpanId(), parent, sampled: decision !== sdk.SamplingDecision.NOT_RECORD };
    },

    record(request, facts) {
      const trace = request.trace;
      // Ids are made in the onRequest hook: a request reported without them gets no spans.
      if (trace === undefined || !trace.sampled) return;
      const plans = callSpansOf(request, facts, options.lineAddress);
      const parent = trace.parent ? api.trace.setSpanContext(api.ROOT_CONTEXT, trace.parent) : api.ROOT_CONTEXT;
      // One wall-clock anchor for all spans of the call keeps their times exact against each
      // other; the SDK would anchor each span anew, to the millisecond.
      const epoch = core.millisToHrTime(Date.now() - performance.now());
      const at = (time: number) => core.addHrTimes(epoch, core.millisToHrTime(time));
      // The server span takes the ids the call got at arrival, which its log line already carries.
      ids.preset = trace;
      let server: Span;
      try {
        server = emit(plans.server, parent, at);
      } finally {
        ids.preset = undefined;
      }
      const inServer = api.trace.setSpan(api.ROOT_CONTEXT, server);
      for (const plan of plans.children) emit(plan, inServer, at).end(at(plan.endedAt));
      server.end(at(plans.server.endedAt));
    },

    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const patience = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_PATIENCE_MS)));
      try {
        await Promise.race([provider.shutdown(), patience]);
      } finally {
        clearTimeout(timer);
        api.diag.disable();
      }
    },
  };
}

/**
 * The SDK's random ids, except that the next span started while `preset` is set takes those ids:
 * the SDK asks its generator for a span's ids, and the server span's were made at arrival.
 * Spans are started synchronously, so nothing else runs while `preset` is set.
 */
class PresetIdGenerator implements IdGenerator {
  preset: TraceIds | undefined;

  constructor(readonly random: IdGenerator) {}

  generateTraceId(): string {
    return this.preset?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.preset?.spanId ?? this.random.generateSpanId();
  }
}

type CoreModule = typeof import('@opentelemetry/core');
type SdkModule = typeof import('@opentelemetry/sdk-trace');
type ResourcesModule = typeof import('@opentelemetry/resources');

/** The client's span of a valid W3C `traceparent` (with its `tracestate`); undefined otherwise, and the call starts a trace. */
function remoteParentOf(core: CoreModule, traceparent: string | string[] | undefined, tracestate: string | string[] | undefined): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const parent = core.parseTraceParent(traceparent);
  if (parent === null) return undefined;
  const state = Array.isArray(tracestate) ? tracestate.join(',') : tracestate;
  return { ...parent, isRemote: true, traceState: state ? new core.TraceState(state) : undefined };
}

/** `service.name` the gateway's own unless `OTEL_RESOURCE_ATTRIBUTES` or `OTEL_SERVICE_NAME` (which wins) name another; the SDK's attributes. */
export function tracingResource(resources: ResourcesModule): ReturnType<ResourcesModule['defaultResource']> {
  const fromEnvironment = resources.detectResources({ detectors: [resources.resourceAttributesEnvDetector, resources.serviceNameEnvDetector] });
  return resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
    .merge(fromEnvironment);
}

/** `OTEL_TRACES_SAMPLER`, which the SDK no longer reads itself. */
function samplerOf(sdk: SdkModule, setting: TracingSettings['sampler']): Sampler {
  switch (setting.name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(setting.ratio);
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(setting.ratio) });
  }
}

/** The SDK's own messages as warnings of the gateway's log. */
function diagLoggerOf(log: Logger): DiagLogger {
  const write = (message: string, ...args: unknown[]) => log.warn({ context: 'OpenTelemetry' }, format(message, ...args));
  const ignore = () => undefined;
  return { error: write, warn: write, info: ignore, debug: ignore, verbose: ignore };
}
