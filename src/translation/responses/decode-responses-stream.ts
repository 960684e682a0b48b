import type { CanonicalEvent } from '../canonical/events';
import type { ReasoningOrigin } from '../canonical/request';
import type { SseEvent } from '../sse/decode-sse';
import { decodeStreamWith, type StreamDecoder } from '../canonical/stream-steps';
import { responsesStreamErrorKind } from './decode-responses-error';
import { decodeResponsesEnding, decodeResponsesUsage, SUMMARY_SEPARATOR } from './decode-responses-response';
import { asRecord, isRecord, nonEmptyString, parseJson, records, stringOr } from './responses-values';

/**
 * OpenAI Responses SSE stream → canonical events. Each output item is one canonical part,
 * opened by `response.output_item.added` and closed by `response.output_item.done`; the
 * stream ends with `response.completed` / `response.incomplete` (no `[DONE]`), or with
 * `response.failed` / `error`.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */

type PartType = 'text' | 'tool_call' | 'reasoning';

/** An output item being streamed: its canonical part, and what of it has been passed on. */
interface OpenPart {
  index: number;
  type: PartType;
  custom: boolean;
  /** Text, arguments, custom input or summary streamed so far, to complete it at `done`. */
  streamed: string;
  summaryParts: number;
}

export function decodeResponsesStream(events: AsyncIterable<SseEvent>, origin: ReasoningOrigin): AsyncGenerator<CanonicalEvent> {
  return decodeStreamWith(new ResponsesStreamReader(origin), events);
}

/** Custom tool input travels canonically as `{"input": "..."}`, built up as the input streams. */
const CUSTOM_OPENING = '{"input":"';
const CUSTOM_CLOSING = '"}';

function escapeJsonText(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** The Responses stream read event by event (`StreamTranslation` chains it with an encoder). */
export class ResponsesStreamReader implements StreamDecoder {
  done = false;
  private started = false;
  private nextIndex = 0;
  private readonly open = new Map<number, OpenPart>();
  private calledTools = false;
  private refused = false;

  constructor(private readonly origin: ReasoningOrigin) {}

  read(event: SseEvent): CanonicalEvent[] {
    const payload = parseJson(event.data);
    // Keep-alives and comments carry no JSON object; they say nothing about the answer.
    if (!isRecord(payload)) return [];
    return this.readPayload(stringOr(payload.type, event.event ?? ''), payload);
  }

  cutShort(): CanonicalEvent[] {
    return [{ type: 'error', message: 'The upstream stream ended before the response was complete.', kind: 'server' }, { type: 'end' }];
  }

  private readPayload(type: string, payload: Record<string, unknown>): CanonicalEvent[] {
    if (type === 'response.created') return this.start(asRecord(payload.response));
    // A stream that skipped `response.created` still needs a start for the encoders.
    const events: CanonicalEvent[] = this.started || type === 'error' ? [] : this.start({});
    events.push(...this.readEvent(type, payload));
    return events;
  }

  private start(response: Record<string, unknown>): CanonicalEvent[] {
    if (this.started) return [];
    this.started = true;
    return [{ type: 'start', id: stringOr(response.id, ''), model: stringOr(response.model, '') }];
  }

  private readEvent(type: string, payload: Record<string, unknown>): CanonicalEvent[] {
    switch (type) {
      case 'response.output_item.added':
        return this.openItem(payload.output_index, asRecord(payload.item));
      case 'response.output_text.delta':
        return this.delta(payload, String(payload.delta ?? ''));
      case 'response.refusal.delta':
        this.refused = true;
        return this.delta(payload, String(payload.delta ?? ''));
      case 'response.function_call_arguments.delta':
      case 'response.custom_tool_call_input.delta':
      case 'response.reasoning_summary_text.delta':
        return this.delta(payload, String(payload.delta ?? ''));
      case 'response.reasoning_summary_part.added':
        return this.summaryPart(payload);
      case 'response.output_item.done':
        return this.closeItem(payload.output_index, asRecord(payload.item));
      case 'response.completed':
      case 'response.incomplete':
        return this.finish(asRecord(payload.response));
      case 'response.failed':
        return this.fail(asRecord(asRecord(payload.response).error));
      case 'error':
        // The documented form has code and message on the event; some servers nest them.
        return this.fail(isRecord(payload.error) ? payload.error : payload);
      default:
        // Lifecycle (`in_progress`), `*.done` of deltas already passed on, annotations, hosted tools.
        return [];
    }
  }

  private openItem(outputIndex: unknown, item: Record<string, unknown>): CanonicalEvent[] {
    const type = partTypeOf(item.type);
    if (type === undefined || typeof outputIndex !== 'number') return [];
    const part: OpenPart = { index: this.nextIndex++, type, custom: item.type === 'custom_tool_call', streamed: '', summaryParts: 0 };
    this.open.set(outputIndex, part);
    switch (type) {
      case 'text':
        return [{ type: 'text_start', index: part.index }];
      case 'reasoning':
        return [{ type: 'reasoning_start', index: part.index, origin: this.origin }];
      case 'tool_call': {
        this.calledTools = true;
        const kind = part.custom ? 'custom' : 'function';
        const start: CanonicalEvent = { type: 'tool_call_start', index: part.index, id: stringOr(item.call_id, ''), name: stringOr(item.name, ''), kind };
        return part.custom ? [start, { type: 'tool_call_delta', index: part.index, arguments: CUSTOM_OPENING }] : [start];
      }
      default: {
        const unreachable: never = type;
        throw new Error(`Unknown part type: ${String(unreachable)}`);
      }
    }
  }

  private delta(payload: Record<string, unknown>, text: string): CanonicalEvent[] {
    const part = typeof payload.output_index === 'number' ? this.open.get(payload.output_index) : undefined;
    if (part === undefined || text === '') return [];
    part.streamed += text;
    return [deltaEvent(part, text)];
  }

  /** Summary parts are one canonical text, a blank line apart (as in the JSON decoder). */
  private summaryPart(payload: Record<string, unknown>): CanonicalEvent[] {
    const part = typeof payload.output_index === 'number' ? this.open.get(payload.output_index) : undefined;
    if (part === undefined) return [];
    part.summaryParts += 1;
    if (part.summaryParts === 1) return [];
    part.streamed += SUMMARY_SEPARATOR;
    return [deltaEvent(part, SUMMARY_SEPARATOR)];
  }

  /**
   * Closes an item. Whatever its final form holds beyond the deltas (a server that sent no
   * deltas at all) is passed on first, so the canonical part is complete.
   */
  private closeItem(outputIndex: unknown, item: Record<string, unknown>): CanonicalEvent[] {
    const part = typeof outputIndex === 'number' ? this.open.get(outputIndex) : undefined;
    if (part === undefined) return [];
    this.open.delete(outputIndex as number);
    const events: CanonicalEvent[] = [];
    const final = finalTextOf(part, item);
    if (final.startsWith(part.streamed) && final.length > part.streamed.length) {
      events.push(deltaEvent(part, final.slice(part.streamed.length)));
    }
    if (part.custom) events.push({ type: 'tool_call_delta', index: part.index, arguments: CUSTOM_CLOSING });
    const encrypted = nonEmptyString(item.encrypted_content);
    if (part.type === 'reasoning' && encrypted !== undefined) {
      const opaque: CanonicalEvent = { type: 'reasoning_opaque', index: part.index, kind: 'encrypted', value: encrypted };
      const itemId = nonEmptyString(item.id);
      events.push(itemId === undefined ? opaque : { ...opaque, itemId });
    }
    events.push({ type: 'part_end', index: part.index });
    return events;
  }

  private finish(response: Record<string, unknown>): CanonicalEvent[] {
    this.done = true;
    const events: CanonicalEvent[] = [...this.open.values()].map((part) => ({ type: 'part_end', index: part.index }));
    this.open.clear();
    if (isRecord(response.usage)) events.push({ type: 'usage', usage: decodeResponsesUsage(response.usage) });
    const stopReason = decodeResponsesEnding(response, { calledTools: this.calledTools, refused: this.refused });
    events.push({ type: 'finish', stopReason }, { type: 'end' });
    return events;
  }

  private fail(error: Record<string, unknown>): CanonicalEvent[] {
    this.done = true;
    const message = nonEmptyString(error.message) ?? 'The upstream response failed.';
    return [{ type: 'error', message, kind: responsesStreamErrorKind(error.code) }, { type: 'end' }];
  }
}

function partTypeOf(itemType: unknown): PartType | undefined {
  switch (itemType) {
    case 'message':
      return 'text';
    case 'function_call':
    case 'custom_tool_call':
      return 'tool_call';
    case 'reasoning':
      return 'reasoning';
    default:
      return undefined;
  }
}

/** Deltas carry raw text; custom tool input is escaped into the `{"input": …}` JSON string. */
function deltaEvent(part: OpenPart, text: string): CanonicalEvent {
  switch (part.type) {
    case 'text':
      return { type: 'text_delta', index: part.index, text };
    case 'reasoning':
      return { type: 'reasoning_delta', index: part.index, text };
    case 'tool_call':
      return { type: 'tool_call_delta', index: part.index, arguments: part.custom ? escapeJsonText(text) : text };
    default: {
      const unreachable: never = part.type;
      throw new Error(`Unknown part type: ${String(unreachable)}`);
    }
  }
}

function finalTextOf(part: OpenPart, item: Record<string, unknown>): string {
  switch (part.type) {
    case 'text':
      return records(item.content)
        .map((content) => stringOr(content.type === 'refusal' ? content.refusal : content.text, ''))
        .join('');
    case 'reasoning':
      return records(item.summary)
        .map((summary) => stringOr(summary.text, ''))
        .join(SUMMARY_SEPARATOR);
    case 'tool_call':
      return stringOr(part.custom ? item.input : item.arguments, '');
    default: {
      const unreachable: never = part.type;
      throw new Error(`Unknown part type: ${String(unreachable)}`);
    }
  }
}
