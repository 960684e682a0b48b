import { tracingSettingsFrom } from './tracing.settings';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe(tracingSettingsFrom.name, () => {
  it('is off without an OTLP endpoint, whatever else is set', () => {
    expect(tracingSettingsFrom({})).toBeUndefined();
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'gw' })).toBeUndefined();
  });

  it('is on with the general endpoint or the traces one, with the SDK defaults', () => {
    const defaults = {
      sampler: { name: 'parentbased_always_on', ratio: 1 },
      batch: { scheduledDelayMillis: 5_000, exportTimeoutMillis: 30_000, maxQueueSize: 2_048, maxExportBatchSize: 512 },
    };
    expect(tracingSettingsFrom(ENDPOINT)).toEqual(defaults);
    expect(tracingSettingsFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toEqual(defaults);
  });

  it('is off when the SDK is disabled or the traces exporter is none', () => {
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined();
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' })).toBeDefined();
  });

  it('takes the sampler and its ratio, the ratio only for the ratio samplers', () => {
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })?.sampler).toEqual({
      name: 'parentbased_traceidratio',
      ratio: 0.25,
    });
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'TraceIdRatio' })?.sampler).toEqual({ name: 'traceidratio', ratio: 1 });
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'always_off', OTEL_TRACES_SAMPLER_ARG: 'anything' })?.sampler).toEqual({
      name: 'always_off',
      ratio: 1,
    });
  });

  it('takes the batch settings', () => {
    const env = {
      ...ENDPOINT,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BSP_EXPORT_TIMEOUT: '1000',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10',
    };
    expect(tracingSettingsFrom(env)?.batch).toEqual({ scheduledDelayMillis: 200, exportTimeoutMillis: 1_000, maxQueueSize: 100, maxExportBatchSize: 10 });
  });

  it.each([
    [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'OTEL_TRACES_SAMPLER must be one of'],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1'],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG'],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER must be otlp or none'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf'],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: '0' }, 'OTEL_BSP_MAX_QUEUE_SIZE must be a whole number of at least 1'],
    [
      { OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' },
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE (20) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (10)',
    ],
    [{ OTEL_BSP_SCHEDULE_DELAY: 'soon' }, 'OTEL_BSP_SCHEDULE_DELAY must be a non-negative number'],
  ])('stops the start on a value it cannot honour: %j', (env, message) => {
    expect(() => tracingSettingsFrom({ ...ENDPOINT, ...env })).toThrow(message);
  });

  it('accepts http/protobuf, which the JSON exporter serves on the same path', () => {
    expect(tracingSettingsFrom({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })).toBeDefined();
  });
});
