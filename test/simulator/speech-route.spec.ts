import { parseSse, rawPost, type RawOutcome } from './simulator-test-kit';
import { AUDIO_BYTES_PER_CHARACTER, AUDIO_MS_PER_CHARACTER, audioChunks, speechAudio, usageCharacters, wordCount } from './speech-route';
import { UpstreamSimulator } from './upstream-simulator';

const KEY = 'sk-speech';
const bearer = { authorization: `Bearer ${KEY}` };
const OK = { status_code: 0, status_msg: 'success' };

/** A speech body as the vendor documents it; `text` and extras vary per test. */
const speechBody = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'speech-x-hd',
  text,
  voice_setting: { voice_id: 'male-qn-qingse', speed: 1, vol: 1, pitch: 0 },
  audio_setting: { sample_rate: 32000, bitrate: 128000, format: 'mp3', channel: 1 },
  ...extra,
});

describe('UpstreamSimulator speech (T2A v2)', () => {
  const simulator = new UpstreamSimulator({ apiKey: KEY });
  let url: string;

  beforeAll(async () => {
    url = `${await simulator.start()}/v1/t2a_v2`;
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());

  const events = (outcome: RawOutcome) => parseSse(outcome.text).map((event) => JSON.parse(event.data));

  it('bills a Han character as 2 and anything else as 1, as in a captured answer', () => {
    const captured = '今天是不是很开心呀(laughs)，当然了！';

    expect([wordCount(captured), usageCharacters(captured)]).toEqual([22, 34]);
    expect([wordCount('a😀b'), usageCharacters('a😀b')]).toEqual([3, 3]);
  });

  it('answers JSON with the hex audio and extra_info figures', async () => {
    const text = 'Hello, 世界';
    const body = speechBody(text, { audio_setting: { sample_rate: 24000, format: 'flac', channel: 2 } });
    const outcome = await rawPost(url, body, { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(outcome.headers?.['content-type']).toBe('application/json');
    const answer = JSON.parse(outcome.text);
    expect(answer).toEqual({
      data: { audio: speechAudio(text).toString('hex'), status: 2, ced: '' },
      extra_info: {
        audio_length: 9 * AUDIO_MS_PER_CHARACTER,
        audio_sample_rate: 24000,
        audio_size: 9 * AUDIO_BYTES_PER_CHARACTER,
        bitrate: 128000,
        word_count: 9,
        invisible_character_ratio: 0,
        usage_characters: 11,
        audio_format: 'flac',
        audio_channel: 2,
      },
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      base_resp: OK,
    });
    expect(answer.data.audio).toHaveLength(2 * 9 * AUDIO_BYTES_PER_CHARACTER);
  });

  it('gives the same audio and figures for the same text, and other audio for other text', async () => {
    const speak = async (text: string) => JSON.parse((await rawPost(url, speechBody(text), { headers: bearer })).text);
    const [first, second, other] = [await speak('same words'), await speak('same words'), await speak('other words')];

    expect([second.data, second.extra_info]).toEqual([first.data, first.extra_info]);
    expect(second.trace_id).not.toBe(first.trace_id);
    expect(other.data.audio).not.toBe(first.data.audio);
  });

  it('answers an address instead of hex for output_format url', async () => {
    const answer = JSON.parse((await rawPost(url, speechBody('hi', { output_format: 'url' }), { headers: bearer })).text);

    expect(answer.data).toEqual({ audio: `https://audio.simulator.invalid/t2a/${answer.trace_id}.mp3`, status: 2, ced: '' });
    expect(answer.extra_info.usage_characters).toBe(2);
  });

  it('streams status 1 pieces, then one status 2 event repeating the whole audio with extra_info', async () => {
    const text = 'A longer sentence, so the audio comes in several pieces.';
    const outcome = await rawPost(url, speechBody(text, { stream: true }), { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(outcome.headers?.['content-type']).toMatch(/^text\/event-stream/);
    const received = events(outcome);
    const pieces = received.slice(0, -1);
    const last = received.at(-1);
    expect(pieces.length).toBe(audioChunks(speechAudio(text)).length);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces) {
      expect(piece).toEqual({
        data: { audio: expect.stringMatching(/^[0-9a-f]+$/), status: 1, ced: '' },
        trace_id: last.trace_id,
        base_resp: { status_code: 0, status_msg: '' },
      });
    }
    expect(pieces.map((piece) => piece.data.audio).join('')).toBe(speechAudio(text).toString('hex'));
    expect(last).toEqual({
      data: { audio: speechAudio(text).toString('hex'), status: 2, ced: '' },
      extra_info: expect.objectContaining({ usage_characters: text.length, word_count: text.length, audio_format: 'mp3' }),
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      base_resp: OK,
    });
  });

  it.each([
    ['an empty text', speechBody(''), 2013, 'invalid params, text is empty'],
    ['no model', { text: 'hi' }, 2013, 'invalid params, model is required'],
    ['an unknown audio format', speechBody('hi', { audio_setting: { format: 'ogg' } }), 2013, expect.stringContaining('audio_setting.format')],
    ['the insufficient-balance marker', speechBody('hi [speech-error:1008]'), 1008, 'insufficient balance'],
    ['a marker with an unlisted code', speechBody('[speech-error:1234]'), 1234, 'error'],
  ])('answers %s with HTTP 200 and the code in base_resp', async (_case, body, code, message) => {
    const outcome = await rawPost(url, body, { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(JSON.parse(outcome.text)).toEqual({
      data: null,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      base_resp: { status_code: code, status_msg: message },
    });
  });

  it('answers a body that is not JSON with 2013 too', async () => {
    const outcome = await rawPost(url, 'not json', { headers: bearer });

    expect(outcome.status).toBe(200);
    expect(JSON.parse(outcome.text).base_resp).toEqual({ status_code: 2013, status_msg: 'invalid params, the body must be a JSON object' });
  });

  it('streams an error as one event, after the audio events its marker asks for', async () => {
    const before = await rawPost(url, speechBody('hello [speech-error:1008]', { stream: true }), { headers: bearer });
    const empty = await rawPost(url, speechBody(' ', { stream: true }), { headers: bearer });
    const text = 'fails after two pieces of audio [speech-error:1000@2]';
    const midway = await rawPost(url, speechBody(text, { stream: true }), { headers: bearer });

    expect(before.headers?.['content-type']).toMatch(/^text\/event-stream/);
    expect(events(before)).toEqual([{ data: null, trace_id: expect.any(String), base_resp: { status_code: 1008, status_msg: 'insufficient balance' } }]);
    expect(events(empty).map((event) => event.base_resp.status_code)).toEqual([2013]);
    const received = events(midway);
    expect(received.map((event) => event.data?.status ?? event.base_resp.status_code)).toEqual([1, 1, 1000]);
    expect(received[0].data.audio + received[1].data.audio).toBe(Buffer.concat(audioChunks(speechAudio(text)).slice(0, 2)).toString('hex'));
    expect(received.some((event) => 'extra_info' in event)).toBe(false);
  });

  it('answers a wrong or missing key with HTTP 200 and 1004 as plain JSON, streaming or not', async () => {
    const wrong = await rawPost(url, speechBody('hi'), { headers: { authorization: 'Bearer sk-wrong' } });
    const missing = await rawPost(url, speechBody('hi', { stream: true }));

    for (const outcome of [wrong, missing]) {
      expect(outcome.status).toBe(200);
      expect(outcome.headers?.['content-type']).toBe('application/json');
      const loginFail = { status_code: 1004, status_msg: expect.stringMatching(/^login fail/) };
      expect(JSON.parse(outcome.text)).toMatchObject({ data: null, base_resp: loginFail });
    }
  });

  it('answers a planned HTTP failure with that status and a base_resp', async () => {
    simulator.failNext('/v1/t2a_v2', { status: 503 });

    const outcome = await rawPost(url, speechBody('hi'), { headers: bearer });

    expect(outcome.status).toBe(503);
    expect(JSON.parse(outcome.text)).toEqual({ base_resp: { status_code: 1013, status_msg: expect.any(String) } });
  });
});
