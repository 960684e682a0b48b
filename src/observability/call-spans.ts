import type { FastifyRequest } from 'fastify';
import type { UsageFigures } from '../metering/usage-figures';
import type { AttemptNote } from '../upstream/forward.service';
import '../forwarding/request-state';
import type { CallFacts } from './call-facts';

/**
 * The spans of one call, planned from what the request carries when it is reported: every
 * boundary is a `performance.now()` time noted on the way (arrival, each attempt, the upstream
 * exchange's end, the record), so nothing is timed live for traces. Pure: tracing.ts hands the
 * plans to the OpenTelemetry SDK. Names and attributes follow the semantic conventions (HTTP
 * server, GenAI client spans); what they do not name is under `gateway.`.
 */

export type SpanRole = 'server' | 'client' | 'internal';
export type SpanAttributes = Record<string, string | number | boolean>;

export interface SpanPlan {
  name: string;
  kind: SpanRole;
  /** `performance.now()` times. */
  startedAt: number;
  endedAt: number;
  attributes: SpanAttributes;
  /** Set when the span's operation failed: the span's status is an error with this message. */
  error?: string;
}

export interface CallSpans {
  server: SpanPlan;
  /** Children of the server span, in the order they started. */
  children: SpanPlan[];
}

/** Where a line sends its calls (`server.address`, `server.port` of its attempts). */
export type LineAddress = (line: string) => { address: string; port: number } | undefined;

/**
 * `gen_ai.operation.name` of an interface; undefined for what is no model call (admin routes,
 * the model list).
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/
 */
export function operationOf(entry: string): string | undefined {
  switch (entry) {
    case 'chat_completions':
    case 'responses':
    case 'messages':
      return 'chat';
    case 'embeddings':
      return 'embeddings';
    case 'count_tokens':
      return 'count_tokens';
  }
  if (entry.startsWith('images_') || entry.startsWith('video_') || entry.startsWith('speech_')) return 'generate_content';
  return undefined;
}

/**
 * `gen_ai.provider.name` of the protocol a line is spoken to: the conventions make it the flavour
 * of the API (a vLLM line speaking chat completions is `openai`); `server.address` says who
 * answered. Undefined for the vendor protocols the conventions do not name.
 * @see https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/
 */
export function providerOf(protocol: string): string | undefined {
  switch (protocol) {
    case 'chat_completions':
    case 'responses':
    case 'embeddings':
    case 'images_a':
    case 'images_a_edits':
      return 'openai';
    case 'messages':
    case 'count_tokens':
      return 'anthropic';
    case 'images_c':
      return 'gcp.gemini';
    default:
      return undefined;
  }
}

/**
 * The GenAI name of a usage figure; figures the conventions lack keep theirs under `gateway.usage.`.
 * The conventions name only the cache-write total, so the writes by duration
 * (`cache_write_5m_input_tokens`, `cache_write_1h_input_tokens`) stay gateway figures beside it.
 */
export function usageAttributeOf(figure: string): string {
  switch (figure) {
    case 'input_tokens':
      return 'gen_ai.usage.input_tokens';
    case 'output_tokens':
      return 'gen_ai.usage.output_tokens';
    case 'cached_input_tokens':
      return 'gen_ai.usage.cache_read.input_tokens';
    case 'cache_write_input_tokens':
      return 'gen_ai.usage.cache_creation.input_tokens';
    case 'reasoning_tokens':
      return 'gen_ai.usage.reasoning.output_tokens';
    default:
      return `gateway.usage.${figure}`;
  }
}

function addUsage(attributes: SpanAttributes, usage: UsageFigures | undefined): void {
  for (const figure in usage) {
    const value = usage[figure];
    if (value !== undefined) attributes[usageAttributeOf(figure)] = value;
  }
}

/** Sets the attributes whose value is known (null: not known, left out). */
function addKnown(attributes: SpanAttributes, known: Record<string, string | number | boolean | null | undefined>): void {
  for (const name in known) {
    const value = known[name];
    if (value !== null && value !== undefined) attributes[name] = value;
  }
}

/** The spans of a request that is over; `facts` as the log line has them. */
export function callSpansOf(request: FastifyRequest, facts: CallFacts, lineAddress: LineAddress): CallSpans {
  const forwarded = request.forwarded;
  const answerEndedAt = request.startedAt + facts.durationMs;
  const children: SpanPlan[] = [];
  const admission = admissionSpanOf(request, facts, answerEndedAt);
  if (admission) children.push(admission);
  const attempts = forwarded?.attempts ?? [];
  const relayed = relayedAttemptOf(attempts, facts);
  attempts.forEach((attempt, index) => children.push(attemptSpanOf(request, facts, attempt, index, attempt === relayed, lineAddress)));
  const translation = translationSpanOf(request, facts, relayed);
  if (translation) children.push(translation);
  const metering = meteringSpanOf(request, facts);
  if (metering) children.push(metering);
  // The gateway's work on the call ends with its record, which may come after the answer's end.
  const endedAt = Math.max(answerEndedAt, forwarded?.settledAt ?? 0);
  return { server: serverSpanOf(request, facts, endedAt), children };
}

function serverSpanOf(request: FastifyRequest, facts: CallFacts, endedAt: number): SpanPlan {
  const operation = operationOf(facts.entry);
  const name = operation && facts.model ? `${operation} ${facts.model}` : facts.route ? `${facts.method} ${facts.route}` : facts.method;
  const attributes: SpanAttributes = {};
  addKnown(attributes, {
    'http.request.method': facts.method,
    'http.route': facts.route,
    'http.response.status_code': facts.status,
    'gen_ai.operation.name': operation,
    'gen_ai.request.model': facts.model,
    'gen_ai.request.stream': facts.stream,
    'gateway.request_id': facts.requestId,
    'gateway.client_request_id': facts.clientRequestId,
    'gateway.entry': facts.entry,
    'gateway.key_prefix': facts.keyPrefix,
    'gateway.owner': facts.owner,
    'gateway.line': facts.line,
    'gateway.translated_to': facts.translatedTo,
    'gateway.error_code': facts.errorCode,
  });
  addUsage(attributes, facts.usage);
  // HTTP server spans: a 4xx is the client's error, not the server's.
  const error = facts.status >= 500 ? (facts.errorCode ?? String(facts.status)) : undefined;
  if (error !== undefined) attributes['error.type'] = error;
  return { name, kind: 'server', startedAt: request.startedAt, endedAt, attributes, error };
}

/**
 * From arrival until the call went upstream: the body, the key, the model's scope, limits and
 * quota, and for a translated call the request's translation (no time is noted between them).
 * A request refused on the way is all admission, until its answer's head. Requests that were
 * neither admitted nor refused (the model list, admin reads) have none.
 */
function admissionSpanOf(request: FastifyRequest, facts: CallFacts, answerEndedAt: number): SpanPlan | undefined {
  const forwarded = request.forwarded;
  const refused = forwarded === undefined && facts.status >= 400;
  if (request.call === undefined && !refused) return undefined;
  const headAt = facts.firstByteMs === null ? answerEndedAt : request.startedAt + facts.firstByteMs;
  const attributes: SpanAttributes = { 'gateway.admitted': forwarded !== undefined };
  if (refused && facts.errorCode !== null) attributes['gateway.error_code'] = facts.errorCode;
  const error = refused && facts.status >= 500 ? (facts.errorCode ?? String(facts.status)) : undefined;
  return { name: 'admission', kind: 'internal', startedAt: request.startedAt, endedAt: forwarded?.upstreamStartedAt ?? headAt, attributes, error };
}

/**
 * The attempt whose answer the client got: the last one, when it was answered by the line that
 * the record names. (An earlier answer read whole and relayed after later lines failed keeps
 * its own times: its body was read before those attempts.)
 */
function relayedAttemptOf(attempts: readonly AttemptNote[], facts: CallFacts): AttemptNote | undefined {
  const last = attempts.at(-1);
  return last !== undefined && last.status !== null && last.line === facts.line ? last : undefined;
}

/**
 * One attempt on a line (a GenAI client span): until its answer's head or its failure; the
 * relayed one until the upstream exchange ended, its answer read and passed on.
 */
function attemptSpanOf(request: FastifyRequest, facts: CallFacts, attempt: AttemptNote, index: number, relayed: boolean, lineAddress: LineAddress): SpanPlan {
  const model = request.call?.model;
  const lineModel = model?.lineModels?.[attempt.line] ?? model?.upstreamModel ?? facts.model;
  const protocol = facts.translatedTo ?? facts.entry;
  const operation = operationOf(protocol) ?? operationOf(facts.entry) ?? facts.entry;
  const address = lineAddress(attempt.line);
  const attributes: SpanAttributes = {};
  addKnown(attributes, {
    'gen_ai.operation.name': operation,
    'gen_ai.request.model': lineModel,
    'gen_ai.provider.name': providerOf(protocol),
    'server.address': address?.address,
    'server.port': address?.port,
    'http.response.status_code': attempt.status,
    'gateway.line': attempt.line,
    'gateway.attempt': index + 1,
    'gateway.attempt.outcome': attempt.outcome,
  });
  if (relayed && attempt.outcome === 'answered') addUsage(attributes, facts.usage);
  const failed = attempt.outcome !== 'answered' || (attempt.status !== null && attempt.status >= 400);
  const error = failed ? (attempt.status !== null ? String(attempt.status) : attempt.outcome) : undefined;
  if (error !== undefined) attributes['error.type'] = error;
  const upstreamEndedAt = request.forwarded!.upstreamEndedAt;
  const endedAt = relayed && upstreamEndedAt !== undefined ? Math.max(attempt.endedAt, upstreamEndedAt) : attempt.endedAt;
  return { name: lineModel ? `${operation} ${lineModel}` : operation, kind: 'client', startedAt: attempt.startedAt, endedAt, attributes, error };
}

/**
 * A translated call's answer translated into the called protocol as it is relayed: from the
 * answer's head (the relayed attempt's end) to the end of the upstream exchange. The request's
 * translation happens before the call goes upstream, inside the admission span.
 */
function translationSpanOf(request: FastifyRequest, facts: CallFacts, relayed: AttemptNote | undefined): SpanPlan | undefined {
  const forwarded = request.forwarded;
  if (facts.translatedTo === null || forwarded?.upstreamEndedAt === undefined) return undefined;
  return {
    name: 'translation',
    kind: 'internal',
    startedAt: relayed?.endedAt ?? forwarded.upstreamStartedAt,
    endedAt: forwarded.upstreamEndedAt,
    attributes: { 'gateway.translation.from': facts.entry, 'gateway.translation.to': facts.translatedTo },
  };
}

/** From the upstream exchange's end to the call's usage record (figures priced, the record queued). */
function meteringSpanOf(request: FastifyRequest, facts: CallFacts): SpanPlan | undefined {
  const forwarded = request.forwarded;
  if (forwarded?.record === undefined || forwarded.upstreamEndedAt === undefined || forwarded.settledAt === undefined) return undefined;
  const attributes: SpanAttributes = { 'gateway.cost_nano': Number(facts.costNano) };
  addUsage(attributes, facts.usage);
  return { name: 'metering', kind: 'internal', startedAt: forwarded.upstreamEndedAt, endedAt: forwarded.settledAt, attributes };
}
