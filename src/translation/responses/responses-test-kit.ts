import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CanonicalEvent } from '../canonical/events';
import type { TranslationContext } from '../canonical/ids';
import type { CanonicalOutputPart, CanonicalResponse } from '../canonical/response';
import { decodeSse, type SseEvent } from '../sse/decode-sse';

/**
 * Helpers shared by the responses specs (no jest or SDK imports, so the build compiles it as is):
 * fixtures, async plumbing and a reproducible context.
 */

export function fixture(name: string): Buffer {
  return readFileSync(join(__dirname, '__fixtures__', name));
}

export function fixtureJson(name: string): Record<string, unknown> {
  return JSON.parse(fixture(name).toString('utf8')) as Record<string, unknown>;
}

/** A fixture's bytes cut into small chunks, as they arrive from a socket. */
export async function* chunks(bytes: Buffer, size = 97): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < bytes.length; start += size) yield bytes.subarray(start, start + size);
}

export function fixtureEvents(name: string): AsyncGenerator<SseEvent> {
  return decodeSse(chunks(fixture(name)));
}

export async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

export async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of source) items.push(item);
  return items;
}

/** Ids `<prefix>_1`, `<prefix>_2`, … in call order, and a clock that ticks one second per read. */
export function testContext(): TranslationContext {
  let id = 0;
  let time = 1_700_000_000;
  return { newId: (prefix) => `${prefix}_${++id}`, now: () => time++ };
}

/** Parses the data of encoded events, for assertions on their payloads. */
export function payloads(events: SseEvent[]): Array<Record<string, unknown>> {
  return events.map((event) => JSON.parse(event.data) as Record<string, unknown>);
}

/**
 * The answer a canonical event stream describes, built the plain way (no encoder code), so a
 * streamed encoding can be compared with the JSON encoding of the same answer.
 */
export function assemble(events: CanonicalEvent[]): CanonicalResponse {
  const response: CanonicalResponse = { id: '', model: '', output: [], stopReason: 'end', usage: {} };
  const parts = new Map<number, CanonicalOutputPart>();
  for (const event of events) {
    const part = 'index' in event ? parts.get(event.index) : undefined;
    switch (event.type) {
      case 'start':
        Object.assign(response, { id: event.id, model: event.model, usage: { ...event.usage } });
        break;
      case 'text_start':
        parts.set(event.index, { type: 'text', text: '' });
        break;
      case 'reasoning_start':
        parts.set(event.index, event.origin === undefined ? { type: 'reasoning', text: '' } : { type: 'reasoning', text: '', origin: event.origin });
        break;
      case 'tool_call_start':
        parts.set(event.index, { type: 'tool_call', id: event.id, name: event.name, arguments: '', kind: event.kind });
        break;
      case 'text_delta':
      case 'reasoning_delta':
        if (part?.type === 'text' || part?.type === 'reasoning') part.text += event.text;
        break;
      case 'tool_call_delta':
        if (part?.type === 'tool_call') part.arguments += event.arguments;
        break;
      case 'reasoning_opaque':
        if (part?.type === 'reasoning') {
          part.opaque = event.itemId === undefined ? { kind: event.kind, value: event.value } : { kind: event.kind, value: event.value, itemId: event.itemId };
        }
        break;
      case 'part_end':
        if (part !== undefined) response.output.push(part);
        break;
      case 'usage':
        response.usage = { ...response.usage, ...event.usage };
        break;
      case 'finish':
        response.stopReason = event.stopReason;
        break;
      default:
        break;
    }
  }
  return response;
}
