import type { CanonicalEvent } from '../canonical/events';
import type { CanonicalUsage } from '../canonical/response';
import type { SseEvent } from '../sse/decode-sse';
import { decodeStreamWith, type StreamDecoder } from '../canonical/stream-steps';
import { chatStreamErrorKind, decodeErrorFields } from './decode-chat-error';
import { asRecord, decodeChatUsage, decodeFinishReason, nonEmptyString } from './decode-chat-response';

/**
 * OpenAI chat-completions stream (`data:` chunks ended by `data: [DONE]`) → canonical events.
 * Only `choices[0]` is read (the gateway never asks for `n` > 1); `reasoning_content` deltas of
 * some compatible upstreams are left out, as chat never carries reasoning for us.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */

const EARLY_END = 'upstream stream ended early';
const UNREADABLE_CHUNK = 'upstream sent an unreadable stream chunk';

export function decodeChatStream(events: AsyncIterable<SseEvent>): AsyncGenerator<CanonicalEvent> {
  return decodeStreamWith(new ChatStreamDecoder(), events);
}

/** The chat stream read event by event (`StreamTranslation` chains it with an encoder). */
export class ChatStreamDecoder implements StreamDecoder {
  done = false;
  private readonly stream = new ChatStreamReader();

  read(event: SseEvent): CanonicalEvent[] {
    const step = this.stream.read(event);
    this.done = step.done;
    return step.events;
  }

  cutShort(): CanonicalEvent[] {
    return this.stream.endWithoutDone();
  }
}

interface Step {
  events: CanonicalEvent[];
  /** Nothing more is read: `end` was emitted. */
  done: boolean;
}

/**
 * Where a stream is: the model is still answering; it gave its finish reason, which is held
 * until the usage chunk (or `[DONE]`) so that `usage` can precede `finish`; `finish` was sent.
 */
type Phase = 'answering' | 'finish_held' | 'finished';

/** State of one stream, read chunk by chunk. */
class ChatStreamReader {
  private started = false;
  private phase: Phase = 'answering';
  private readonly parts = new PartSequencer();
  /** The raw finish reason, as the upstream gave it. */
  private finishReason: unknown = undefined;
  private refused = false;
  private usage: CanonicalUsage | undefined;

  read(event: SseEvent): Step {
    if (event.data === '[DONE]') return this.conclude();
    const payload = parseJson(event.data);
    if (payload === undefined) return fail(UNREADABLE_CHUNK, 'server');
    const chunk = asRecord(payload);
    // openai-node treats both as in-stream errors: an `error` member, or an `event: error` item.
    if ((chunk.error !== undefined && chunk.error !== null) || event.event === 'error') {
      const fields = decodeErrorFields(chunk);
      return fail(fields?.message ?? 'upstream reported an error', chatStreamErrorKind(asRecord(chunk.error).type));
    }
    return { events: this.readChunk(chunk), done: false };
  }

  /** The upstream closed the connection without `[DONE]`: fine once the answer had finished. */
  endWithoutDone(): CanonicalEvent[] {
    if (this.phase === 'answering') return fail(EARLY_END, 'server').events;
    return this.conclude().events;
  }

  private readChunk(chunk: Record<string, unknown>): CanonicalEvent[] {
    const events: CanonicalEvent[] = [];
    if (!this.started) {
      this.started = true;
      events.push({ type: 'start', id: stringOr(chunk.id), model: stringOr(chunk.model) });
    }
    const choice = Array.isArray(chunk.choices) ? chunk.choices.map(asRecord).find((item) => (item.index ?? 0) === 0) : undefined;
    // After the finish reason only usage is expected; stray deltas would reopen closed parts.
    if (choice !== undefined && this.phase === 'answering') events.push(...this.readChoice(choice));
    if (chunk.usage !== undefined && chunk.usage !== null) {
      // Each usage chunk reports totals, so the latest replaces what came before.
      this.usage = decodeChatUsage(chunk.usage);
      if (this.phase === 'finish_held') events.push(...this.release());
    }
    return events;
  }

  private readChoice(choice: Record<string, unknown>): CanonicalEvent[] {
    const delta = asRecord(choice.delta);
    const events: CanonicalEvent[] = [];
    const content = nonEmptyString(delta.content);
    if (content !== undefined) events.push(...this.parts.text(content));
    const refusal = nonEmptyString(delta.refusal);
    if (refusal !== undefined) {
      this.refused = true;
      events.push(...this.parts.text(refusal));
    }
    const toolCalls = Array.isArray(delta.tool_calls) ? delta.tool_calls.map(asRecord) : [];
    toolCalls.forEach((call, position) => events.push(...this.parts.toolCall(readToolCallDelta(call, position))));
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
      this.finishReason = choice.finish_reason;
      this.phase = 'finish_held';
      // The model is done: every part can close now, only the finish waits for usage.
      events.push(...this.parts.closeAll());
    }
    return events;
  }

  /** `[DONE]` (or a clean close after the finish): release what is held, then `end`. */
  private conclude(): Step {
    if (!this.started) return fail(EARLY_END, 'server');
    const events = this.phase === 'finished' ? [] : [...this.parts.closeAll(), ...this.release()];
    return { events: [...events, { type: 'end' }], done: true };
  }

  private release(): CanonicalEvent[] {
    const events: CanonicalEvent[] = [];
    if (this.usage !== undefined) events.push({ type: 'usage', usage: this.usage });
    const context = { refused: this.refused, calledTools: this.parts.calledTools };
    events.push({ type: 'finish', stopReason: decodeFinishReason(this.finishReason, context) });
    this.phase = 'finished';
    return events;
  }
}

interface ToolCallDelta {
  chatIndex: number;
  id?: string;
  name?: string;
  arguments: string;
}

/** `index` says which call a fragment belongs to; an upstream omitting it gets the array position. */
function readToolCallDelta(call: Record<string, unknown>, position: number): ToolCallDelta {
  const definition = asRecord(call.function);
  return {
    chatIndex: typeof call.index === 'number' ? call.index : position,
    id: nonEmptyString(call.id),
    name: nonEmptyString(definition.name),
    arguments: typeof definition.arguments === 'string' ? definition.arguments : '',
  };
}

/** A part waiting to open or open; `index` is set when it opens, `buffered` holds what came before. */
interface TextPart {
  kind: 'text';
  index?: number;
  buffered: string;
}

interface ToolCallPart {
  kind: 'tool';
  chatIndex: number;
  index?: number;
  buffered: string;
  id?: string;
  name?: string;
  /** All arguments so far, to tell when they form complete JSON. */
  arguments: string;
}

type PendingPart = TextPart | ToolCallPart;

/**
 * Puts text and tool-call fragments into strictly sequential parts: one part is open at a time
 * and is closed before the next opens, as canonical encoders expect (canonical/events.ts).
 *
 * Parts queue up in the order they first appear. The head streams live; fragments of the parts
 * behind it are buffered. A text head closes as soon as anything follows it. A tool-call head
 * closes when a later part is waiting and its arguments are complete JSON: chat never says a
 * call is done, and some upstreams interleave the fragments of parallel calls, so a call that
 * is not yet valid JSON may still receive fragments. OpenAI sends calls one after another, and
 * then each call closes as soon as the next appears, so nothing is delayed. At the finish every
 * part is opened (with its buffer) and closed in order.
 */
class PartSequencer {
  calledTools = false;
  private readonly queue: PendingPart[] = [];
  private readonly openCalls = new Map<number, ToolCallPart>();
  private readonly closedCalls = new Set<number>();
  private nextIndex = 0;

  text(fragment: string): CanonicalEvent[] {
    const last = this.queue[this.queue.length - 1];
    const part = last?.kind === 'text' ? last : this.enqueue<TextPart>({ kind: 'text', buffered: '' });
    const events: CanonicalEvent[] = [];
    if (part.index === undefined) part.buffered += fragment;
    else events.push({ type: 'text_delta', index: part.index, text: fragment });
    return [...events, ...this.advance(false)];
  }

  toolCall(delta: ToolCallDelta): CanonicalEvent[] {
    // A call closes only once its arguments are complete JSON, so a later fragment of it would
    // break that JSON: the upstream misbehaved, and the fragment is left out.
    if (this.closedCalls.has(delta.chatIndex)) return [];
    this.calledTools = true;
    const part = this.openCalls.get(delta.chatIndex) ?? this.enqueueCall(delta.chatIndex);
    part.id ??= delta.id;
    part.name ??= delta.name;
    const events: CanonicalEvent[] = [];
    if (delta.arguments !== '') {
      part.arguments += delta.arguments;
      if (part.index === undefined) part.buffered += delta.arguments;
      else events.push({ type: 'tool_call_delta', index: part.index, arguments: delta.arguments });
    }
    return [...events, ...this.advance(false)];
  }

  closeAll(): CanonicalEvent[] {
    return this.advance(true);
  }

  private enqueue<Part extends PendingPart>(part: Part): Part {
    this.queue.push(part);
    return part;
  }

  private enqueueCall(chatIndex: number): ToolCallPart {
    const part = this.enqueue<ToolCallPart>({ kind: 'tool', chatIndex, buffered: '', arguments: '' });
    this.openCalls.set(chatIndex, part);
    return part;
  }

  /** Opens the head when it can be, and closes heads that are done; `final` closes everything. */
  private advance(final: boolean): CanonicalEvent[] {
    const events: CanonicalEvent[] = [];
    for (let head = this.queue[0]; head !== undefined; head = this.queue[0]) {
      if (head.index === undefined) {
        // tool_call_start needs the name, which a well-behaved upstream sends in the first fragment.
        if (!final && head.kind === 'tool' && head.name === undefined) break;
        events.push(...this.open(head));
      }
      const done = final || (this.queue.length > 1 && isComplete(head));
      if (!done) break;
      events.push({ type: 'part_end', index: head.index as number });
      this.queue.shift();
      if (head.kind === 'tool') {
        this.openCalls.delete(head.chatIndex);
        this.closedCalls.add(head.chatIndex);
      }
    }
    return events;
  }

  private open(part: PendingPart): CanonicalEvent[] {
    const index = this.nextIndex++;
    part.index = index;
    const buffered = part.buffered;
    part.buffered = '';
    if (part.kind === 'text') {
      return [{ type: 'text_start', index }, ...(buffered === '' ? [] : [{ type: 'text_delta' as const, index, text: buffered }])];
    }
    const start: CanonicalEvent = { type: 'tool_call_start', index, id: part.id ?? '', name: part.name ?? '', kind: 'function' };
    return [start, ...(buffered === '' ? [] : [{ type: 'tool_call_delta' as const, index, arguments: buffered }])];
  }
}

/** Text is done once something follows it; a call once its arguments parse as JSON. */
function isComplete(part: PendingPart): boolean {
  if (part.kind === 'text') return true;
  const text = part.arguments.trimEnd();
  if (!text.endsWith('}') && !text.endsWith(']')) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function fail(message: string, kind: string): Step {
  return { events: [{ type: 'error', message, kind }, { type: 'end' }], done: true };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function stringOr(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
