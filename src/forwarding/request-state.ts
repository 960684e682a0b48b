import type { Principal } from '../auth/principal';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import type { TopLevelField } from '../request-body/json-scan';
import type { FormPart } from '../request-body/multipart-form';
import type { BodySpool } from '../request-body/body-spool';
import type { TextProtocol } from '../translation/translation-routes';
import type { UsageDraft } from '../metering/usage-draft';
import type { AttemptNote } from '../upstream/forward.service';
import type { CallTrace } from '../observability/trace-ids';

/** What the guards established about a data-plane call, handed to the services. */
export interface AdmittedCall {
  entry: InterfaceName;
  /** Set when the model lacks the entry's interface and the call is translated to this protocol. */
  translateTo?: TextProtocol;
  model: ModelConfig;
  /** The body, or for a spooled body its skeleton (body-skeleton.ts): what the guards and routes read and cut. */
  body: Buffer;
  /**
   * Set for a body kept in a file: pieces cut from `body` go upstream as the file's ranges
   * (`upstreamBodyOf`). Values read from the skeleton have strings past 4 KiB cut: one that goes
   * upstream again in another form is read with `spool.value`.
   */
  spool?: BodySpool;
  /** Top-level JSON members; empty for a form body. */
  fields: Map<string, TopLevelField>;
  /** The parts of a `multipart/form-data` body (format A edits); absent for JSON. */
  form?: FormPart[];
  stream: boolean;
  /** The `X-Gateway-Tags` of the call (call-labels.ts); absent or null: none. */
  tags?: readonly string[] | null;
  /** The end user the body names (`user`, `metadata.user_id`); absent or null: none. */
  endUser?: string | null;
}

/** What the call's log line and metrics take from its usage record (or, when the record is deferred, its outcome). */
export type RecordedCall = Pick<UsageDraft, 'interface' | 'line' | 'translatedTo' | 'status' | 'errorCode' | 'usage' | 'costNano' | 'upstreamHeadersMs'>;

/** The upstream part of a call, kept by ForwardedCall for the call's telemetry (src/observability). */
export interface ForwardedState {
  /** `performance.now()` when the call went to its first line. */
  upstreamStartedAt: number;
  /** Every attempt on a line, in order (ForwardService adds them). */
  attempts: AttemptNote[];
  /** `performance.now()` when the upstream exchange was over: the answer relayed, or the call failed. */
  upstreamEndedAt?: number;
  /** `performance.now()` when ForwardedCall was done, its record made; noted only while tracing (the metering span ends here). */
  settledAt?: number;
  /** Set once the call left a record (absent when no line was tried: every line busy or cooling). */
  record?: RecordedCall;
  /** The response closed while the call was still running; its end reports the call. */
  responseClosed: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    call?: AdmittedCall;
    /** `performance.now()` when the request arrived. */
    startedAt: number;
    /** Set when the call went upstream (ForwardedCall). */
    forwarded?: ForwardedState;
    /** The gateway error code the request was answered with (the exception filter). */
    errorCode?: string;
    /** The ids of the call's server span, set at arrival while tracing is on (observability/tracing.ts). */
    trace?: CallTrace;
    /** A streaming call counted among the replica's streams (ReplicaLimits) until its response closes. */
    streamOpen: boolean;
  }
}
