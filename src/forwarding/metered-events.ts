import { SseEventSplitter } from '../translation/sse/decode-sse';
import type { ResponseMeter } from '../metering/response-meter';

const BLANK_LINE_END = '\n\n';

/**
 * A native SSE body on its way to the client: cut into events for the meter, which may keep
 * an event back (chat's usage chunk the client did not ask for); the rest passes byte for byte.
 *
 * Upstream chunks come merged (undici's body buffers what arrives while the gateway is busy),
 * and almost every event carries nothing a meter looks for (the tokens of an answer). So only
 * the events that mention one of the meter's words are cut out and read; the runs of whole
 * events between them pass as parts of the chunk, found with a regular expression over the
 * chunk instead of a few native searches and a view per event.
 */
export class MeteredEvents {
  private readonly splitter = new SseEventSplitter();

  constructor(private readonly meter: ResponseMeter) {}

  /** What of `chunk` goes to the client now: nothing, a part, or the chunk itself. */
  push(chunk: Buffer): Buffer | undefined {
    if (!this.splitter.isAtEventStart()) return this.read(this.splitter.push(chunk));
    const text = chunk.toString('latin1');
    let word = text.search(this.meter.eventWords);
    if (word === -1 && text.endsWith(BLANK_LINE_END)) return chunk;
    // Whole events without a word pass as they are; an event with one is cut out and read.
    const passed: Buffer[] = [];
    let from = 0;
    while (word !== -1) {
      const start = eventStartBefore(text, word); // never before `from`, which follows a LF LF itself
      if (start > from) passed.push(chunk.subarray(from, start));
      const blankLine = text.indexOf(BLANK_LINE_END, word);
      from = blankLine === -1 ? chunk.length : blankLine + BLANK_LINE_END.length;
      this.keep(passed, this.read(this.splitter.push(chunk.subarray(start, from))));
      const next = from < text.length ? text.slice(from).search(this.meter.eventWords) : -1;
      word = next === -1 ? -1 : from + next;
    }
    if (from < chunk.length) {
      const rest = chunk.subarray(from);
      this.keep(passed, text.endsWith(BLANK_LINE_END) ? rest : this.read(this.splitter.push(rest)));
    }
    if (passed.length <= 1) return passed[0];
    return Buffer.concat(passed);
  }

  /** What is left at the end of the body (an event missing its blank line), read likewise. */
  flush(): Buffer | undefined {
    return this.read(this.splitter.flush());
  }

  private keep(passed: Buffer[], bytes: Buffer | undefined): void {
    if (bytes !== undefined && bytes.length > 0) passed.push(bytes);
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
