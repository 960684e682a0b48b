import type { ServerResponse } from 'node:http';
import { newId } from './scripted-model';
import type { Interruption, SseEvent, Vendor } from './simulator-types';

export interface WriterOptions {
  vendor: Vendor;
  interruption?: Interruption;
  chunkDelayMs: number;
  /** A pause whose timer the simulator can cancel on stop. */
  wait(ms: number): Promise<void>;
}

/** `event:` line (when named), one `data:` line, blank line: how both vendors frame events. */
export function encodeSse(event: SseEvent): string {
  const name = event.event === undefined ? '' : `event: ${event.event}\n`;
  return `${name}data: ${event.data}\n\n`;
}

/** Shorthand for an event whose data is JSON. */
export function jsonEvent(data: unknown, event?: string): SseEvent {
  return { event, data: JSON.stringify(data) };
}

/**
 * Random padding OpenAI adds to streamed deltas (`obfuscation`, on unless
 * `stream_options.include_obfuscation` is false) so event sizes do not reveal the text.
 */
export function obfuscation(delta: string): string {
  return newId('', 16 - (delta.length % 12));
}

/**
 * Writes one answer, JSON or SSE, and applies a mid-answer failure when one is planned.
 * Every SSE event is its own socket write followed by a turn of the event loop, like tokens
 * arriving from a real model, so readers see genuine chunk boundaries.
 */
export class ResponseWriter {
  constructor(
    private readonly response: ServerResponse,
    private readonly options: WriterOptions,
  ) {}

  async json(status: number, body: unknown, headers: Record<string, string> = {}): Promise<void> {
    return this.whole(status, Buffer.from(JSON.stringify(body)), { 'content-type': 'application/json', ...headers });
  }

  /** For bodies that are not JSON at all, like the HTML error page of a proxy in front of a vendor. */
  async text(status: number, body: string, headers: Record<string, string> = {}): Promise<void> {
    return this.whole(status, Buffer.from(body), { 'content-type': 'text/plain; charset=utf-8', ...headers });
  }

  private async whole(status: number, payload: Buffer, headers: Record<string, string>): Promise<void> {
    this.response.writeHead(status, {
      'content-length': String(payload.length),
      ...this.requestIdHeader(),
      ...headers,
    });
    if (!this.options.interruption) {
      this.response.end(payload);
      return;
    }
    // A JSON answer has no events: break it halfway so the client holds a truncated document.
    await this.write(payload.subarray(0, Math.floor(payload.length / 2)));
    this.breakOff();
  }

  /**
   * Exactly these bytes, one write per chunk, in chunked transfer encoding; the last chunk goes
   * out with the end of the body (one write, as servers commonly send a stream's final event),
   * so a reader may get both in one read. With `keepOpen` every chunk is its own write and the
   * body is not ended.
   */
  async raw(status: number, contentType: string, chunks: Iterable<string | Buffer>, keepOpen = false): Promise<void> {
    this.response.writeHead(status, { 'content-type': contentType, ...this.requestIdHeader() });
    this.response.flushHeaders();
    // One chunk ahead, not all of them: a generator of chunks is read only as fast as they are written.
    const iterator = chunks[Symbol.iterator]();
    let current = iterator.next();
    while (!current.done) {
      if (this.response.destroyed) return;
      const next = iterator.next();
      if (next.done && !keepOpen) return void this.response.end(current.value);
      await this.write(current.value);
      await this.pace();
      current = next;
    }
    if (!keepOpen) this.response.end();
  }

  async events(events: SseEvent[]): Promise<void> {
    this.response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...this.requestIdHeader(),
    });
    this.response.flushHeaders();
    for (const [index, event] of events.entries()) {
      if (this.interruptsAfter(index)) return this.breakOff();
      if (this.response.destroyed) return;
      await this.write(encodeSse(event));
      await this.pace();
    }
    if (this.interruptsAfter(events.length)) return this.breakOff();
    this.response.end();
  }

  private interruptsAfter(sentEvents: number): boolean {
    return this.options.interruption !== undefined && sentEvents >= this.options.interruption.afterEvents;
  }

  /** Reset closes the socket with no terminating chunk; a stall just stops writing. */
  private breakOff(): void {
    if (this.options.interruption?.kind === 'reset-mid-stream') this.response.socket?.destroy();
  }

  /** Resolves once the bytes reached the socket, so a following reset cannot swallow them. */
  private write(chunk: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.response.destroyed) return resolve();
      this.response.write(chunk, () => resolve());
    });
  }

  private async pace(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.options.chunkDelayMs > 0) await this.options.wait(this.options.chunkDelayMs);
  }

  private requestIdHeader(): Record<string, string> {
    return this.options.vendor === 'anthropic' ? { 'request-id': newId('req_') } : { 'x-request-id': newId('req_', 32) };
  }
}
