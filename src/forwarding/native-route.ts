import type { AdmittedCall } from './request-state';
import { readValue, splicedParts } from '../request-body/json-splice';
import { UpstreamBody, upstreamBodyOf } from '../upstream/upstream-client';
import { ChatMeter, EmbeddingsMeter, MessagesMeter, ResponseMeter, ResponsesMeter, UnbilledMeter } from '../metering/response-meter';

/** How one entry point is forwarded natively: where to, with which body, metered how. */
export interface NativeRoute {
  /** The interface name in usage records. */
  name: string;
  /** The upstream path, fixed or (format C: the upstream model is in it) per call. */
  upstreamPath: string | ((call: AdmittedCall) => string);
  /** The body sent upstream: the client's bytes with only `model` (and usage options) changed. */
  upstreamBody(call: AdmittedCall): UpstreamBody;
  meter(call: AdmittedCall): ResponseMeter;
  /** Why the gateway refuses the call without forwarding it (400), if it does. */
  refusal?(call: AdmittedCall): string | undefined;
  /** A call sent upstream runs to its end and is billed even when the client leaves (images). */
  outlivesClient?: boolean;
}

export function upstreamPathOf(route: NativeRoute, call: AdmittedCall): string {
  return typeof route.upstreamPath === 'string' ? route.upstreamPath : route.upstreamPath(call);
}

/** The call as a line with its own name for the model sees it: routes build its path and body from `model.upstreamModel`. */
export function onLineModel(call: AdmittedCall, upstreamModel: string): AdmittedCall {
  return { ...call, model: { ...call.model, upstreamModel } };
}

export function replaceModel(call: AdmittedCall, extra?: Map<string, string>, additions?: Array<[string, string]>): UpstreamBody {
  const replacements = new Map([['model', JSON.stringify(call.model.upstreamModel)]]);
  if (extra) for (const [key, value] of extra) replacements.set(key, value);
  return upstreamBodyOf(splicedParts(call.body, call.fields, replacements, additions), call.spool);
}

function streamOptions(call: AdmittedCall): Record<string, unknown> | undefined {
  const field = call.fields.get('stream_options');
  if (!field) return undefined;
  const value = readValue(call.body, field);
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function clientWantsUsageChunk(call: AdmittedCall): boolean {
  return call.stream && streamOptions(call)?.include_usage === true;
}

/**
 * Chat-completions: streaming requests get `stream_options.include_usage` switched on so the
 * stream can be metered (SPEC.md Native forwarding 2).
 */
export const CHAT_COMPLETIONS_ROUTE: NativeRoute = {
  name: 'chat_completions',
  upstreamPath: '/v1/chat/completions',
  upstreamBody(call) {
    if (!call.stream || clientWantsUsageChunk(call)) return replaceModel(call);
    // The client's options are parsed anew for this: set on them, not copied (see forward.service.ts on spreads).
    const requested = streamOptions(call) ?? {};
    requested.include_usage = true;
    const options = JSON.stringify(requested);
    if (call.fields.has('stream_options')) return replaceModel(call, new Map([['stream_options', options]]));
    return replaceModel(call, undefined, [['stream_options', options]]);
  },
  meter: (call) => new ChatMeter(clientWantsUsageChunk(call)),
};

export const RESPONSES_ROUTE: NativeRoute = {
  name: 'responses',
  upstreamPath: '/v1/responses',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new ResponsesMeter(),
};

export const MESSAGES_ROUTE: NativeRoute = {
  name: 'messages',
  upstreamPath: '/v1/messages',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new MessagesMeter(),
};

export const COUNT_TOKENS_ROUTE: NativeRoute = {
  name: 'count_tokens',
  upstreamPath: '/v1/messages/count_tokens',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new UnbilledMeter(),
};

export const EMBEDDINGS_ROUTE: NativeRoute = {
  name: 'embeddings',
  upstreamPath: '/v1/embeddings',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new EmbeddingsMeter(),
};
