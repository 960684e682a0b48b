import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import type { CanonicalPart, ReasoningOrigin } from '../canonical/request';
import type { CanonicalError, CanonicalUsage } from '../canonical/response';
import type { SseEvent } from '../sse/decode-sse';
import { encodeStreamWith, type StreamEncoder } from '../canonical/stream-steps';
import { messagesErrorType } from './encode-messages-error';
import { encodeMessagesStopReason } from './messages-stop-reason';
import { sealedSignature } from './messages-reasoning';
import { mergeDefined } from '../members';
import { encodeMessagesUsage, uncachedInputTokens } from './messages-usage';

/**
 * Canonical events → a messages stream, event for event as the API sends it:
 * `message_start`, per block `content_block_start` / `content_block_delta` / `content_block_stop`,
 * `message_delta` (stop reason and cumulative usage), `message_stop`.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
export function encodeMessagesStream(events: AsyncIterable<CanonicalEvent>, context: TranslationContext): AsyncGenerator<SseEvent> {
  return encodeStreamWith(new MessagesStreamWriter(context), events);
}

/** The keep-alive the gateway sends after 15 seconds without upstream output (SPEC.md "Events"). */
export function messagesPingEvent(): SseEvent {
  return sse({ type: 'ping' });
}

type Opaque = NonNullable<Extract<CanonicalPart, { type: 'reasoning' }>['opaque']>;

/** A canonical part and the content block it became (`blockIndex`, once opened). */
interface Part {
  type: 'text' | 'tool_use' | 'reasoning';
  blockIndex?: number;
  reasoningText: string;
  origin?: ReasoningOrigin;
  opaque?: Opaque;
}

const CANONICAL_ERROR_KINDS: ReadonlySet<string> = new Set<CanonicalError['kind']>([
  'invalid_request',
  'authentication',
  'permission',
  'not_found',
  'rate_limit',
  'overloaded',
  'server',
  'timeout',
]);

/** The messages stream written event by event (`StreamTranslation` chains it with a decoder). */
export class MessagesStreamWriter implements StreamEncoder {
  done = false;
  private started = false;
  private finished = false;
  private usage: CanonicalUsage = {};
  private readonly parts = new Map<number, Part>();
  /** Block indexes count from 0 without gaps: the SDK finds a block by its position. */
  private nextBlockIndex = 0;

  constructor(private readonly context: TranslationContext) {}

  cutShort(): SseEvent[] {
    return this.write({ type: 'end' });
  }

  write(event: CanonicalEvent): SseEvent[] {
    switch (event.type) {
      case 'start':
        if (this.started) return [];
        this.usage = mergeDefined(this.usage, event.usage ?? {});
        return this.messageStart(event.model);
      case 'text_start':
        return this.openPart(event.index, 'text', { type: 'text', text: '' });
      case 'text_delta':
        return this.blockDelta(event.index, TEXT_DELTA, event.text);
      case 'reasoning_start':
        // Opened on its first delta or at its end: only then is it known whether it is redacted.
        this.parts.set(event.index, { type: 'reasoning', reasoningText: '', origin: event.origin });
        return this.messageStart('');
      case 'reasoning_delta':
        return this.reasoningDelta(event.index, event.text);
      case 'reasoning_opaque':
        return this.reasoningOpaque(event);
      case 'tool_call_start':
        return this.openPart(event.index, 'tool_use', { type: 'tool_use', id: event.id, name: event.name, input: {} });
      case 'tool_call_delta':
        return this.blockDelta(event.index, INPUT_JSON_DELTA, event.arguments);
      case 'part_end':
        return this.close(event.index);
      case 'usage':
        this.usage = mergeDefined(this.usage, event.usage);
        return [];
      case 'finish':
        return this.finish(event.stopReason, event.stopSequence);
      case 'error':
        return this.error(event.message, event.kind);
      case 'end':
        if (!this.finished) return this.error('The upstream stream ended before the answer was complete.');
        this.done = true;
        return [sse({ type: 'message_stop' })];
      default: {
        const unreachable: never = event;
        throw new Error(`Unhandled canonical event: ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /**
   * `message_start` once, with the usage known so far. Chat and responses upstreams tell input
   * usage only at the end, so `input_tokens` may be 0 here; `message_delta` then carries the
   * real figures, which the SDK's MessageStream writes over these.
   */
  private messageStart(model: string): SseEvent[] {
    if (this.started) return [];
    this.started = true;
    const message = {
      id: this.context.newId('msg'),
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: encodeMessagesUsage(this.usage),
    };
    return [sse({ type: 'message_start', message })];
  }

  /** A text or tool use part opens its block at once; `message_start` comes first if it has not. */
  private openPart(index: number, type: 'text' | 'tool_use', contentBlock: Record<string, unknown>): SseEvent[] {
    return [...this.messageStart(''), ...this.open(index, { type, reasoningText: '' }, contentBlock)];
  }

  private open(index: number, part: Part, contentBlock: Record<string, unknown>): SseEvent[] {
    part.blockIndex = this.nextBlockIndex++;
    this.parts.set(index, part);
    return [sse({ type: 'content_block_start', index: part.blockIndex, content_block: contentBlock })];
  }

  /**
   * `content_block_delta` with `{ type: kind.type, [kind.member]: value }`, written as text:
   * deltas are a stream's most frequent events (about one per token), and `JSON.stringify` of
   * the event object costs several times what the value alone takes. An empty value sends
   * nothing.
   */
  private blockDelta(index: number, kind: DeltaKind, value: string): SseEvent[] {
    const blockIndex = this.parts.get(index)?.blockIndex;
    if (blockIndex === undefined || value === '') return [];
    const data = `{"type":"content_block_delta","index":${blockIndex},"delta":{"type":"${kind.type}","${kind.member}":${JSON.stringify(value)}}}`;
    return [{ event: 'content_block_delta', data }];
  }

  private reasoningDelta(index: number, text: string): SseEvent[] {
    const part = this.parts.get(index);
    if (!part || text === '') return [];
    part.reasoningText += text;
    const opened = part.blockIndex === undefined ? this.openThinking(index, part) : [];
    return [...opened, ...this.blockDelta(index, THINKING_DELTA, text)];
  }

  private openThinking(index: number, part: Part): SseEvent[] {
    return this.open(index, part, { type: 'thinking', thinking: '', signature: '' });
  }

  /** Kept until the block ends: the client's signature seals it together with the whole text. */
  private reasoningOpaque(event: Extract<CanonicalEvent, { type: 'reasoning_opaque' }>): SseEvent[] {
    const part = this.parts.get(event.index);
    if (part) part.opaque = { kind: event.kind, value: event.value, ...(event.itemId !== undefined && { itemId: event.itemId }) };
    return [];
  }

  private close(index: number): SseEvent[] {
    const part = this.parts.get(index);
    if (!part) return [];
    const events = part.type === 'reasoning' ? this.closingReasoning(index, part) : [];
    this.parts.delete(index);
    if (part.blockIndex === undefined) return events;
    return [...events, sse({ type: 'content_block_stop', index: part.blockIndex })];
  }

  /**
   * The sealed signature comes last, as `signature_delta` does from the API. Reasoning without
   * text that is redacted becomes a `redacted_thinking` block, opened here with its data.
   */
  private closingReasoning(index: number, part: Part): SseEvent[] {
    const signature = sealedSignature(part.opaque, part.origin, part.reasoningText);
    if (part.blockIndex === undefined && part.opaque?.kind === 'redacted' && signature !== '') {
      return this.open(index, part, { type: 'redacted_thinking', data: signature });
    }
    const opened = part.blockIndex === undefined ? this.openThinking(index, part) : [];
    const delta = this.blockDelta(index, SIGNATURE_DELTA, signature);
    return [...opened, ...delta];
  }

  /** Parts still open are closed first: `message_delta` comes after the last block. */
  private finish(stopReason: Extract<CanonicalEvent, { type: 'finish' }>['stopReason'], stopSequence: string | undefined): SseEvent[] {
    const closing = [...this.parts.keys()].flatMap((index) => this.close(index));
    this.finished = true;
    const delta = { stop_reason: encodeMessagesStopReason(stopReason), stop_sequence: stopSequence ?? null };
    return [...this.messageStart(''), ...closing, sse({ type: 'message_delta', delta, usage: this.deltaUsage() })];
  }

  /** Cumulative totals; figures still unknown are left out, so the client keeps what it has. */
  private deltaUsage(): Record<string, unknown> {
    const { cachedInputTokens, cacheWriteInputTokens } = this.usage;
    const input = uncachedInputTokens(this.usage);
    return {
      output_tokens: this.usage.outputTokens ?? 0,
      ...(input !== undefined && { input_tokens: input }),
      ...(cachedInputTokens !== undefined && { cache_read_input_tokens: cachedInputTokens }),
      ...(cacheWriteInputTokens !== undefined && { cache_creation_input_tokens: cacheWriteInputTokens }),
    };
  }

  /** After the first byte an error can only travel in the stream; nothing follows it. */
  private error(message: string, kind?: string): SseEvent[] {
    this.done = true;
    const type = kind !== undefined && CANONICAL_ERROR_KINDS.has(kind) ? messagesErrorType(kind as CanonicalError['kind']) : 'api_error';
    return [sse({ type: 'error', error: { type, message } })];
  }
}

/** A `content_block_delta`'s delta: its type and the member that carries the value. */
interface DeltaKind {
  type: 'text_delta' | 'input_json_delta' | 'thinking_delta' | 'signature_delta';
  member: 'text' | 'partial_json' | 'thinking' | 'signature';
}
const TEXT_DELTA: DeltaKind = { type: 'text_delta', member: 'text' };
const INPUT_JSON_DELTA: DeltaKind = { type: 'input_json_delta', member: 'partial_json' };
const THINKING_DELTA: DeltaKind = { type: 'thinking_delta', member: 'thinking' };
const SIGNATURE_DELTA: DeltaKind = { type: 'signature_delta', member: 'signature' };

/** The API names every event after its data's `type`; the SDK skips unnamed events. */
function sse(data: Record<string, unknown> & { type: string }): SseEvent {
  return { event: data.type, data: JSON.stringify(data) };
}
