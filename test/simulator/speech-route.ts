import { createHash, randomBytes } from 'node:crypto';
import { asRecord } from './scripted-model';
import type { Route, RouteContext, SseEvent } from './simulator-types';
import { jsonEvent } from './sse-writer';
import { vendorCError } from './video-tasks';

/**
 * MiniMax T2A v2 (vendor-c speech): `POST /v1/t2a_v2` with a Bearer key. Every answer of the
 * vendor's own making is HTTP 200; an error is told by `base_resp.status_code` not being 0, with
 * `data` null. With `stream: true` the answer is SSE: `data:` events with `status` 1 carrying
 * successive pieces of hex audio, then one `status` 2 event that repeats the whole audio and adds
 * `extra_info`. Errors arrive as:
 * - a wrong or missing key: a plain JSON body with code 1004, in both modes (checked before the
 *   request is read);
 * - anything else in stream mode: one SSE event with the error (after `@N` audio events when the
 *   marker says so, see SPEECH_ERROR_MARKER).
 * @see https://platform.minimax.io/docs/api-reference/speech-t2a-http
 */

/** Status messages per `base_resp.status_code`, as the vendor's list names them. */
export const SPEECH_ERRORS: Record<number, string> = {
  1000: 'unknown error',
  1001: 'request timeout',
  1002: 'rate limit triggered',
  1004: "login fail: Please carry the API secret key in the 'Authorization' field of the request header",
  1008: 'insufficient balance',
  1026: 'input content contains sensitive words',
  1039: 'token rate limit triggered',
  1042: 'invisible characters exceed 10% of the text',
  2013: 'invalid params',
};

/**
 * `[speech-error:CODE]` anywhere in `text` makes the answer that error; `[speech-error:CODE@N]`
 * in stream mode sends N audio events first (without `stream` it is the same as no `@N`).
 */
export const SPEECH_ERROR_MARKER = /\[speech-error:(\d+)(?:@(\d+))?\]/;

export const MAX_TEXT_CHARACTERS = 10000;
/** Simulated audio per character of text (code point): its bytes and its milliseconds. */
export const AUDIO_BYTES_PER_CHARACTER = 32;
export const AUDIO_MS_PER_CHARACTER = 80;
/** Where `output_format: "url"` says the audio is; never fetched. */
export const AUDIO_HOST = 'https://audio.simulator.invalid';

const FORMATS = ['mp3', 'pcm', 'flac', 'wav'];

/**
 * Billed characters: a Chinese character (Han script) counts 2, anything else 1. Read from a
 * captured answer (text "今天是不是很开心呀(laughs)，当然了！": 22 characters, 12 of them Han,
 * usage_characters 34); how kana or hangul count is not known, so they count 1 here.
 */
export function usageCharacters(text: string): number {
  let count = 0;
  for (const character of text) count += /\p{Script=Han}/u.test(character) ? 2 : 1;
  return count;
}

/** `extra_info.word_count`: the text's code points (22 in the capture above). */
export function wordCount(text: string): number {
  let count = 0;
  for (const _character of text) count += 1;
  return count;
}

/** Deterministic stand-in audio: SHA-256 blocks of the text, AUDIO_BYTES_PER_CHARACTER per character. */
export function speechAudio(text: string): Buffer {
  const length = wordCount(text) * AUDIO_BYTES_PER_CHARACTER;
  const blocks: Buffer[] = [];
  for (let index = 0, filled = 0; filled < length; index++, filled += 32) {
    blocks.push(createHash('sha256').update(`${text}#${index}`).digest());
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** The pieces of the `status` 1 events: 96 bytes each, larger for long texts (at most 32 pieces). */
export function audioChunks(audio: Buffer): Buffer[] {
  const size = Math.max(96, Math.ceil(audio.length / 32));
  const chunks: Buffer[] = [];
  for (let start = 0; start < audio.length; start += size) chunks.push(audio.subarray(start, start + size));
  return chunks;
}

/** The body of an error answer: `data` null, a trace id and the code. */
export function speechError(code: number, message = SPEECH_ERRORS[code] ?? 'error', traceId = newTraceId()): unknown {
  return { data: null, trace_id: traceId, base_resp: { status_code: code, status_msg: message } };
}

export const speechRoute: Route = {
  vendor: 'openai',
  checksOwnBody: true,
  // Planned failures with an HTTP status (a proxy or the platform failing) keep vendor-c's shape.
  errorBody: (status, message) => vendorCError(status, message),
  unauthorized: () => ({ status: 200, body: speechError(1004) }),
  async handle(context) {
    const traceId = newTraceId();
    const json = context.request.json;
    const body = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
    const stream = body?.stream === true;
    const fail = (code: number, message?: string, afterChunks = 0) =>
      stream ? streamError(context, traceId, code, message, afterChunks) : context.json(200, speechError(code, message, traceId));
    if (!body) return fail(2013, 'invalid params, the body must be a JSON object');
    const problem = invalidParams(body);
    if (problem) return fail(2013, `invalid params, ${problem}`);
    const text = body.text as string;
    const marker = SPEECH_ERROR_MARKER.exec(text);
    if (marker) return fail(Number(marker[1]), undefined, Number(marker[2] ?? 0));
    const audio = speechAudio(text);
    const extraInfo = extraInfoOf(body, text, audio.length);
    if (stream) return context.events(streamEvents(audio, extraInfo, traceId));
    const asUrl = body.output_format === 'url';
    const audioField = asUrl ? `${AUDIO_HOST}/t2a/${traceId}.${extraInfo.audio_format}` : audio.toString('hex');
    return context.json(200, {
      data: { audio: audioField, status: 2, ced: '' },
      extra_info: extraInfo,
      trace_id: traceId,
      base_resp: { status_code: 0, status_msg: 'success' },
    });
  },
};

/** What makes the vendor answer 2013, as a phrase; undefined when the body is fine. */
function invalidParams(body: Record<string, unknown>): string | undefined {
  if (typeof body.model !== 'string' || body.model === '') return 'model is required';
  if (typeof body.text !== 'string' || body.text.trim() === '') return 'text is empty';
  if (wordCount(body.text) > MAX_TEXT_CHARACTERS) return `text exceeds ${MAX_TEXT_CHARACTERS} characters`;
  const format = asRecord(body.audio_setting).format ?? 'mp3';
  if (!FORMATS.includes(format as string)) return `audio_setting.format must be one of ${FORMATS.join(', ')}`;
  if (format === 'wav' && body.stream === true) return 'wav is only supported without stream';
  const output = body.output_format ?? 'hex';
  if (output !== 'hex' && output !== 'url') return 'output_format must be hex or url';
  return undefined;
}

interface ExtraInfo {
  audio_length: number;
  audio_sample_rate: number;
  audio_size: number;
  bitrate: number;
  word_count: number;
  invisible_character_ratio: number;
  usage_characters: number;
  audio_format: string;
  audio_channel: number;
}

function extraInfoOf(body: Record<string, unknown>, text: string, audioSize: number): ExtraInfo {
  const setting = asRecord(body.audio_setting);
  const number = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);
  return {
    audio_length: wordCount(text) * AUDIO_MS_PER_CHARACTER,
    audio_sample_rate: number(setting.sample_rate, 32000),
    audio_size: audioSize,
    bitrate: number(setting.bitrate, 128000),
    word_count: wordCount(text),
    invisible_character_ratio: 0,
    usage_characters: usageCharacters(text),
    audio_format: typeof setting.format === 'string' ? setting.format : 'mp3',
    audio_channel: number(setting.channel, 1),
  };
}

const PROGRESS = { status_code: 0, status_msg: '' };

function streamEvents(audio: Buffer, extraInfo: ExtraInfo, traceId: string): SseEvent[] {
  const events = audioChunks(audio).map((chunk) => audioEvent(chunk, traceId));
  events.push(
    jsonEvent({
      data: { audio: audio.toString('hex'), status: 2, ced: '' },
      extra_info: extraInfo,
      trace_id: traceId,
      base_resp: { status_code: 0, status_msg: 'success' },
    }),
  );
  return events;
}

function audioEvent(chunk: Buffer, traceId: string): SseEvent {
  return jsonEvent({ data: { audio: chunk.toString('hex'), status: 1, ced: '' }, trace_id: traceId, base_resp: PROGRESS });
}

/** Stream mode: `afterChunks` audio events of the text's audio, then the error event, then the end. */
function streamError(context: RouteContext, traceId: string, code: number, message: string | undefined, afterChunks: number): Promise<void> {
  const text = typeof context.body.text === 'string' ? context.body.text : '';
  const chunks = afterChunks > 0 ? audioChunks(speechAudio(text)).slice(0, afterChunks) : [];
  return context.events([...chunks.map((chunk) => audioEvent(chunk, traceId)), jsonEvent(speechError(code, message, traceId))]);
}

function newTraceId(): string {
  return randomBytes(16).toString('hex');
}
