import type { CanonicalEvent } from './canonical/events';
import type { StreamDecoder, StreamEncoder } from './canonical/stream-steps';
import type { TranslationContext } from './canonical/ids';
import type { CanonicalRequest, ReasoningOrigin } from './canonical/request';
import type { CanonicalError, CanonicalOutputPart, CanonicalResponse, CanonicalUsage } from './canonical/response';
import type { SseEvent } from './sse/decode-sse';
import type { TextProtocol, TranslatableEntry } from './translation-routes';
import { mergeDefined } from './members';
import { ClientRequestEcho, ENTRY_ADAPTERS, EntryAdapter, UPSTREAM_ADAPTERS, UpstreamAdapter } from './protocol-adapters';

/** SPEC.md: `max_output_tokens` absent and no model maximum in the catalog. */
export const FALLBACK_MAX_OUTPUT_TOKENS = 64_000;

/** One translated call, decided before anything is sent upstream. */
export interface TranslationPlan {
  entry: TranslatableEntry;
  upstream: TextProtocol;
  upstreamPath: string;
  upstreamBody: Record<string, unknown>;
  /** Client field names for `X-Gateway-Dropped`, in first-seen order. */
  dropped: string[];
  request: CanonicalRequest;
  echo: ClientRequestEcho;
  origin: ReasoningOrigin;
}

export interface PlanOptions {
  upstreamModel: string;
  /** The model's maximum output from the catalog, when it has one. */
  maxTokens?: number;
}

/**
 * Maps a client request of the called entry onto the upstream protocol. Throws
 * `TranslationRejection` for requests the translation path refuses (400).
 */
export function planTranslation(entry: TranslatableEntry, upstream: TextProtocol, body: Record<string, unknown>, options: PlanOptions): TranslationPlan {
  const entryAdapter = ENTRY_ADAPTERS[entry];
  const upstreamAdapter = UPSTREAM_ADAPTERS[upstream];
  const decoded = entryAdapter.decodeRequest(body, {
    upstreamModel: options.upstreamModel,
    defaultMaxOutputTokens: options.maxTokens ?? FALLBACK_MAX_OUTPUT_TOKENS,
  });
  const encoded = upstreamAdapter.encodeRequest(decoded.value);
  const droppedByUpstream = encoded.dropped.map((field) => clientFieldName(entryAdapter, field));
  return {
    entry,
    upstream,
    upstreamPath: upstreamAdapter.path,
    upstreamBody: encoded.value,
    dropped: [...new Set([...decoded.dropped, ...droppedByUpstream])],
    request: decoded.value,
    echo: { body, includeOpaqueReasoning: decoded.value.includeOpaqueReasoning === true },
    origin: { protocol: upstream, upstreamModel: options.upstreamModel },
  };
}

function clientFieldName(entry: EntryAdapter, canonicalField: string): string {
  return entry.fieldNames[canonicalField as keyof EntryAdapter['fieldNames']] ?? canonicalField;
}

/** A complete upstream JSON answer in the called protocol, with the usage it reported. */
export function translateAnswer(
  plan: TranslationPlan,
  upstreamBody: unknown,
  context: TranslationContext,
): { body: Record<string, unknown>; usage: CanonicalUsage } {
  const decoded = markCustomToolCalls(upstreamAdapter(plan).decodeResponse(upstreamBody, plan.origin), plan.request);
  return { body: ENTRY_ADAPTERS[plan.entry].encodeResponse(decoded, plan.echo, context), usage: decoded.usage };
}

/**
 * An upstream SSE stream as the called protocol's events, one upstream event at a time:
 * `read` returns what an upstream event gives the client, `end` what the client gets when the
 * upstream's events end (its final event read, or cut short). `onUsage` sees the usage figures
 * as they become known (the latest call holds the totals).
 *
 * The upstream's decoder, the usage observer and the called protocol's encoder run one after
 * the other, synchronously: the stream's loop awaits upstream chunks only. As a chain of async
 * generators each step would cost a promise and a microtask hop per event.
 */
export class StreamTranslation {
  private readonly decoder: StreamDecoder;
  private readonly encoder: StreamEncoder;
  private readonly observe: (event: CanonicalEvent) => CanonicalEvent;

  constructor(plan: TranslationPlan, context: TranslationContext, onUsage: (usage: CanonicalUsage) => void) {
    this.decoder = upstreamAdapter(plan).streamDecoder(plan.origin);
    this.encoder = ENTRY_ADAPTERS[plan.entry].streamEncoder(plan.echo, context);
    this.observe = usageObserver(customToolNames(plan.request), onUsage);
  }

  /** Nothing more is read: the client's stream is complete, or the upstream's final event was read. */
  get finished(): boolean {
    return this.encoder.done || this.decoder.done;
  }

  read(event: SseEvent): SseEvent[] {
    return this.encode(this.decoder.read(event));
  }

  /** The client stream's last events: nothing when it is complete, its proper end or an error when it is not. */
  end(): SseEvent[] {
    if (this.encoder.done) return [];
    const last = this.decoder.done ? [] : this.encode(this.decoder.cutShort());
    if (!this.encoder.done) last.push(...this.encoder.cutShort());
    return last;
  }

  private encode(events: CanonicalEvent[]): SseEvent[] {
    const encoded: SseEvent[] = [];
    for (const event of events) {
      encoded.push(...this.encoder.write(this.observe(event)));
      if (this.encoder.done) break;
    }
    return encoded;
  }
}

/** An upstream error answer re-expressed in the called protocol, status kept. */
export function translateError(plan: TranslationPlan, status: number, bodyText: string): { error: CanonicalError; body: Record<string, unknown> } {
  const error = upstreamAdapter(plan).decodeError(status, bodyText);
  return { error, body: ENTRY_ADAPTERS[plan.entry].encodeError(error) };
}

function upstreamAdapter(plan: TranslationPlan): UpstreamAdapter {
  return UPSTREAM_ADAPTERS[plan.upstream];
}

function customToolNames(request: CanonicalRequest): Set<string> {
  return new Set(request.tools.filter((tool) => tool.kind === 'custom').map((tool) => tool.name));
}

/**
 * Upstreams know custom tools only as functions; a call of one goes back to the client as a
 * custom tool call again.
 */
function markCustomToolCalls(response: CanonicalResponse, request: CanonicalRequest): CanonicalResponse {
  const custom = customToolNames(request);
  if (custom.size === 0) return response;
  const output = response.output.map((part): CanonicalOutputPart => (part.type === 'tool_call' && custom.has(part.name) ? { ...part, kind: 'custom' } : part));
  return { ...response, output };
}

/** Each canonical event on its way: usage figures reported as they come, custom tool calls marked. */
function usageObserver(customTools: Set<string>, onUsage: (usage: CanonicalUsage) => void): (event: CanonicalEvent) => CanonicalEvent {
  let usage: CanonicalUsage = {};
  return (event) => {
    if (event.type === 'usage' || (event.type === 'start' && event.usage)) {
      usage = mergeDefined(usage, event.type === 'usage' ? event.usage : (event.usage ?? {}));
      onUsage(usage);
    }
    return event.type === 'tool_call_start' && customTools.has(event.name) ? { ...event, kind: 'custom' } : event;
  };
}
