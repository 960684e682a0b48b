import type { SpanContext } from '@opentelemetry/api';

/** The ids of a call's server span, made at its arrival while tracing is on (tracing.ts); its log line carries them. */
export interface TraceIds {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits. */
  spanId: string;
}

/** A call's place in a trace: its server span's ids, and the client's span it continues (an inbound `traceparent`). */
export interface CallTrace extends TraceIds {
  parent: SpanContext | undefined;
  /** The sampler's decision, made at arrival: an unsampled call makes no spans when it is reported. */
  sampled: boolean;
}
