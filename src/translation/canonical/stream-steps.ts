import type { SseEvent } from '../sse/decode-sse';
import type { CanonicalEvent } from './events';

/**
 * An upstream protocol's stream read one event at a time, synchronously: what each upstream
 * event means canonically. Translation chains a decoder and an encoder synchronously
 * (`StreamTranslation`); a layer of async generators per step cost a promise and a microtask hop
 * per event and layer.
 */
export interface StreamDecoder {
  read(event: SseEvent): CanonicalEvent[];
  /** The upstream's final event was read: nothing after it is read. */
  readonly done: boolean;
  /** What the stream means when the upstream ends before its final event. */
  cutShort(): CanonicalEvent[];
}

/** A client protocol's stream written one canonical event at a time. */
export interface StreamEncoder {
  write(event: CanonicalEvent): SseEvent[];
  /** The client's stream is complete: nothing more is written. */
  readonly done: boolean;
  /** What the client gets when the canonical events end before `end`. */
  cutShort(): SseEvent[];
}

/** A decoder as an async generator over upstream events; returning early closes `events`. */
export async function* decodeStreamWith(decoder: StreamDecoder, events: AsyncIterable<SseEvent>): AsyncGenerator<CanonicalEvent> {
  for await (const event of events) {
    yield* decoder.read(event);
    // Returning ends the for-await, which closes `events` and so the upstream request.
    if (decoder.done) return;
  }
  yield* decoder.cutShort();
}

/** An encoder as an async generator over canonical events; returning early closes `events`. */
export async function* encodeStreamWith(encoder: StreamEncoder, events: AsyncIterable<CanonicalEvent>): AsyncGenerator<SseEvent> {
  for await (const event of events) {
    yield* encoder.write(event);
    if (encoder.done) return;
  }
  yield* encoder.cutShort();
}
