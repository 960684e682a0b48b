import { SpeechMeter } from './speech-meter';

const TRACE_ID = '01b8bf9bb7433cc75c18eee6cfa8fe21';
const AUDIO_HEX = 'fffb9064'.repeat(4096);
const EXTRA_INFO = {
  audio_length: 9_900,
  audio_sample_rate: 32_000,
  audio_size: 160_323,
  bitrate: 128_000,
  word_count: 52,
  invisible_character_ratio: 0,
  usage_characters: 101,
  audio_format: 'mp3',
  audio_channel: 1,
};
const OK = { status_code: 0, status_msg: 'success' };

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/** One raw SSE event as the splitter hands it over. */
function event(value: unknown, lineEnd = '\n'): Buffer {
  return Buffer.from(`data: ${JSON.stringify(value)}${lineEnd}${lineEnd}`);
}

function chunk(status: 1 | 2, extra?: unknown): Buffer {
  return event({
    data: { audio: AUDIO_HEX, status, ced: '' },
    ...(extra === undefined ? {} : { extra_info: extra }),
    trace_id: TRACE_ID,
    base_resp: { status_code: 0, status_msg: '' },
  });
}

describe(SpeechMeter.name, () => {
  describe('JSON answers', () => {
    it('bills extra_info.usage_characters as input_characters', () => {
      const meter = new SpeechMeter();
      meter.readJson(json({ data: { audio: AUDIO_HEX, status: 2, ced: '' }, extra_info: EXTRA_INFO, trace_id: TRACE_ID, base_resp: OK }));

      expect(meter.figures()).toStrictEqual({ input_characters: 101 });
      expect(meter.errorCode()).toBeNull();
    });

    it.each([1004, 1008, 2013, 1039])('bills nothing and names the upstream status %i of an HTTP 200 error', (statusCode) => {
      const meter = new SpeechMeter();
      meter.readJson(json({ trace_id: TRACE_ID, base_resp: { status_code: statusCode, status_msg: 'login fail' } }));

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBe(`upstream_status_code_${statusCode}`);
    });

    it('bills nothing for an error answer even when it carries usage', () => {
      const meter = new SpeechMeter();
      meter.readJson(json({ data: null, extra_info: EXTRA_INFO, trace_id: TRACE_ID, base_resp: { status_code: 1042, status_msg: 'invalid characters' } }));

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBe('upstream_status_code_1042');
    });

    it('gives no figures and no error for a success without extra_info', () => {
      const meter = new SpeechMeter();
      meter.readJson(json({ data: { audio: AUDIO_HEX, status: 2 }, base_resp: OK }));

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBeNull();
    });

    it('bills an answer without base_resp by its usage', () => {
      const meter = new SpeechMeter();
      meter.readJson(json({ extra_info: { usage_characters: 7 } }));
      expect(meter.figures()).toStrictEqual({ input_characters: 7 });
    });

    it.each([
      ['not JSON', Buffer.from('upstream went away')],
      ['empty', Buffer.alloc(0)],
      ['a JSON string', Buffer.from('"base_resp"')],
    ])('reads an answer that is %s as nothing', (_case, body) => {
      const meter = new SpeechMeter();
      meter.readJson(body);

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBeNull();
    });
  });

  describe('streams', () => {
    it('bills the final event after status-1 chunks, and lets every event through', () => {
      const meter = new SpeechMeter();
      const events = [chunk(1), chunk(1), chunk(1), chunk(2, EXTRA_INFO)];

      expect(events.map((raw) => meter.readEvent(raw))).toEqual([true, true, true, true]);
      expect(meter.figures()).toStrictEqual({ input_characters: 101 });
      expect(meter.errorCode()).toBeNull();
    });

    it('reads events with CRLF line ends and other fields', () => {
      const meter = new SpeechMeter();
      meter.readEvent(Buffer.from(`event: message\r\nid: 3\r\ndata: ${JSON.stringify({ extra_info: { usage_characters: 55 }, base_resp: OK })}\r\n\r\n`));
      expect(meter.figures()).toStrictEqual({ input_characters: 55 });
    });

    it('bills a final event that carries extra_info without base_resp', () => {
      const meter = new SpeechMeter();
      meter.readEvent(event({ data: { audio: AUDIO_HEX, status: 2 }, extra_info: EXTRA_INFO, trace_id: TRACE_ID }));
      expect(meter.figures()).toStrictEqual({ input_characters: 101 });
    });

    it('has no figures before the final event', () => {
      const meter = new SpeechMeter();
      meter.readEvent(chunk(1));
      meter.readEvent(chunk(1));
      expect(meter.figures()).toBeUndefined();
    });

    it('keeps the last reported usage when a later event carries extra_info without it', () => {
      const meter = new SpeechMeter();
      meter.readEvent(chunk(2, EXTRA_INFO));
      meter.readEvent(chunk(2, { audio_length: 9_900 }));
      expect(meter.figures()).toStrictEqual({ input_characters: 101 });
    });

    it('bills nothing after an error event, even when a final event with usage follows', () => {
      const meter = new SpeechMeter();
      meter.readEvent(chunk(1));
      expect(meter.readEvent(event({ trace_id: TRACE_ID, base_resp: { status_code: 1002, status_msg: 'rate limit' } }))).toBe(true);
      meter.readEvent(chunk(2, EXTRA_INFO));

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBe('upstream_status_code_1002');
    });

    it('keeps the first upstream error code', () => {
      const meter = new SpeechMeter();
      meter.readEvent(event({ base_resp: { status_code: 1001, status_msg: 'timeout' } }));
      meter.readEvent(event({ base_resp: { status_code: 1000, status_msg: 'unknown' } }));
      expect(meter.errorCode()).toBe('upstream_status_code_1001');
    });

    it('ignores comments, events without data and events that are not JSON', () => {
      const meter = new SpeechMeter();
      expect(meter.readEvent(Buffer.from(': keep-alive\n\n'))).toBe(true);
      expect(meter.readEvent(Buffer.from('event: base_resp\n\n'))).toBe(true);
      expect(meter.readEvent(Buffer.from('data: {"base_resp": broken\n\n'))).toBe(true);
      expect(meter.readEvent(Buffer.from('\n'))).toBe(true);

      expect(meter.figures()).toBeUndefined();
      expect(meter.errorCode()).toBeNull();
    });
  });
});
