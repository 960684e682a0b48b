import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import type { CanonicalOutputPart, CanonicalUsage, StopReason } from '../canonical/response';
import type { SseEvent } from '../sse/decode-sse';
import { encodeStreamWith, type StreamEncoder } from '../canonical/stream-steps';
import { responsesStreamErrorCode } from './encode-responses-error';
import {
  encodeOutputItem,
  encodeResponseObject,
  finishedState,
  itemIdPrefix,
  outputText,
  summaryText,
  wantsSummary,
  type ResponseFrame,
  type ResponsesAnswerRequest,
  type ResponseState,
} from './encode-responses-response';
import { definedOnly, mergeDefined } from '../members';
import { stringOr, unwrapCustomInput } from './responses-values';

/**
 * Canonical events → the Responses SSE stream, in the order the API emits it:
 * `response.created`, `response.in_progress`, then per output item `output_item.added`, its
 * content events and `output_item.done`, and finally `response.completed` or
 * `response.incomplete` carrying the same Response object `encodeResponsesResponse` builds.
 * Every event is named after its `type` and numbered by `sequence_number` from 0.
 *
 * Custom tool input is buffered and sent whole at the end of the call: it arrives as the JSON
 * `{"input": "..."}`, and unwrapping it piece by piece would need an incremental JSON reader
 * for a rarely streamed, usually short value.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */

const STREAM_ENDED_EARLY = 'The upstream stream ended before the response was complete.';

type DeltaType = 'response.output_text.delta' | 'response.reasoning_summary_text.delta' | 'response.function_call_arguments.delta';

export function encodeResponsesStream(
  events: AsyncIterable<CanonicalEvent>,
  request: ResponsesAnswerRequest,
  context: TranslationContext,
): AsyncGenerator<SseEvent> {
  return encodeStreamWith(new ResponsesStreamWriter(request, context), events);
}

/** The output item being streamed. */
interface OpenItem {
  id: string;
  outputIndex: number;
  /** `"item_id":…,"output_index":…` as its delta events carry them, written once per item. */
  members: string;
  part: CanonicalOutputPart;
  /** A summary part was opened (summaries are streamed only when the client asked for them). */
  summaryOpened: boolean;
}

/** The Responses stream written event by event (`StreamTranslation` chains it with a decoder). */
export class ResponsesStreamWriter implements StreamEncoder {
  done = false;
  private sequence = 0;
  private frame?: ResponseFrame;
  private readonly output: Record<string, unknown>[] = [];
  private usage: CanonicalUsage = {};
  private stopReason?: StopReason;
  private item?: OpenItem;

  constructor(
    private readonly request: ResponsesAnswerRequest,
    private readonly context: TranslationContext,
  ) {}

  cutShort(): SseEvent[] {
    return this.write({ type: 'error', message: STREAM_ENDED_EARLY });
  }

  write(event: CanonicalEvent): SseEvent[] {
    const events = event.type === 'start' ? [] : this.ensureStarted();
    events.push(...this.writeEvent(event));
    return events;
  }

  private writeEvent(event: CanonicalEvent): SseEvent[] {
    switch (event.type) {
      case 'start':
        this.mergeUsage(event.usage);
        return this.start(event.model);
      case 'text_start':
        return this.openItem({ type: 'text', text: '' });
      case 'reasoning_start':
        return this.openItem(definedOnly({ type: 'reasoning' as const, text: '', origin: event.origin }));
      case 'tool_call_start':
        return this.openItem({ type: 'tool_call', id: event.id, name: event.name, arguments: '', kind: event.kind });
      case 'text_delta':
      case 'reasoning_delta':
        return this.textDelta(event.text);
      case 'tool_call_delta':
        return this.argumentsDelta(event.arguments);
      case 'reasoning_opaque':
        if (this.item?.part.type === 'reasoning') this.item.part.opaque = definedOnly({ kind: event.kind, value: event.value, itemId: event.itemId });
        return [];
      case 'part_end':
        return this.closeItem();
      case 'usage':
        this.mergeUsage(event.usage);
        return [];
      case 'finish':
        this.stopReason = event.stopReason;
        return [];
      case 'end':
        return this.stopReason === undefined ? this.fail(STREAM_ENDED_EARLY, undefined) : this.complete(this.stopReason);
      case 'error':
        return this.fail(event.message, event.kind);
      default: {
        const unreachable: never = event;
        throw new Error(`Unknown canonical event: ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /**
   * One event: its type and number, then `place` (where in the output it belongs), then the
   * payload. Built from the parts in one literal: a spread followed by further members
   * (`{ ...place, delta }`) costs V8 extra work per member, on every delta.
   */
  private emit(type: string, payload: Record<string, unknown>, place?: Record<string, unknown>): SseEvent {
    return { event: type, data: JSON.stringify({ type, sequence_number: this.sequence++, ...place, ...payload }) };
  }

  /**
   * A delta event as text, what `emit` would write: its type and number, `members` (where it
   * belongs), the delta, then `after`; `members` and `after` are JSON members (`"name":value`).
   * Deltas are a stream's most frequent events (about one per token); through `emit` the payload
   * and place objects, the literal spreading them and `JSON.stringify` of it all cost time on
   * every delta, where only the delta itself needs serialising.
   */
  private delta(type: DeltaType, members: string, delta: string, after = ''): SseEvent {
    return { event: type, data: `{"type":"${type}","sequence_number":${this.sequence++},${members},"delta":${JSON.stringify(delta)}${after}}` };
  }

  /** Events before `start` (an upstream failing at once) still need a Response to refer to. */
  private ensureStarted(): SseEvent[] {
    return this.frame === undefined ? this.start(stringOr(this.request.echo.model, '')) : [];
  }

  private start(model: string): SseEvent[] {
    if (this.frame !== undefined) return [];
    this.frame = { id: this.context.newId('resp'), createdAt: this.context.now(), model };
    // Both events carry the same Response object: serialised once, as it delays the first byte.
    const response = JSON.stringify(this.snapshot({ status: 'in_progress', output: [] }));
    return [this.emitWithResponse('response.created', response), this.emitWithResponse('response.in_progress', response)];
  }

  /** What `emit(type, { response })` writes, with the Response object already serialised. */
  private emitWithResponse(type: 'response.created' | 'response.in_progress', response: string): SseEvent {
    return { event: type, data: `{"type":"${type}","sequence_number":${this.sequence++},"response":${response}}` };
  }

  private snapshot(state: ResponseState): Record<string, unknown> {
    return encodeResponseObject(this.frame as ResponseFrame, state, this.request.echo);
  }

  private mergeUsage(usage: CanonicalUsage | undefined): void {
    if (usage !== undefined) this.usage = mergeDefined(this.usage, usage);
  }

  private openItem(part: CanonicalOutputPart): SseEvent[] {
    // Parts come one after another (canonical/events.ts); a missing part_end closes the last one.
    const events = this.item === undefined ? [] : this.closeItem();
    const kind = part.type === 'tool_call' ? part.kind : undefined;
    const id = this.context.newId(itemIdPrefix({ type: part.type, kind }));
    const outputIndex = this.output.length;
    const item: OpenItem = { id, outputIndex, members: `"item_id":${JSON.stringify(id)},"output_index":${outputIndex}`, part, summaryOpened: false };
    this.item = item;
    events.push(this.emit('response.output_item.added', { output_index: item.outputIndex, item: openedItem(item) }));
    if (part.type === 'text') events.push(this.emit('response.content_part.added', { part: outputText('') }, this.place(0)));
    return events;
  }

  private place(index: number): Record<string, unknown> {
    const item = this.item as OpenItem;
    if (item.part.type === 'reasoning') return { item_id: item.id, output_index: item.outputIndex, summary_index: index };
    return { item_id: item.id, output_index: item.outputIndex, content_index: index };
  }

  private textDelta(delta: string): SseEvent[] {
    const item = this.item;
    if (item === undefined || delta === '' || (item.part.type !== 'text' && item.part.type !== 'reasoning')) return [];
    item.part.text += delta;
    if (item.part.type === 'text') return [this.delta('response.output_text.delta', `${item.members},"content_index":0`, delta, ',"logprobs":[]')];
    if (!wantsSummary(this.request.echo)) return [];
    const events: SseEvent[] = [];
    if (!item.summaryOpened) {
      item.summaryOpened = true;
      events.push(this.emit('response.reasoning_summary_part.added', { part: summaryText('') }, this.place(0)));
    }
    events.push(this.delta('response.reasoning_summary_text.delta', `${item.members},"summary_index":0`, delta));
    return events;
  }

  private argumentsDelta(delta: string): SseEvent[] {
    const item = this.item;
    if (item === undefined || item.part.type !== 'tool_call' || delta === '') return [];
    item.part.arguments += delta;
    if (item.part.kind === 'custom') return [];
    return [this.delta('response.function_call_arguments.delta', item.members, delta)];
  }

  private closeItem(): SseEvent[] {
    const item = this.item;
    if (item === undefined) return [];
    const final = encodeOutputItem(item.part, item.id, this.request);
    const events = this.contentDoneEvents(item);
    events.push(this.emit('response.output_item.done', { output_index: item.outputIndex, item: final }));
    this.output.push(final);
    this.item = undefined;
    return events;
  }

  private contentDoneEvents(item: OpenItem): SseEvent[] {
    const part = item.part;
    const where = { item_id: item.id, output_index: item.outputIndex };
    switch (part.type) {
      case 'text':
        return [
          this.emit('response.output_text.done', { text: part.text, logprobs: [] }, this.place(0)),
          this.emit('response.content_part.done', { part: outputText(part.text) }, this.place(0)),
        ];
      case 'reasoning':
        if (!item.summaryOpened) return [];
        return [
          this.emit('response.reasoning_summary_text.done', { text: part.text }, this.place(0)),
          this.emit('response.reasoning_summary_part.done', { part: summaryText(part.text) }, this.place(0)),
        ];
      case 'tool_call': {
        if (part.kind === 'function') return [this.emit('response.function_call_arguments.done', { name: part.name, arguments: part.arguments }, where)];
        const input = unwrapCustomInput(part.arguments);
        const delta = input === '' ? [] : [this.emit('response.custom_tool_call_input.delta', { delta: input }, where)];
        return [...delta, this.emit('response.custom_tool_call_input.done', { input }, where)];
      }
      default: {
        const unreachable: never = part;
        throw new Error(`Unknown output part: ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private complete(stopReason: StopReason): SseEvent[] {
    const events = this.closeItem();
    const state = finishedState(stopReason, this.output, this.usage, this.context.now());
    const type = state.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    events.push(this.emit(type, { response: this.snapshot(state) }));
    this.done = true;
    return events;
  }

  /**
   * The API's in-stream failure: an `error` event, then `response.failed` with what was
   * finished so far. The open item is not closed: its content never completed.
   */
  private fail(message: string, kind: string | undefined): SseEvent[] {
    const code = responsesStreamErrorCode(kind);
    this.done = true;
    const response = this.snapshot({ status: 'failed', output: this.output, usage: this.usage, error: { code, message } });
    return [this.emit('error', { code, message, param: null }), this.emit('response.failed', { response })];
  }
}

/** The item as `output_item.added` shows it: in progress, with empty content. */
function openedItem(item: OpenItem): Record<string, unknown> {
  const part = item.part;
  switch (part.type) {
    case 'text':
      return { id: item.id, type: 'message', status: 'in_progress', content: [], role: 'assistant' };
    case 'reasoning':
      return { id: item.id, type: 'reasoning', summary: [] };
    case 'tool_call':
      if (part.kind === 'custom') return { id: item.id, type: 'custom_tool_call', status: 'in_progress', call_id: part.id, input: '', name: part.name };
      return { id: item.id, type: 'function_call', status: 'in_progress', arguments: '', call_id: part.id, name: part.name };
    default: {
      const unreachable: never = part;
      throw new Error(`Unknown output part: ${JSON.stringify(unreachable)}`);
    }
  }
}
