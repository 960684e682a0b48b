import type { CanonicalEvent } from '../canonical/events';
import type { ReasoningOrigin } from '../canonical/request';
import type { SseEvent } from '../sse/decode-sse';
import { decodeStreamWith, type StreamDecoder } from '../canonical/stream-steps';
import { presentOnly } from '../members';
import { messagesErrorKind } from './decode-messages-error';
import { readMessagesStopReason } from './messages-stop-reason';
import { decodeMessagesUsage } from './messages-usage';
import { asRecord, isRecord, numberOf, parseJsonObject, stringOf } from './messages-values';

/**
 * A messages upstream's stream → canonical events.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
export function decodeMessagesStream(events: AsyncIterable<SseEvent>, origin: ReasoningOrigin): AsyncGenerator<CanonicalEvent> {
  return decodeStreamWith(new MessagesStreamReader(origin), events);
}

interface OpenBlock {
  /** Canonical part index: server tool blocks are skipped, so it may differ from the upstream's. */
  index: number;
  isToolUse: boolean;
  hasArguments: boolean;
}

/** The messages stream read event by event (`StreamTranslation` chains it with an encoder). */
export class MessagesStreamReader implements StreamDecoder {
  done = false;
  private readonly blocks = new Map<number, OpenBlock>();
  private nextIndex = 0;
  /** `message_delta` tells the stop reason; `message_stop` ends the message with it. */
  private stopReason: unknown;
  private stopSequence: string | undefined;
  /**
   * Usage as the wire last told each figure. Canonical input is a sum of three wire figures, so a
   * `message_delta` that repeats only some of them is summed with the others known before.
   */
  private wireUsage: Record<string, unknown> = {};

  constructor(private readonly origin: ReasoningOrigin) {}

  cutShort(): CanonicalEvent[] {
    return [{ type: 'error', message: 'The upstream stream ended before message_stop.' }, { type: 'end' }];
  }

  read(event: SseEvent): CanonicalEvent[] {
    const data = parseJsonObject(event.data);
    if (!data) return this.fail(`The upstream sent an unreadable ${event.event ?? 'message'} event.`);
    switch (data.type) {
      case 'message_start':
        return [this.start(asRecord(data.message))];
      case 'content_block_start':
        return this.openBlock(numberOf(data.index), asRecord(data.content_block));
      case 'content_block_delta':
        return this.delta(this.blocks.get(numberOf(data.index) ?? -1), asRecord(data.delta));
      case 'content_block_stop':
        return this.closeBlock(numberOf(data.index) ?? -1);
      case 'message_delta':
        return this.messageDelta(data);
      case 'message_stop':
        return this.stop();
      case 'error': {
        const error = asRecord(data.error);
        const kind = messagesErrorKind(stringOf(error.type)) ?? 'server';
        return this.fail(stringOf(error.message) ?? 'The upstream reported an error.', kind);
      }
      // Keep-alives, and event types newer than this code, which the API says to ignore.
      default:
        return [];
    }
  }

  private start(message: Record<string, unknown>): CanonicalEvent {
    const id = stringOf(message.id) ?? '';
    const model = stringOf(message.model) ?? '';
    if (!isRecord(message.usage)) return { type: 'start', id, model };
    // The API leaves out, or sends null for, usage figures that do not apply: neither overwrites.
    this.wireUsage = presentOnly(message.usage);
    return { type: 'start', id, model, usage: decodeMessagesUsage(this.wireUsage) };
  }

  private openBlock(upstreamIndex: number | undefined, block: Record<string, unknown>): CanonicalEvent[] {
    const opened = this.eventsOpening(block);
    if (upstreamIndex === undefined || opened === undefined) return [];
    const isToolUse = block.type === 'tool_use';
    this.blocks.set(upstreamIndex, { index: this.nextIndex, isToolUse, hasArguments: opened.length > 1 && isToolUse });
    this.nextIndex += 1;
    return opened;
  }

  /** The events a `content_block_start` stands for, or undefined for blocks that are not carried. */
  private eventsOpening(block: Record<string, unknown>): CanonicalEvent[] | undefined {
    const index = this.nextIndex;
    switch (block.type) {
      case 'text':
        return withText({ type: 'text_start', index }, { type: 'text_delta', index, text: stringOf(block.text) ?? '' });
      case 'thinking': {
        const text = stringOf(block.thinking) ?? '';
        const opened = withText({ type: 'reasoning_start', index, origin: this.origin }, { type: 'reasoning_delta', index, text });
        const signature = stringOf(block.signature) ?? '';
        return signature === '' ? opened : [...opened, { type: 'reasoning_opaque', index, kind: 'signature', value: signature }];
      }
      case 'redacted_thinking':
        return [
          { type: 'reasoning_start', index, origin: this.origin },
          { type: 'reasoning_opaque', index, kind: 'redacted', value: stringOf(block.data) ?? '' },
        ];
      case 'tool_use': {
        const [id, name] = [stringOf(block.id) ?? '', stringOf(block.name) ?? ''];
        const start: CanonicalEvent = { type: 'tool_call_start', index, id, name, kind: 'function' };
        // The API opens with `input: {}` and streams the JSON; a filled input is carried as is.
        const input = asRecord(block.input);
        return Object.keys(input).length === 0 ? [start] : [start, { type: 'tool_call_delta', index, arguments: JSON.stringify(input) }];
      }
      // Server tool blocks (web search and the like): never asked for on the translation path.
      default:
        return undefined;
    }
  }

  private delta(block: OpenBlock | undefined, delta: Record<string, unknown>): CanonicalEvent[] {
    if (!block) return [];
    const { index } = block;
    switch (delta.type) {
      case 'text_delta':
        return [{ type: 'text_delta', index, text: stringOf(delta.text) ?? '' }];
      case 'thinking_delta':
        return [{ type: 'reasoning_delta', index, text: stringOf(delta.thinking) ?? '' }];
      case 'signature_delta':
        return [{ type: 'reasoning_opaque', index, kind: 'signature', value: stringOf(delta.signature) ?? '' }];
      case 'input_json_delta': {
        const piece = stringOf(delta.partial_json) ?? '';
        if (piece === '') return [];
        block.hasArguments = true;
        return [{ type: 'tool_call_delta', index, arguments: piece }];
      }
      // Citations have no canonical form.
      default:
        return [];
    }
  }

  /** A tool without parameters streams no JSON at all; canonical arguments are still a JSON object. */
  private closeBlock(upstreamIndex: number): CanonicalEvent[] {
    const block = this.blocks.get(upstreamIndex);
    if (!block) return [];
    this.blocks.delete(upstreamIndex);
    const end: CanonicalEvent = { type: 'part_end', index: block.index };
    return block.isToolUse && !block.hasArguments ? [{ type: 'tool_call_delta', index: block.index, arguments: '{}' }, end] : [end];
  }

  /** Usage figures in `message_delta` are cumulative totals, which the canonical `usage` overwrites with. */
  private messageDelta(data: Record<string, unknown>): CanonicalEvent[] {
    const delta = asRecord(data.delta);
    if (delta.stop_reason !== undefined && delta.stop_reason !== null) this.stopReason = delta.stop_reason;
    this.stopSequence = stringOf(delta.stop_sequence) ?? this.stopSequence;
    if (!isRecord(data.usage)) return [];
    this.wireUsage = { ...this.wireUsage, ...presentOnly(data.usage) };
    return [{ type: 'usage', usage: decodeMessagesUsage(this.wireUsage) }];
  }

  private stop(): CanonicalEvent[] {
    this.done = true;
    const finish: CanonicalEvent = { type: 'finish', stopReason: readMessagesStopReason(this.stopReason) };
    return [this.stopSequence === undefined ? finish : { ...finish, stopSequence: this.stopSequence }, { type: 'end' }];
  }

  private fail(message: string, kind?: string): CanonicalEvent[] {
    this.done = true;
    return [kind === undefined ? { type: 'error', message } : { type: 'error', message, kind }, { type: 'end' }];
  }
}

/** A block that opens with text already in it carries that text as its first delta. */
function withText(start: CanonicalEvent, delta: Extract<CanonicalEvent, { text: string }>): CanonicalEvent[] {
  return delta.text === '' ? [start] : [start, delta];
}
