import { SseEventSplitter } from '../translation/sse/decode-sse';
import type { ResponseMeter } from './response-meter';

const BLANK_LINE_END = '\n\n';

/**
 * A native SSE body on its way to the client: cut into events for the meter, which may keep
 * an event back (chat's usage chunk the client did not ask for); the rest passes byte for byte.
 *
 * Most chunks are whole events that carry nothing the meter looks for (the tokens of an answer),
 * and a chunk that does carries it in one of its last events (usage comes at the end). So the
 * events of a chunk before the first one that mentions a meter's word pass as they came, uncut:
 * one regular expression over the chunk instead of a few native searches and a view per event.
 */
export class MeteredEvents {
  private readonly splitter = new SseEventSplitter();

  constructor(private readonly meter: ResponseMeter) {}

  /** What of `chunk` goes to the client now: nothing, a part, or the chunk itself. */
  push(chunk: Buffer): Buffer | undefined {
    if (!this.splitter.isAtEventStart()) return this.read(this.splitter.push(chunk));
    const text = chunk.toString('latin1');
    const word = text.search(this.meter.eventWords);
    if (word === -1 && text.endsWith(BLANK_LINE_END)) return chunk;
    if (word === -1) return this.read(this.splitter.push(chunk));
    const start = eventStartBefore(text, word);
    if (start === 0) return this.read(this.splitter.push(chunk));
    const rest = this.read(this.splitter.push(chunk.subarray(start)));
    const head = chunk.subarray(0, start);
    return rest === undefined ? head : Buffer.concat([head, rest]);
  }

  /** What is left at the end of the body (an event missing its blank line), read likewise. */
  flush(): Buffer | undefined {
    return this.read(this.splitter.flush());
  }

  private read(events: Buffer[]): Buffer | undefined {
    if (events.length === 1) return this.meter.readEvent(events[0]) ? events[0] : undefined;
    const kept = events.filter((event) => this.meter.readEvent(event));
    if (kept.length === 0) return undefined;
    return kept.length === 1 ? kept[0] : Buffer.concat(kept);
  }
}

/**
 * Where an event ends at or before `position`, in a chunk (read as latin1) that starts at an
 * event's start: after the last LF LF, whose first LF ends a line (alone or after a CR) and whose
 * second therefore ends an empty line, the blank line that completes an event; else 0. A chunk
 * that ends with LF LF is thus nothing but whole events.
 */
function eventStartBefore(text: string, position: number): number {
  const blankLine = text.lastIndexOf(BLANK_LINE_END, position);
  return blankLine === -1 ? 0 : blankLine + BLANK_LINE_END.length;
}
