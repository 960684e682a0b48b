/**
 * Server-sent events, write side: one event to its wire text.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
 */
import type { SseEvent } from './decode-sse';

/**
 * Encodes one event as `event: x\nid: y\nretry: n\ndata: ...\n\n`, absent fields left out.
 * Data holding line breaks becomes several `data:` lines, which the reader joins with "\n";
 * SSE cannot carry a CR, so "\r\n" and "\r" in data come back as "\n".
 */
export function encodeSseEvent(event: SseEvent): string {
  let text = '';
  if (event.event !== undefined) text += `event: ${singleLine(event.event, 'event name')}\n`;
  if (event.id !== undefined) text += `id: ${singleLine(event.id, 'id')}\n`;
  if (event.retry !== undefined) {
    if (!Number.isSafeInteger(event.retry) || event.retry < 0) {
      throw new RangeError(`SSE retry must be a non-negative integer, got ${event.retry}.`);
    }
    text += `retry: ${event.retry}\n`;
  }
  return `${text}${encodeData(event.data)}\n`;
}

function encodeData(data: string): string {
  // replaceAll with a string pattern is a native scan, no regular expression involved.
  const lines = data.includes('\r') ? data.replaceAll('\r\n', '\n').replaceAll('\r', '\n') : data;
  return `data: ${lines.includes('\n') ? lines.replaceAll('\n', '\ndata: ') : lines}\n`;
}

/** A line break would end the field early and inject whatever follows as new fields. */
function singleLine(value: string, label: string): string {
  if (value.includes('\n') || value.includes('\r')) {
    throw new RangeError(`SSE ${label} must not contain line breaks: ${JSON.stringify(value)}.`);
  }
  return value;
}
