import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import type { UsageDraft } from './usage-draft';
import type { UsageFigures } from './usage-figures';
import { type PriceBasis, recordCostOf } from './pricing';
import { priceSheetOf } from './price-sheets';
import { linesTriedOf } from '../upstream/line-order';

const PRINTABLE_ASCII = /^[\x20-\x7e]{1,128}$/;

/** SPEC.md: kept only when it has at most 128 printable ASCII characters; otherwise ignored. */
export function clientRequestIdOf(request: FastifyRequest): string | null {
  const value = request.headers['x-client-request-id'];
  return typeof value === 'string' && PRINTABLE_ASCII.test(value) ? value : null;
}

export interface CallOutcome {
  status: number;
  line: string | null;
  errorCode: string | null;
  figures: UsageFigures | undefined;
  /** What the price depends on beyond the figures (format B: each image's pixels). */
  priceBasis?: PriceBasis;
  upstreamHeadersMs: number | null;
  /** The record is written later, by whatever the call started (a video task, when it settles). */
  deferred?: boolean;
}

/**
 * Builds the usage record of a forwarded call from what the request path learnt. `translatedTo`
 * comes apart from the outcome: a copy of the outcome with it added (an object spread, on every
 * call) shows up in the CPU profile. `endedAt` (`performance.now()`): when the answer's end was
 * written, or when the call failed.
 */
export function usageDraftOf(request: FastifyRequest, interfaceName: string, outcome: CallOutcome, translatedTo: string | null, endedAt: number): UsageDraft {
  const call = request.call!;
  const principal = request.principal!;
  return {
    requestId: request.id,
    clientRequestId: clientRequestIdOf(request),
    keyId: principal.keyId,
    ownerId: principal.ownerId,
    model: call.model.id,
    interface: interfaceName,
    line: outcome.line,
    translatedTo,
    status: outcome.status,
    errorCode: outcome.errorCode,
    stream: call.stream,
    usage: outcome.figures,
    costNano: recordCostOf(outcome.figures, call.model, outcome.priceBasis),
    priceSheet: priceSheetOf(call.model),
    priceBasis: outcome.priceBasis ?? null,
    startedAt: new Date(Date.now() - (performance.now() - request.startedAt)),
    durationMs: Math.round(endedAt - request.startedAt),
    upstreamHeadersMs: outcome.upstreamHeadersMs === null ? null : Math.round(outcome.upstreamHeadersMs),
    tags: call.tags ?? null,
    endUser: call.endUser ?? null,
    linesTried: linesTriedOf(request.forwarded?.attempts),
  };
}
