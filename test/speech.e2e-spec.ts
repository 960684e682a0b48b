import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { AUDIO_HOST, AUDIO_MS_PER_CHARACTER, audioChunks, SPEECH_ERRORS, speechAudio, usageCharacters, wordCount } from './simulator/speech-route';
import { parseSse } from './simulator/simulator-test-kit';
import { UsageRecord } from '../src/metering/usage-record.entity';
import { GatewayHarness } from './support/gateway-harness';
import { IMAGE_KEYS, IMAGE_PATHS, imagesConfigYaml, rawRequest, RawAnswer } from './support/images-kit';
import { until } from './support/until';
import { VENDOR_KEY } from './support/test-config';

/**
 * Vendor-c text to speech (SPEC.md Endpoints speech row, Events, Errors "Speech", Metering;
 * docs/api.md "Speech"): the body goes upstream with only `model` replaced, JSON answers and SSE
 * streams come back byte for byte, the call is billed once by `extra_info.usage_characters`
 * (100 per 1M characters here), upstream errors that arrive with HTTP 200 are passed through
 * unbilled, and the gateway's own errors carry `base_resp` besides the chat error shape.
 * Unlike an image generation, a speech call whose client leaves is aborted upstream.
 */

const SPEECH_PATH = IMAGE_PATHS.speech;
const UPSTREAM_PATH = '/v1/t2a_v2';
const UPSTREAM_MODEL = 'vendor-speech-02-hd';
/** 100 per 1M characters: 100_000 nano-units per character. */
const NANO_PER_CHARACTER = 100_000n;

const AUDIO_SETTING = { sample_rate: 32000, bitrate: 128000, format: 'mp3', channel: 1 };
const VOICE_SETTING = { voice_id: 'male-qn-qingse', speed: 1, vol: 1, pitch: 0 };
/** The vendor's captured example: 22 characters, 12 of them Han, 34 billed. */
const CAPTURED_TEXT = '今天是不是很开心呀(laughs)，当然了！';

function speechBody(text: string, extra: Record<string, unknown> = {}, model = 'speech'): string {
  return JSON.stringify({ model, text, stream: false, voice_setting: VOICE_SETTING, audio_setting: AUDIO_SETTING, ...extra });
}

/** `extra_info` as the simulator writes it for AUDIO_SETTING, member order included. */
function extraInfoOf(text: string) {
  return {
    audio_length: wordCount(text) * AUDIO_MS_PER_CHARACTER,
    audio_sample_rate: AUDIO_SETTING.sample_rate,
    audio_size: speechAudio(text).length,
    bitrate: AUDIO_SETTING.bitrate,
    word_count: wordCount(text),
    invisible_character_ratio: 0,
    usage_characters: usageCharacters(text),
    audio_format: AUDIO_SETTING.format,
    audio_channel: AUDIO_SETTING.channel,
  };
}

/** The simulator's JSON answer for `text`, byte for byte. */
function expectedJsonAnswer(text: string, traceId: string): string {
  return JSON.stringify({
    data: { audio: speechAudio(text).toString('hex'), status: 2, ced: '' },
    extra_info: extraInfoOf(text),
    trace_id: traceId,
    base_resp: { status_code: 0, status_msg: 'success' },
  });
}

function audioEvent(chunk: Buffer, traceId: string): string {
  return `data: ${JSON.stringify({ data: { audio: chunk.toString('hex'), status: 1, ced: '' }, trace_id: traceId, base_resp: { status_code: 0, status_msg: '' } })}\n\n`;
}

/** The simulator's stream for `text`, byte for byte: the audio pieces, then the whole audio with extra_info. */
function expectedStream(text: string, traceId: string): string {
  const audio = speechAudio(text);
  const final = {
    data: { audio: audio.toString('hex'), status: 2, ced: '' },
    extra_info: extraInfoOf(text),
    trace_id: traceId,
    base_resp: { status_code: 0, status_msg: 'success' },
  };
  return `${audioChunks(audio)
    .map((chunk) => audioEvent(chunk, traceId))
    .join('')}data: ${JSON.stringify(final)}\n\n`;
}

function speechErrorBody(code: number, traceId: string, message = SPEECH_ERRORS[code]): string {
  return JSON.stringify({ data: null, trace_id: traceId, base_resp: { status_code: code, status_msg: message } });
}

/** The gateway's own error: the chat shape plus `base_resp`. */
function gatewayError(code: string | null, type: string, statusCode: number) {
  return {
    error: { message: expect.any(String), type, code },
    base_resp: { status_code: statusCode, status_msg: expect.any(String) },
  };
}

/**
 * imagesConfigYaml plus a speech model on a line with one slot (to see whether a left call still
 * holds it, and to fill it) and one on a line that times out after 300 ms.
 */
const WRONG_VENDOR_KEY = 'vendor-key-the-vendor-refuses';

function speechConfigYaml(simulator: string): string {
  const yaml = imagesConfigYaml(simulator);
  const narrowLine = `upstreams:\n  - id: line-narrow\n    base_url: ${simulator}\n    api_key: \${TEST_VENDOR_KEY}\n    max_concurrency: 1\n`;
  const narrowModel = `models:\n  - id: speech-narrow\n    upstream_model: ${UPSTREAM_MODEL}\n    interfaces: [speech_c]\n    lines: [line-narrow]\n    prices: { input_characters: 100 }\n`;
  const slowLine = `  - id: line-slow\n    base_url: ${simulator}\n    api_key: \${TEST_VENDOR_KEY}\n    timeout_ms: 300\n`;
  const slowModel = `  - id: speech-slow\n    upstream_model: ${UPSTREAM_MODEL}\n    interfaces: [speech_c]\n    lines: [line-slow]\n    prices: { input_characters: 100 }\n`;
  // A line whose vendor key the vendor does not accept (it answers 200 with base_resp 1004).
  const wrongLine = `  - id: line-wrong-key\n    base_url: ${simulator}\n    api_key: ${WRONG_VENDOR_KEY}\n`;
  const wrongModels =
    `  - id: speech-wrong-key\n    upstream_model: ${UPSTREAM_MODEL}\n    interfaces: [speech_c]\n    lines: [line-wrong-key]\n    prices: { input_characters: 100 }\n` +
    `  - id: speech-failover\n    upstream_model: ${UPSTREAM_MODEL}\n    interfaces: [speech_c]\n    lines: [line-wrong-key, line-a]\n    prices: { input_characters: 100 }\n`;
  return yaml.replace('upstreams:\n', narrowLine + slowLine + wrongLine).replace('models:\n', narrowModel + slowModel + wrongModels);
}

describe('speech (vendor-c t2a_v2)', () => {
  let gateway: GatewayHarness;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({ configYaml: speechConfigYaml });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  function post(body: string, headers: Record<string, string> = {}, key: string | null = IMAGE_KEYS.all): Promise<RawAnswer> {
    const auth: Record<string, string> = key === null ? {} : { authorization: `Bearer ${key}` };
    return rawRequest(`${gateway.url}${SPEECH_PATH}`, { headers: { 'content-type': 'application/json', ...auth, ...headers }, body });
  }

  function requestIdOf(answer: RawAnswer): string {
    const id = answer.headers['x-request-id'];
    expect(typeof id).toBe('string');
    return id as string;
  }

  async function spent(ownerId = 'team-a'): Promise<bigint> {
    await gateway.flushUsage();
    const [row] = await gateway.dataSource.query('SELECT spent_nano FROM quota_owner WHERE id = $1', [ownerId]);
    return BigInt(row.spent_nano);
  }

  async function recordCount(): Promise<number> {
    await gateway.flushUsage();
    return gateway.dataSource.getRepository(UsageRecord).count();
  }

  function upstreamBodyFor(sent: string): string {
    const replaced = sent.replace('"model":"speech"', `"model":"${UPSTREAM_MODEL}"`);
    expect(replaced).not.toBe(sent);
    return replaced;
  }

  describe('JSON answers', () => {
    it('returns the answer byte for byte and sends the body upstream with only the model replaced', async () => {
      const text = 'Hello from the gateway, 今天很好!';
      const sent = speechBody(text);

      const answer = await post(sent);

      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      const traceId = JSON.parse(answer.text).trace_id as string;
      expect(answer.text).toBe(expectedJsonAnswer(text, traceId));
      expect(gateway.simulator.requests).toHaveLength(1);
      const upstream = gateway.simulator.requests[0];
      expect(upstream.path).toBe(UPSTREAM_PATH);
      expect(upstream.body.toString('utf8')).toBe(upstreamBodyFor(sent));
      expect(upstream.headers.authorization).toBe('Bearer vendor-secret-line-key');
    });

    it('bills usage_characters at 100 per 1M characters, once (Han characters count 2)', async () => {
      expect(usageCharacters(CAPTURED_TEXT)).toBe(34);
      const before = await spent();

      const answer = await post(speechBody(CAPTURED_TEXT));

      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).extra_info.usage_characters).toBe(34);
      const record = await gateway.usageRecord(requestIdOf(answer));
      expect(record).toMatchObject({
        interface: 'speech_c',
        model: 'speech',
        line: 'line-a',
        status: 200,
        errorCode: null,
        stream: false,
        usage: { input_characters: 34 },
        costNano: 34n * NANO_PER_CHARACTER,
      });
      expect(await spent()).toBe(before + 34n * NANO_PER_CHARACTER);
    });

    it('passes an audio address answer (output_format url) through and bills it', async () => {
      const text = 'An address instead of hex audio';
      const answer = await post(speechBody(text, { output_format: 'url' }));

      expect(answer.status).toBe(200);
      const parsed = JSON.parse(answer.text);
      expect(parsed.data.audio).toBe(`${AUDIO_HOST}/t2a/${parsed.trace_id}.mp3`);
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({
        usage: { input_characters: usageCharacters(text) },
        costNano: BigInt(usageCharacters(text)) * NANO_PER_CHARACTER,
      });
    });
  });

  describe('streams', () => {
    it('pipes every event in order, byte for byte, and bills the final event once', async () => {
      const text = 'A stream of speech, piece by piece, 流式语音。';
      const sent = speechBody(text, { stream: true });
      expect(audioChunks(speechAudio(text)).length).toBeGreaterThan(5);
      const before = await spent();

      const answer = await post(sent);

      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
      const events = parseSse(answer.text);
      const traceId = JSON.parse(events[0].data).trace_id as string;
      expect(answer.text).toBe(expectedStream(text, traceId));
      expect(events).toHaveLength(audioChunks(speechAudio(text)).length + 1);
      expect(JSON.parse(events[events.length - 1].data).extra_info).toEqual(extraInfoOf(text));
      expect(gateway.simulator.requests[0].body.toString('utf8')).toBe(upstreamBodyFor(sent));
      const cost = BigInt(usageCharacters(text)) * NANO_PER_CHARACTER;
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({
        status: 200,
        errorCode: null,
        stream: true,
        usage: { input_characters: usageCharacters(text) },
        costNano: cost,
      });
      expect(await spent()).toBe(before + cost);
    });
  });

  describe('upstream errors with HTTP 200: passed through, not billed', () => {
    async function expectUnbilled(answer: RawAnswer, code: number, stream: boolean, before: bigint): Promise<void> {
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({
        status: 200,
        errorCode: `upstream_status_code_${code}`,
        stream,
        usage: null,
        costNano: 0n,
      });
      expect(await spent()).toBe(before);
    }

    it('JSON: a vendor error (1008) comes back unchanged', async () => {
      const before = await spent();

      const answer = await post(speechBody('[speech-error:1008] please fail'));

      expect(answer.status).toBe(200);
      const traceId = JSON.parse(answer.text).trace_id as string;
      expect(answer.text).toBe(speechErrorBody(1008, traceId));
      expect(gateway.simulator.requests).toHaveLength(1);
      await expectUnbilled(answer, 1008, false, before);
    });

    it('JSON: an empty text (2013) comes back unchanged', async () => {
      const before = await spent();

      const answer = await post(speechBody(''));

      expect(answer.status).toBe(200);
      const traceId = JSON.parse(answer.text).trace_id as string;
      expect(answer.text).toBe(speechErrorBody(2013, traceId, 'invalid params, text is empty'));
      await expectUnbilled(answer, 2013, false, before);
    });

    it('stream: two audio events then the error event (1008@2) come back unchanged', async () => {
      const text = '[speech-error:1008@2] the third piece never comes';
      const before = await spent();

      const answer = await post(speechBody(text, { stream: true }));

      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
      const events = parseSse(answer.text);
      expect(events).toHaveLength(3);
      const traceId = JSON.parse(events[0].data).trace_id as string;
      const [first, second] = audioChunks(speechAudio(text));
      expect(answer.text).toBe(`${audioEvent(first, traceId)}${audioEvent(second, traceId)}data: ${speechErrorBody(1008, traceId)}\n\n`);
      await expectUnbilled(answer, 1008, true, before);
    });

    it('stream: an empty text gives the single 2013 event, unchanged', async () => {
      const before = await spent();

      const answer = await post(speechBody('', { stream: true }));

      expect(answer.status).toBe(200);
      const events = parseSse(answer.text);
      expect(events).toHaveLength(1);
      const traceId = JSON.parse(events[0].data).trace_id as string;
      expect(answer.text).toBe(`data: ${speechErrorBody(2013, traceId, 'invalid params, text is empty')}\n\n`);
      await expectUnbilled(answer, 2013, true, before);
    });
  });

  describe("the gateway's own errors: chat shape plus base_resp, nothing forwarded, no record", () => {
    async function expectGatewayError(answer: RawAnswer, status: number, error: unknown, before: number): Promise<void> {
      expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({ status, body: error });
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(gateway.simulator.requests).toHaveLength(0);
      expect(await gateway.usageRecord(requestIdOf(answer))).toBeNull();
      expect(await recordCount()).toBe(before);
    }

    it('401 without a key: base_resp 1004', async () => {
      const before = await recordCount();
      const answer = await post(speechBody('no key'), {}, null);
      await expectGatewayError(answer, 401, gatewayError('invalid_api_key', 'authentication_error', 1004), before);
    });

    it('401 with an unknown key: base_resp 1004', async () => {
      const before = await recordCount();
      const answer = await post(speechBody('wrong key'), {}, 'gk-not-a-key');
      await expectGatewayError(answer, 401, gatewayError('invalid_api_key', 'authentication_error', 1004), before);
    });

    it('403 for a key whose scope excludes the model: base_resp 1004', async () => {
      const before = await recordCount();
      const answer = await post(speechBody('narrow key'), {}, IMAGE_KEYS.textOnly);
      await expectGatewayError(answer, 403, gatewayError('model_not_allowed', 'permission_error', 1004), before);
    });

    it('402 once the owner has used up its budget: base_resp 1008', async () => {
      // The poor owner's budget (0.000001) is spent by one call; the next one is refused.
      const first = await post(speechBody('spend it all'), {}, IMAGE_KEYS.poor);
      expect(first.status).toBe(200);
      gateway.simulator.reset();
      const before = await recordCount();

      const answer = await post(speechBody('one more'), {}, IMAGE_KEYS.poor);

      await expectGatewayError(answer, 402, gatewayError('insufficient_quota', 'insufficient_quota', 1008), before);
    });

    it.each([
      { what: 'a body that is not JSON', body: '{"model":"speech","text":' },
      { what: 'a JSON array', body: `[${speechBody('in a list')}]` },
      { what: 'an empty body', body: '' },
      { what: 'a body without model', body: JSON.stringify({ text: 'no model' }) },
      { what: 'a repeated top-level field', body: `{"text":"first",${speechBody('second').slice(1)}` },
      { what: 'an image model (wrong endpoint)', body: speechBody('an image model', {}, 'image-a') },
    ])('400 for $what: base_resp 2013', async ({ body }) => {
      const before = await recordCount();
      const answer = await post(body);
      await expectGatewayError(answer, 400, gatewayError(null, 'invalid_request_error', 2013), before);
    });

    it('404 for an unknown model: base_resp 2013', async () => {
      const before = await recordCount();
      const answer = await post(speechBody('who?', {}, UPSTREAM_MODEL));
      await expectGatewayError(answer, 404, gatewayError('model_not_found', 'not_found_error', 2013), before);
    });

    it('413 for a body over 32 MiB: base_resp 2013', async () => {
      const before = await recordCount();
      const answer = await post(speechBody('a'.repeat(32 * 1024 * 1024)));
      await expectGatewayError(answer, 413, gatewayError('request_too_large', 'invalid_request_error', 2013), before);
    });
  });

  describe('upstream failures', () => {
    it('an upstream 401 becomes 502 upstream_failed with base_resp 1000, not the vendor body', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { status: 401, body: { base_resp: { status_code: 1004, status_msg: 'vendor key secret-abc rejected' } } });

      const answer = await post(speechBody('credentials'));

      expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({
        status: 502,
        body: gatewayError('upstream_failed', 'upstream_error', 1000),
      });
      expect(answer.text).not.toContain('secret-abc');
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({ status: 502, errorCode: 'upstream_failed', usage: null, costNano: 0n });
    });

    it.each([false, true])(
      "a line whose key the vendor refuses (200 with base_resp 1004, stream %s) becomes 502 upstream_failed with base_resp 1000, not the vendor's answer",
      async (stream) => {
        const answer = await post(speechBody('refused line', { stream }, 'speech-wrong-key'));

        expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({
          status: 502,
          body: gatewayError('upstream_failed', 'upstream_error', 1000),
        });
        expect(answer.text).not.toContain('login fail');
        expect(gateway.simulator.requests).toHaveLength(1);
        expect(gateway.simulator.requests[0].headers.authorization).toBe(`Bearer ${WRONG_VENDOR_KEY}`);
        expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({
          line: 'line-wrong-key',
          status: 502,
          errorCode: 'upstream_failed',
          usage: null,
          costNano: 0n,
        });
      },
    );

    it.each([false, true])('a refused line key moves the call to the next line (stream %s), which answers and is billed', async (stream) => {
      const answer = await post(speechBody('moved on', { stream }, 'speech-failover'));

      expect(answer.status).toBe(200);
      expect(answer.text).toContain('"status_code":0');
      expect(gateway.simulator.requests.map((request) => request.headers.authorization)).toEqual([`Bearer ${WRONG_VENDOR_KEY}`, `Bearer ${VENDOR_KEY}`]);
      const record = await gateway.usageRecord(requestIdOf(answer));
      expect(record).toMatchObject({ line: 'line-a', status: 200, errorCode: null });
      expect(record?.costNano).toBeGreaterThan(0n);
    });

    it('an upstream 500 comes back with its status and body unchanged, unbilled', async () => {
      const vendorBody = { base_resp: { status_code: 1000, status_msg: 'internal error on the vendor side' } };
      gateway.simulator.failNext(UPSTREAM_PATH, { status: 500, body: vendorBody });

      const answer = await post(speechBody('vendor trouble'));

      expect(answer.status).toBe(500);
      expect(answer.text).toBe(JSON.stringify(vendorBody));
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({ status: 500, usage: null, costNano: 0n });
    });

    it('a stream reset before its first event gives 502 upstream_failed with base_resp 1000', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'reset-mid-stream', afterEvents: 0 });

      const answer = await post(speechBody('broken at once', { stream: true }));

      expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({
        status: 502,
        body: gatewayError('upstream_failed', 'upstream_error', 1000),
      });
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({ status: 502, usage: null, costNano: 0n });
    });

    it('an upstream that does not answer in time gives 504 with base_resp 1001, then 503 with base_resp 1000 while the line cools', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'delay', ms: 1500 });

      const late = await post(speechBody('too slow', {}, 'speech-slow'));
      const cooling = await post(speechBody('while cooling', {}, 'speech-slow'));

      expect({ status: late.status, body: JSON.parse(late.text) }).toEqual({
        status: 504,
        body: gatewayError('upstream_timeout', 'upstream_error', 1001),
      });
      expect({ status: cooling.status, body: JSON.parse(cooling.text) }).toEqual({
        status: 503,
        body: gatewayError('service_unavailable', 'upstream_error', 1000),
      });
      expect(gateway.simulator.requests).toHaveLength(1);
    });

    it('every line busy gives 429 rate_limit_exceeded with Retry-After and base_resp 1002', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'stall-mid-stream', afterEvents: 1 });
      const tag = `holder-${randomBytes(6).toString('hex')}`;
      const holder = httpRequest(`${gateway.url}${SPEECH_PATH}`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': 'application/json', 'x-client-request-id': tag },
      });
      holder.on('error', () => undefined);
      holder.end(speechBody('holding the only slot', { stream: true }, 'speech-narrow'));
      try {
        await until(() => gateway.simulator.requests.length === 1, 'the holding call to reach the simulator');

        const answer = await post(speechBody('no room', {}, 'speech-narrow'));

        expect({ status: answer.status, body: JSON.parse(answer.text) }).toEqual({
          status: 429,
          body: gatewayError('rate_limit_exceeded', 'rate_limit_error', 1002),
        });
        expect(answer.headers['retry-after']).toMatch(/^\d+$/);
        expect(gateway.simulator.requests).toHaveLength(1);
      } finally {
        holder.destroy();
        // The slot is free again once the left call is recorded; later tests use the same line.
        await until(async () => (await gateway.usageRecords()).some((record) => record.clientRequestId === tag), 'the holding call to end');
      }
    });

    it('a stream that breaks off ends with an in-stream base_resp 1000 event and a record upstream_stream_broken', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'reset-mid-stream', afterEvents: 2 });
      const text = 'This stream will break after two pieces of audio';

      const answer = await post(speechBody(text, { stream: true }));

      expect(answer.status).toBe(200);
      const events = parseSse(answer.text);
      expect(events).toHaveLength(3);
      const traceId = JSON.parse(events[0].data).trace_id as string;
      const [first, second] = audioChunks(speechAudio(text));
      expect(answer.text.startsWith(`${audioEvent(first, traceId)}${audioEvent(second, traceId)}data: `)).toBe(true);
      expect(JSON.parse(events[2].data)).toEqual({ base_resp: { status_code: 1000, status_msg: expect.any(String) } });
      expect(await gateway.usageRecord(requestIdOf(answer))).toMatchObject({
        status: 200,
        errorCode: 'upstream_stream_broken',
        stream: true,
        usage: null,
        costNano: 0n,
      });
    });
  });

  describe('a client that leaves: the upstream call is aborted (speech is not an image generation)', () => {
    async function recordTagged(tag: string): Promise<UsageRecord> {
      let found: UsageRecord | undefined;
      await until(async () => {
        found = (await gateway.usageRecords()).find((record) => record.clientRequestId === tag);
        return found !== undefined;
      }, `the record of ${tag}`);
      return found!;
    }

    it('mid-stream: recorded 499 client_closed unbilled, and the line slot is free again at once', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'stall-mid-stream', afterEvents: 2 });
      const tag = `leaving-${randomBytes(6).toString('hex')}`;
      const received = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no stream event arrived')), 10_000);
        const request = httpRequest(`${gateway.url}${SPEECH_PATH}`, {
          method: 'POST',
          agent: false,
          headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': 'application/json', 'x-client-request-id': tag },
        });
        request.on('response', (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('error', () => undefined);
          response.on('data', (chunk: string) => {
            text += chunk;
            if (!text.includes('\n\n')) return;
            clearTimeout(timer);
            request.destroy();
            resolve(text);
          });
        });
        request.on('error', () => undefined);
        request.end(speechBody('A long stream that the client leaves halfway through', { stream: true }, 'speech-narrow'));
      });
      expect(JSON.parse(parseSse(received)[0].data).data.status).toBe(1);

      const record = await recordTagged(tag);

      expect(record).toMatchObject({ status: 499, errorCode: 'client_closed', stream: true, line: 'line-narrow', usage: null, costNano: 0n });
      // line-narrow has one slot: the next call gets through only if the stalled upstream call was cut.
      const next = await post(speechBody('next in line', {}, 'speech-narrow'));
      expect(next.status).toBe(200);
      expect(gateway.simulator.requests).toHaveLength(2);
    });

    it('before the answer: recorded 499 client_closed at once, without waiting for the upstream, unbilled', async () => {
      gateway.simulator.failNext(UPSTREAM_PATH, { kind: 'delay', ms: 3000 });
      const tag = `leaving-${randomBytes(6).toString('hex')}`;
      const request = httpRequest(`${gateway.url}${SPEECH_PATH}`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${IMAGE_KEYS.all}`, 'content-type': 'application/json', 'x-client-request-id': tag },
      });
      request.on('error', () => undefined);
      request.end(speechBody('Nobody will hear this', { stream: true }));
      await until(() => gateway.simulator.requests.length === 1, 'the call to reach the simulator');
      const leftAt = Date.now();
      request.destroy();

      const record = await recordTagged(tag);

      expect(Date.now() - leftAt).toBeLessThan(2500);
      expect(record).toMatchObject({ status: 499, errorCode: 'client_closed', usage: null, costNano: 0n, upstreamHeadersMs: null });
    });
  });
});
