import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defaultSettings } from '../src/config/gateway-options';
import { KeyFailureLimiter } from '../src/auth/key-failure-limiter';
import { SIMULATED_PNG_BASE64 } from './simulator/image-common';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { formBody, IMAGE_PATHS } from './support/images-kit';
import { oneModelPerInterfaceYaml } from './support/test-config';
import { until } from './support/until';
import { VENDOR_B, VENDOR_C, VIDEO_TEST_SETTINGS } from './support/video-kit';

/**
 * Hostile input: seeded, reproducible fuzzing of every model entry point with
 * broken JSON, bytes that are not UTF-8, prototype keys, deep nesting, thousands of keys,
 * repeated keys, wrong content types; huge headers, stalled bodies, oversize bodies. Each body
 * gets the status SPEC.md gives ("Errors": 400 for a body that is not a JSON object with
 * `model` or that repeats a top-level field, 413 over 32 MiB) in the entry's own error shape,
 * nothing refused reaches the upstream, the gateway keeps answering, no prototype is polluted
 * and memory comes back. Then: key guessing from one address is refused with 429 without
 * touching valid keys or other addresses, and one owner cannot reach another's tasks or records.
 */

const KEY_A = 'gk-hostile-team-a-0001';
const KEY_B = 'gk-hostile-team-b-0001';
const BODY_LIMIT_BYTES = 32 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 1_500;
const MIB = 1024 * 1024;

function hostileConfigYaml(simulator: string): string {
  return oneModelPerInterfaceYaml(
    simulator,
    `
owners:
  - { id: team-a, kind: project, budget: 1000 }
  - { id: team-b, kind: project, budget: 1000 }
keys:
  - { key: ${KEY_A}, owner: team-a, models: ["*"] }
  - { key: ${KEY_B}, owner: team-b, models: ["*"] }
`,
  );
}

type Shape = 'chat' | 'messages' | 'google' | 'speech';

interface EntryPoint {
  name: string;
  path: string;
  shape: Shape;
  /** A body the entry takes (200 from the simulator). */
  base: Record<string, unknown>;
  /** The body goes upstream as sent (model aside): forwarded fragments can be looked for. */
  native: boolean;
}

const TEXT = [{ role: 'user', content: 'Hello there' }];
const PROMPT = 'A red fox in fresh snow';
const ENTRY_POINTS: EntryPoint[] = [
  { name: 'chat completions', path: '/v1/chat/completions', shape: 'chat', native: true, base: { model: 'chat-model', messages: TEXT } },
  { name: 'responses', path: '/v1/responses', shape: 'chat', native: true, base: { model: 'chat-model', input: 'Hello there' } },
  { name: 'responses (translated)', path: '/v1/responses', shape: 'chat', native: false, base: { model: 'messages-model', input: 'Hello there' } },
  { name: 'messages', path: '/v1/messages', shape: 'messages', native: true, base: { model: 'messages-model', max_tokens: 32, messages: TEXT } },
  { name: 'messages (translated)', path: '/v1/messages', shape: 'messages', native: false, base: { model: 'chat-model', max_tokens: 32, messages: TEXT } },
  { name: 'count_tokens', path: '/v1/messages/count_tokens', shape: 'messages', native: true, base: { model: 'messages-model', messages: TEXT } },
  { name: 'embeddings', path: '/v1/embeddings', shape: 'chat', native: true, base: { model: 'embed-model', input: 'Hello there' } },
  { name: 'images generations', path: IMAGE_PATHS.generations, shape: 'chat', native: true, base: { model: 'image-a', prompt: PROMPT, size: '1024x1024' } },
  {
    name: 'images edits (JSON)',
    path: IMAGE_PATHS.edits,
    shape: 'chat',
    native: true,
    base: { model: 'image-a', prompt: PROMPT, images: [{ image_url: `data:image/png;base64,${SIMULATED_PNG_BASE64}` }] },
  },
  { name: 'vendor-b images', path: IMAGE_PATHS.vendorB, shape: 'chat', native: true, base: { model: 'image-b', prompt: PROMPT, size: '1K' } },
  {
    name: 'generateContent',
    path: IMAGE_PATHS.generateContent('image-c'),
    shape: 'google',
    native: true,
    base: { contents: [{ role: 'user', parts: [{ text: PROMPT }] }], generationConfig: { responseModalities: ['TEXT', 'IMAGE'] } },
  },
  { name: 'speech', path: IMAGE_PATHS.speech, shape: 'speech', native: true, base: { model: 'speech', text: 'Hello there', stream: false } },
  { name: 'vendor-c video submit', path: VENDOR_C.submit, shape: 'chat', native: true, base: { model: 'video-c', content: [{ type: 'text', text: PROMPT }] } },
  { name: 'vendor-b video submit', path: VENDOR_B.submit, shape: 'chat', native: true, base: { model: 'video-b', content: [{ type: 'text', text: PROMPT }] } },
];

/** mulberry32: a small seeded generator, so every run sends the same bodies. */
function seeded(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return Math.floor((((value ^ (value >>> 14)) >>> 0) / 4294967296) * below);
  };
}

/** Byte offsets in minified JSON: just after each opening quote, and each structural byte outside strings. */
function landmarks(text: string): { stringStarts: number[]; structural: number[]; objectStarts: number[] } {
  const stringStarts: number[] = [];
  const structural: number[] = [];
  const objectStarts: number[] = [];
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (inString) {
      if (character === '\\') index++;
      else if (character === '"') inString = false;
      continue;
    }
    if (character === '"') {
      inString = true;
      stringStarts.push(index + 1);
    } else if ('{}[],:'.includes(character)) {
      structural.push(index);
      if (character === '{') objectStarts.push(index);
    }
  }
  return { stringStarts, structural, objectStarts };
}

/** Invalid UTF-8: a stray byte, a lone continuation, a cut sequence, an overlong slash, a surrogate, beyond U+10FFFF. */
const NOT_UTF8 = [[0xff], [0x80], [0xc3], [0xe2, 0x82], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]];
const POLLUTERS = ['"__proto__":{"polluted":"yes"}', '"constructor":{"prototype":{"polluted":"yes"}}', '"prototype":{"polluted":"yes"}'];

type Expected = { status: 200; contains?: string } | { status: 400; message: RegExp };

interface HostileCase {
  entry: EntryPoint;
  what: string;
  body: Buffer;
  expected: Expected;
}

function splice(text: string, at: number, insert: string | Buffer, remove = 0): Buffer {
  const bytes = Buffer.from(text);
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(insert), bytes.subarray(at + remove)]);
}

const NOT_JSON = /not valid JSON|must be a JSON object/;

/** The seeded bodies of one entry point: a fixed mix of each kind at random places. */
function hostileCases(entry: EntryPoint, random: (below: number) => number): HostileCase[] {
  const text = JSON.stringify(entry.base);
  const { stringStarts, structural, objectStarts } = landmarks(text);
  const pick = <T>(items: T[]): T => items[random(items.length)];
  const cases: HostileCase[] = [];
  const add = (what: string, body: Buffer, expected: Expected) => cases.push({ entry, what, body, expected });
  for (let round = 0; round < 3; round++) {
    const cut = 1 + random(text.length - 1);
    add(`truncated at byte ${cut}`, Buffer.from(text.slice(0, cut)), { status: 400, message: /not valid JSON/ });
    const at = pick(structural);
    const replacement = pick(['', '{', '}', '[', ']', ',', ':'].filter((character) => character !== text[at]));
    add(`structural byte ${at} replaced by ${JSON.stringify(replacement)}`, splice(text, at, replacement, 1), { status: 400, message: NOT_JSON });
    const bad = Buffer.from(pick(NOT_UTF8));
    add(`bytes ${bad.toString('hex')} inside a string`, splice(text, pick(stringStarts), bad), { status: 400, message: /UTF-8/ });
    const noise = Buffer.alloc(1 + random(256));
    for (let index = 0; index < noise.length; index++) noise[index] = random(256);
    add('random bytes', noise, { status: 400, message: NOT_JSON });
  }
  for (const polluter of POLLUTERS) {
    add(`${polluter} at the top level`, splice(text, 1, `${polluter},`), { status: 200, contains: polluter });
    const nested = pick(objectStarts.slice(1));
    if (nested !== undefined) add(`${polluter} in a nested object`, splice(text, nested + 1, `${polluter},`), { status: 200, contains: polluter });
    add(`${polluter} in a new nested object`, splice(text, 1, `"extra":{"deeper":{${polluter}}},`), { status: 200, contains: polluter });
  }
  const firstKey = Object.keys(entry.base)[random(Object.keys(entry.base).length)];
  add(`top-level ${JSON.stringify(firstKey)} repeated`, splice(text, text.length - 1, `,${JSON.stringify(firstKey)}:${JSON.stringify(entry.base[firstKey])}`), {
    status: 400,
    message: /repeats the top-level field/,
  });
  add('top-level key repeated through an escape', splice(text, 1, `"${firstKey.replace(/^./, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)}":null,`), {
    status: 400,
    message: /repeats the top-level field/,
  });
  add('a top-level key with a line break and a snowman', splice(text, 1, '"bad\\r\\nkey\\u2603":1,'), { status: 200, contains: 'bad\\r\\nkey' });
  const repeated = '"note":"first","note":"second"';
  add('a key repeated in a new nested object', splice(text, 1, `"extra":{${repeated},"inner":{${repeated}}},`), { status: 200, contains: repeated });
  add('nesting 10,000 deep', splice(text, 1, `"extra":${'['.repeat(10_000)}${']'.repeat(10_000)},`), { status: 400, message: /nesting deeper/ });
  add('nesting 10,000 objects deep', splice(text, 1, `"extra":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)},`), { status: 400, message: /nesting deeper/ });
  add('an unclosed nesting 10,000 deep', splice(text, 1, `"extra":${'['.repeat(10_000)}`), { status: 400, message: /not valid JSON/ });
  return cases;
}

/** 50,000 extra top-level keys: valid JSON, forwarded (the upstream judges its own fields). */
function thousandsOfKeys(entry: EntryPoint): Buffer {
  const extra = Array.from({ length: 50_000 }, (_, index) => `"k${index}":${index}`).join(',');
  return splice(JSON.stringify(entry.base), 1, `${extra},`);
}

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request with exactly these bytes (and optionally from another loopback address). */
function send(
  url: string,
  path: string,
  options: { key?: string; body?: Buffer | string; headers?: Record<string, string | undefined>; method?: string; localAddress?: string },
): Promise<RawAnswer> {
  const merged: Record<string, string | undefined> = {
    ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    ...options.headers,
  };
  // An undefined value leaves the header out altogether.
  const headers = Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== undefined)) as Record<string, string>;
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${url}${path}`,
      { method: options.method ?? 'POST', headers, agent: false, localAddress: options.localAddress },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** Sends only the head of a request announcing `length` body bytes; resolves with the answer. */
function announce(url: string, path: string, key: string, length: number): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${url}${path}`,
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(length) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          request.destroy();
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    request.on('error', reject);
    request.flushHeaders();
  });
}

function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The entry's own error shape (docs/api.md "Errors") with this status. */
function expectErrorShape(entry: EntryPoint, answer: RawAnswer, status: number): string {
  const body = parse(answer.text);
  expect({ entry: entry.name, status: answer.status }).toEqual({ entry: entry.name, status });
  switch (entry.shape) {
    case 'chat':
      expect(Object.keys(body)).toEqual(['error']);
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'type']);
      break;
    case 'messages':
      expect(body).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'type']);
      break;
    case 'google':
      expect(body.error).toMatchObject({ code: status, status: expect.any(String), details: [expect.objectContaining({ reason: expect.any(String) })] });
      break;
    case 'speech':
      expect(body).toMatchObject({ error: { type: expect.any(String) }, base_resp: { status_code: expect.any(Number) } });
      break;
  }
  expect(answer.headers['x-request-id']).toBeTruthy();
  return body.error.message;
}

/** Heap plus Buffers, after a full collection when one can be forced. */
function memoryInUse(): number {
  collect?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** `global.gc` when node runs with --expose-gc, else the same function obtained at run time. */
const collect: (() => void) | undefined = (() => {
  const gc = global.gc;
  if (typeof gc === 'function') return () => void gc();
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
})();

describe('hostile input', () => {
  let gateway: GatewayHarness;
  const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: hostileConfigYaml,
      settings: { video: VIDEO_TEST_SETTINGS, server: { ...defaultSettings().server, requestTimeoutMs: REQUEST_TIMEOUT_MS } },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => {
    gateway.simulator.requests.length = 0;
  });

  async function expectStillServing(): Promise<void> {
    const answer = await send(gateway.url, '/v1/chat/completions', { key: KEY_A, body: JSON.stringify(ENTRY_POINTS[0].base) });
    expect(answer.status).toBe(200);
  }

  it('takes the base body of every entry point, so every refusal below is about the hostile part', async () => {
    for (const entry of ENTRY_POINTS) {
      const answer = await send(gateway.url, entry.path, { key: KEY_A, body: JSON.stringify(entry.base) });
      expect({ entry: entry.name, status: answer.status }).toEqual({ entry: entry.name, status: 200 });
    }
  });

  describe.each(ENTRY_POINTS)('$name', (entry) => {
    const cases = hostileCases(entry, seeded(0x5eed + entry.path.length * 31 + entry.name.length));

    it(`answers ${cases.length} seeded hostile bodies with their status, forwarding only what is valid JSON`, async () => {
      for (const item of cases) {
        gateway.simulator.requests.length = 0;
        const answer = await send(gateway.url, entry.path, { key: KEY_A, body: item.body });
        const label = `${entry.name}: ${item.what}`;
        if (item.expected.status === 400) {
          const message = expectErrorShape(entry, answer, 400);
          expect({ label, message }).toEqual({ label, message: expect.stringMatching(item.expected.message) });
          expect({ label, forwarded: gateway.simulator.requests.length }).toEqual({ label, forwarded: 0 });
        } else {
          expect({ label, status: answer.status }).toEqual({ label, status: 200 });
          expect({ label, forwarded: gateway.simulator.requests.length >= 1 }).toEqual({ label, forwarded: true });
          if (entry.native && item.expected.contains) {
            expect({ label, forwarded: gateway.simulator.requests[0].body.includes(item.expected.contains) }).toEqual({ label, forwarded: true });
          }
        }
      }
      await expectStillServing();
    });

    it('forwards a body with 50,000 top-level keys unchanged', async () => {
      const body = thousandsOfKeys(entry);
      const answer = await send(gateway.url, entry.path, { key: KEY_A, body });
      expect({ entry: entry.name, status: answer.status }).toEqual({ entry: entry.name, status: 200 });
      if (entry.native) expect(gateway.simulator.requests[0].body.includes('"k49999":49999')).toBe(true);
      // Translated: the unknown fields are named in X-Gateway-Dropped, within a size clients read.
      else expect(String(answer.headers['x-gateway-dropped'])).toMatch(/^k0,k1,.*,\+\d+ more$/);
    });

    it('answers a body announced over 32 MiB with 413 in its own shape, before reading it', async () => {
      const answer = await announce(gateway.url, entry.path, KEY_A, BODY_LIMIT_BYTES + 1);
      expectErrorShape(entry, answer, 413);
      expect(parse(answer.text).error.message).toMatch(/32 MiB/);
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  it('leaves Object.prototype as it was after every prototype key above', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.constructor).toBe(Object);
  });

  describe('content types', () => {
    const chat = ENTRY_POINTS[0];
    const json = JSON.stringify(chat.base);

    it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream', 'image/png'])(
      'refuses a JSON body sent as %s with 400 naming application/json, forwarding nothing',
      async (contentType) => {
        const answer = await send(gateway.url, chat.path, { key: KEY_A, body: json, headers: { 'content-type': contentType } });
        expect(expectErrorShape(chat, answer, 400)).toContain('application/json');
        expect(gateway.simulator.requests).toHaveLength(0);
      },
    );

    it('reads a JSON body sent as application/json with any charset parameter', async () => {
      const answer = await send(gateway.url, chat.path, { key: KEY_A, body: json, headers: { 'content-type': 'application/json; charset=latin1' } });
      expect(answer.status).toBe(200);
    });

    it('refuses a JSON body sent without any content type with 400, forwarding nothing', async () => {
      const answer = await send(gateway.url, chat.path, { key: KEY_A, body: json, headers: { 'content-type': undefined } });
      expect(expectErrorShape(chat, answer, 400)).toContain('application/json');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it.each(['', 'nonsense', '/', 'application/'])('refuses a content type that is no media type (%j) with 400, forwarding nothing', async (contentType) => {
      const answer = await send(gateway.url, chat.path, { key: KEY_A, body: json, headers: { 'content-type': contentType } });
      expectErrorShape(chat, answer, 400);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses a form on a JSON-only entry with 400, forwarding nothing', async () => {
      const form = formBody([['model', 'chat-model']]);
      const answer = await send(gateway.url, chat.path, { key: KEY_A, body: form.body, headers: { 'content-type': form.contentType } });
      expectErrorShape(chat, answer, 400);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it.each([
      ['no boundary', 'multipart/form-data', formBody([['model', 'image-a']]).body],
      ['a boundary that is not in the body', 'multipart/form-data; boundary=elsewhere', formBody([['model', 'image-a']]).body],
      ['a JSON body', `multipart/form-data; boundary=x`, Buffer.from(JSON.stringify({ model: 'image-a', prompt: PROMPT }))],
      [
        'a cut form',
        formBody([['model', 'image-a']]).contentType,
        formBody([
          ['model', 'image-a'],
          ['prompt', PROMPT],
        ]).body.subarray(0, 60),
      ],
    ])('refuses an image edit declared multipart with %s with 400, forwarding nothing', async (_, contentType, body) => {
      const answer = await send(gateway.url, IMAGE_PATHS.edits, { key: KEY_A, body, headers: { 'content-type': contentType } });
      expectErrorShape(ENTRY_POINTS[8], answer, 400);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses a multipart edit over 32 MiB with 413, forwarding nothing', async () => {
      const big = { filename: 'big.png', type: 'image/png', bytes: Buffer.alloc(BODY_LIMIT_BYTES, 7) };
      const form = formBody([
        ['model', 'image-a'],
        ['prompt', PROMPT],
        ['image', big],
      ]);
      expect(form.body.length).toBeGreaterThan(BODY_LIMIT_BYTES);
      const answer = await send(gateway.url, IMAGE_PATHS.edits, { key: KEY_A, body: form.body, headers: { 'content-type': form.contentType } });
      expectErrorShape(ENTRY_POINTS[8], answer, 413);
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  describe('headers and slow clients', () => {
    it('answers headers over 16 KiB with 431 and keeps serving', async () => {
      const answer = await send(gateway.url, '/v1/chat/completions', {
        key: KEY_A,
        body: JSON.stringify(ENTRY_POINTS[0].base),
        headers: { 'x-padding': 'a'.repeat(20 * 1024) },
      });
      expect(answer.status).toBe(431);
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.parse(answer.text)).toEqual({ error: { message: expect.stringContaining('16 KiB'), type: 'invalid_request_error', code: null } });
      expect(gateway.simulator.requests).toHaveLength(0);
      await expectStillServing();
    });

    it.each([
      ['a body shorter than its Content-Length', 'content-length: 100000'],
      ['a chunked body that stops', 'transfer-encoding: chunked'],
    ])('cuts off %s after the request timeout, serving others meanwhile', async (_, framing) => {
      const address = new URL(gateway.url);
      const socket = connect(Number(address.port), address.hostname);
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      const head = `POST /v1/chat/completions HTTP/1.1\r\nhost: ${address.host}\r\nauthorization: Bearer ${KEY_A}\r\ncontent-type: application/json\r\n${framing}\r\n\r\n`;
      socket.write(framing.startsWith('transfer') ? `${head}5\r\n{"mod\r\n` : `${head}{"mod`);

      await expectStillServing();
      let isClosed = false;
      void closed.then(() => (isClosed = true));
      await until(() => isClosed, 'the stalled request to be cut off', REQUEST_TIMEOUT_MS * 8);
      expect(received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(received).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
      const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
      expect(body).toEqual({ error: { message: expect.stringContaining('REQUEST_TIMEOUT_MS'), type: 'invalid_request_error', code: null } });
      expect(gateway.simulator.requests.filter((request) => request.path.startsWith('/v1/chat'))).toHaveLength(1);
    });

    it('does not cut off an answer that takes longer than the request timeout', async () => {
      gateway.simulator.failNext('/v1/chat/completions', { kind: 'delay', ms: REQUEST_TIMEOUT_MS * 2 });
      await expectStillServing();
    });
  });

  it('comes back to its memory baseline after oversize, deep and wide bodies', async () => {
    const wide = thousandsOfKeys(ENTRY_POINTS[0]);
    const deep = splice(JSON.stringify(ENTRY_POINTS[0].base), 1, `"extra":${'['.repeat(10_000)}${']'.repeat(10_000)},`);
    const big = formBody([
      ['model', 'image-a'],
      ['image', { filename: 'big.png', type: 'image/png', bytes: Buffer.alloc(BODY_LIMIT_BYTES, 7) }],
    ]);
    const round = async () => {
      await send(gateway.url, '/v1/chat/completions', { key: KEY_A, body: wide });
      await send(gateway.url, '/v1/chat/completions', { key: KEY_A, body: deep });
      await send(gateway.url, IMAGE_PATHS.edits, { key: KEY_A, body: big.body, headers: { 'content-type': big.contentType } });
      await Promise.all(ENTRY_POINTS.map((entry) => announce(gateway.url, entry.path, KEY_A, BODY_LIMIT_BYTES + 1)));
    };
    await round();
    const baseline = memoryInUse();
    for (let index = 0; index < 4; index++) await round();
    let settled = memoryInUse();
    await until(() => (settled = memoryInUse()) < baseline + 64 * MIB, `memory within 64 MiB of ${Math.round(baseline / MIB)} MiB`);
    expect(settled).toBeLessThan(baseline + 64 * MIB);
    await expectStillServing();
  });

  describe('isolation of owners', () => {
    let teamATaskC: string;
    let teamATaskB: string;

    beforeAll(async () => {
      teamATaskC = parse((await send(gateway.url, VENDOR_C.submit, { key: KEY_A, body: JSON.stringify(ENTRY_POINTS[12].base) })).text).task_id;
      teamATaskB = parse((await send(gateway.url, VENDOR_B.submit, { key: KEY_A, body: JSON.stringify(ENTRY_POINTS[13].base) })).text).id;
    });

    it("gives 404 to another owner's key on both vendors' task paths, query and cancel, forwarding nothing", async () => {
      expect(teamATaskC).toMatch(/^vtask_/);
      expect(teamATaskB).toMatch(/^vtask_/);
      gateway.simulator.requests.length = 0;
      for (const [method, path] of [
        ['GET', VENDOR_C.query(teamATaskC)],
        ['DELETE', VENDOR_C.cancel(teamATaskC)],
        ['GET', VENDOR_B.query(teamATaskB)],
        ['DELETE', VENDOR_B.cancel(teamATaskB)],
      ]) {
        const answer = await send(gateway.url, path, { key: KEY_B, method });
        expect({ method, path, status: answer.status, code: parse(answer.text)?.error?.code }).toEqual({ method, path, status: 404, code: 'not_found' });
      }
      expect(gateway.simulator.requests).toHaveLength(0);
      // The owner itself still reaches both.
      expect((await send(gateway.url, VENDOR_C.query(teamATaskC), { key: KEY_A, method: 'GET' })).status).toBe(200);
      expect((await send(gateway.url, VENDOR_B.query(teamATaskB), { key: KEY_A, method: 'GET' })).status).toBe(200);
    });

    it('gives 404 to guessed task ids of every form, forwarding nothing', async () => {
      const random = seeded(0x1d5);
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
      const guesses = [
        ...Array.from({ length: 10 }, () => `vtask_${Array.from({ length: 24 }, () => alphabet[random(alphabet.length)]).join('')}`),
        teamATaskC.slice(0, -1) + (teamATaskC.endsWith('A') ? 'B' : 'A'),
        teamATaskC.toUpperCase(),
        `${teamATaskC}%00`,
        `${teamATaskC}%20`,
        encodeURIComponent(`${teamATaskC}' OR '1'='1`),
        encodeURIComponent(`' OR 1=1 --`),
        '%25',
        '..%2F..%2Fadmin',
        'vtask_' + 'x'.repeat(240),
        encodeURIComponent('vtask_☃'),
      ];
      gateway.simulator.requests.length = 0;
      for (const guess of guesses) {
        for (const [method, path] of [
          ['GET', VENDOR_C.query(guess)],
          ['DELETE', VENDOR_C.cancel(guess)],
          ['GET', VENDOR_B.query(guess)],
          ['DELETE', VENDOR_B.cancel(guess)],
        ]) {
          const answer = await send(gateway.url, path, { key: KEY_B, method });
          expect({ path, method, status: answer.status }).toEqual({ path, method, status: 404 });
        }
      }
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('never shows usage records or owners to a data-plane key: the admin API wants the admin token', async () => {
      const submit = await send(gateway.url, '/v1/chat/completions', { key: KEY_A, body: JSON.stringify(ENTRY_POINTS[0].base) });
      const requestId = String(submit.headers['x-request-id']);
      await gateway.flushUsage();
      for (const key of [KEY_A, KEY_B]) {
        for (const path of [`/admin/usage/${requestId}`, '/admin/owners/team-a', '/admin/owners/team-b', '/admin/keys']) {
          const answer = await send(gateway.url, path, { key, method: 'GET' });
          expect({ path, status: answer.status }).toEqual({ path, status: 401 });
        }
      }
      for (const path of [`/v1/usage/${requestId}`, `/v1/usage?request_id=${requestId}`, `/v1/records/${requestId}`]) {
        expect((await send(gateway.url, path, { key: KEY_B, method: 'GET' })).status).toBe(404);
      }
      const admin = await send(gateway.url, `/admin/usage/${requestId}`, { method: 'GET', headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` } });
      expect(admin.status).toBe(200);
    });
  });
});

describe('key guessing', () => {
  const LIMIT = 5;
  const WINDOW_MS = 1_500;
  let gateway: GatewayHarness;
  let wrong = 0;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: hostileConfigYaml,
      settings: { keyFailures: { limit: LIMIT, windowMs: WINDOW_MS } },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const chatBody = JSON.stringify(ENTRY_POINTS[0].base);
  const guess = (localAddress?: string) =>
    send(gateway.url, '/v1/chat/completions', { key: `gk-guess-${String(wrong++).padStart(6, '0')}`, body: chatBody, localAddress });

  it('refuses an address with 429 and Retry-After once it has presented too many wrong keys, valid keys still welcome', async () => {
    const limiter = gateway.app.get(KeyFailureLimiter);
    const counted = jest.spyOn(limiter, 'recordFailure');
    for (let attempt = 0; attempt < LIMIT; attempt++) expect((await guess()).status).toBe(401);

    const refused = await guess();
    expect(refused.status).toBe(429);
    expect(parse(refused.text).error).toMatchObject({ code: 'rate_limit_exceeded', message: expect.stringMatching(/invalid API keys/) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const messages = await send(gateway.url, '/v1/messages', { key: 'gk-guess-messages', body: JSON.stringify(ENTRY_POINTS[3].base) });
    expect(messages.status).toBe(429);
    expect(parse(messages.text)).toMatchObject({ type: 'error', error: { code: 'rate_limit_exceeded' } });
    expect(gateway.simulator.requests).toHaveLength(0);

    // A valid key from the same address goes through, and never touches the limiter.
    counted.mockClear();
    for (let call = 0; call < 3; call++) expect((await send(gateway.url, '/v1/chat/completions', { key: KEY_A, body: chatBody })).status).toBe(200);
    expect(counted).not.toHaveBeenCalled();
    counted.mockRestore();

    // The window ends: wrong keys are plain 401 again.
    await until(async () => (await guess()).status === 401, 'the window to end', WINDOW_MS * 6);
  });

  it('counts each address on its own', async () => {
    for (let attempt = 0; attempt <= LIMIT; attempt++) await guess();
    expect((await guess()).status).toBe(429);
    expect((await guess('127.0.0.2')).status).toBe(401);
  });

  it('does not believe X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const spoofed = (client: string) =>
      send(gateway.url, '/v1/chat/completions', {
        key: `gk-guess-${String(wrong++).padStart(6, '0')}`,
        body: chatBody,
        localAddress: '127.0.0.4',
        headers: { 'x-forwarded-for': client },
      });
    for (let attempt = 0; attempt < LIMIT; attempt++) expect((await spoofed(`198.51.100.${attempt}`)).status).toBe(401);

    expect((await spoofed('198.51.100.99')).status).toBe(429);
  });
});

describe('key guessing behind a trusted proxy (TRUSTED_PROXIES)', () => {
  const LIMIT = 3;
  let gateway: GatewayHarness;
  let wrong = 0;

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml: hostileConfigYaml,
      settings: {
        keyFailures: { limit: LIMIT, windowMs: 60_000 },
        server: { ...defaultSettings().server, trustedProxies: ['127.0.0.5'] },
      },
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  const chatBody = JSON.stringify(ENTRY_POINTS[0].base);
  /** A request as the proxy at 127.0.0.5 forwards it, for `client`. */
  const viaProxy = (client: string, key = `gk-guess-${String(wrong++).padStart(6, '0')}`) =>
    send(gateway.url, '/v1/chat/completions', { key, body: chatBody, localAddress: '127.0.0.5', headers: { 'x-forwarded-for': client } });

  it('counts refused keys per client named by the proxy, so one guesser does not lock out the others', async () => {
    for (let attempt = 0; attempt < LIMIT; attempt++) expect((await viaProxy('203.0.113.7')).status).toBe(401);
    expect((await viaProxy('203.0.113.7')).status).toBe(429);

    expect((await viaProxy('203.0.113.8')).status).toBe(401);
    expect((await viaProxy('203.0.113.7', KEY_A)).status).toBe(200);
  });

  it('takes the address the proxy appended, not one the client put before it', async () => {
    for (let attempt = 0; attempt < LIMIT; attempt++) expect((await viaProxy(`10.9.9.${attempt}, 203.0.113.20`)).status).toBe(401);

    expect((await viaProxy('10.9.9.99, 203.0.113.20')).status).toBe(429);
  });
});
