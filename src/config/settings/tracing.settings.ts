import { numberFrom, positiveWholeFrom } from '../env-numbers';

/**
 * Settings of OpenTelemetry traces, from the standard `OTEL_*` variables (docs/configuration.md
 * "Traces"). The OTLP exporter reads its own variables (endpoint, headers, timeout, compression,
 * certificates) and the resource detectors `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`;
 * what is read here is what the trace SDK no longer reads itself: the sampler and the batching.
 */
export interface TracingSettings {
  sampler: { name: SamplerName; ratio: number };
  batch: {
    /** `OTEL_BSP_SCHEDULE_DELAY`: longest wait of a finished span before its batch is sent. */
    scheduledDelayMillis: number;
    /** `OTEL_BSP_EXPORT_TIMEOUT`: longest time one export may take. */
    exportTimeoutMillis: number;
    /** `OTEL_BSP_MAX_QUEUE_SIZE`: spans waiting beyond this are dropped (a collector away costs no memory past it). */
    maxQueueSize: number;
    /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: most spans per export. */
    maxExportBatchSize: number;
  };
}

/** The values of `OTEL_TRACES_SAMPLER` the SDK's own samplers cover. */
export const SAMPLER_NAMES = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const;
export type SamplerName = (typeof SAMPLER_NAMES)[number];

/** Protocols of `OTEL_EXPORTER_OTLP_PROTOCOL` that the HTTP exporter can serve (it sends JSON, which collectors take on the same path). */
const HTTP_PROTOCOLS = ['http/json', 'http/protobuf'];

function text(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * The trace settings of the environment, or undefined when tracing is off: no OTLP endpoint is
 * set, `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`. A value the gateway cannot
 * honour stops the start, naming the variable.
 */
export function tracingSettingsFrom(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (text(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') === undefined && text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') === undefined) return undefined;
  if (text(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporter = text(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase();
  if (exporter === 'none') return undefined;
  if (exporter !== undefined && exporter !== 'otlp')
    throw new Error(`OTEL_TRACES_EXPORTER must be otlp or none, got ${JSON.stringify(env.OTEL_TRACES_EXPORTER)}`);
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const protocol = text(env, name);
    if (protocol !== undefined && !HTTP_PROTOCOLS.includes(protocol)) {
      throw new Error(`${name} must be ${HTTP_PROTOCOLS.join(' or ')} (the gateway exports OTLP over HTTP), got ${JSON.stringify(env[name])}`);
    }
  }
  const batch = {
    scheduledDelayMillis: numberFrom(env, 'OTEL_BSP_SCHEDULE_DELAY', 5_000),
    exportTimeoutMillis: numberFrom(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000),
    maxQueueSize: positiveWholeFrom(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2_048),
    maxExportBatchSize: positiveWholeFrom(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
  };
  if (batch.maxExportBatchSize > batch.maxQueueSize) {
    throw new Error(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE (${batch.maxExportBatchSize}) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize})`);
  }
  return { sampler: samplerFrom(env), batch };
}

function samplerFrom(env: NodeJS.ProcessEnv): TracingSettings['sampler'] {
  const name = (text(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on') as SamplerName;
  if (!SAMPLER_NAMES.includes(name))
    throw new Error(`OTEL_TRACES_SAMPLER must be one of ${SAMPLER_NAMES.join(', ')}, got ${JSON.stringify(env.OTEL_TRACES_SAMPLER)}`);
  const argument = text(env, 'OTEL_TRACES_SAMPLER_ARG');
  // The argument is the ratio of the ratio samplers only; the others ignore it, as the SDKs do.
  if (!name.endsWith('traceidratio') || argument === undefined) return { name, ratio: 1 };
  const ratio = Number(argument);
  if (!(ratio >= 0 && ratio <= 1)) throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got ${JSON.stringify(env.OTEL_TRACES_SAMPLER_ARG)}`);
  return { name, ratio };
}
