import { NestFactory } from '@nestjs/core';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BodySpool } from '../src/request-body/body-spool';
import { scanTopLevel } from '../src/request-body/json-scan';
import { defaultSettings } from '../src/config/gateway-options';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { formBody } from './support/images-kit';
import { KEYS } from './support/test-config';
import { until } from './support/until';
import type { RecordedRequest } from './simulator/upstream-simulator';

/**
 * Large request bodies (docs/configuration.md "Large bodies"): a body above `server.bodySpool.aboveBytes`
 * (BODY_SPOOL_ABOVE_BYTES, 1 MiB here as by default) is written to an unlinked file in
 * `bodySpool.directory` (BODY_SPOOL_DIR) while it arrives; the guards work on its skeleton and the
 * body goes upstream from the file, `model` replaced, once per line tried. These calls check what
 * the upstream receives byte for byte, that the body really sits in a deleted file of the spool
 * folder while the call is under way, that faults in the parts the skeleton leaves out are still
 * refused, and that no file or descriptor is left behind.
 */

const MIB = 1024 * 1024;
const SPOOL_ABOVE_BYTES = MIB;
const CHAT_PATH = '/v1/chat/completions';
const RESPONSES_PATH = '/v1/responses';
const MESSAGES_PATH = '/v1/messages';
const EDITS_PATH = '/v1/images/edits';
const UPSTREAM = {
  chat: 'vendor-chat-2025-01',
  messages: 'vendor-messages-2025-02',
  image: 'vendor-image-a-1',
  pair: 'vendor-chat-pair-7',
  cut: 'vendor-chat-cut-8',
  failover: 'vendor-chat-failover-9',
} as const;
/** How long the simulator holds an answer while a test looks at the gateway's descriptors. */
const HOLD_MS = 2_000;
/** A line that hangs up after this many bytes of the request. */
const CUT_AFTER_BYTES = MIB;
const CLIENT_PATIENCE_MS = 20_000;
/** A spooled body's descriptor: the file was removed from the folder as soon as it was opened. */
const SPOOL_FILE = /\/gateway-body-\d+-[0-9a-f-]{36} \(deleted\)$/;

function largeBodiesConfigYaml(simulator: string, cutPort: number): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-b
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-cut
    base_url: http://127.0.0.1:${cutPort}
    api_key: \${TEST_VENDOR_KEY}
  - id: line-dead
    base_url: http://127.0.0.1:1
    api_key: unused
    timeout_ms: 2000
models:
  - id: chat-model
    upstream_model: ${UPSTREAM.chat}
    interfaces: [chat_completions, responses]
    lines: [line-a]
    capabilities: { image_input: true }
  - id: messages-model
    upstream_model: ${UPSTREAM.messages}
    interfaces: [messages]
    lines: [line-a]
    max_tokens: 8192
  - id: image-a
    upstream_model: ${UPSTREAM.image}
    interfaces: [images_a]
    lines: [line-a]
  - id: pair-model
    upstream_model: ${UPSTREAM.pair}
    interfaces: [chat_completions]
    lines: [line-a, line-b]
    capabilities: { image_input: true }
  - id: cut-model
    upstream_model: ${UPSTREAM.cut}
    interfaces: [chat_completions]
    lines: [line-cut, line-b]
    capabilities: { image_input: true }
  - id: failover-model
    upstream_model: ${UPSTREAM.failover}
    interfaces: [chat_completions]
    lines: [line-dead, line-b]
    capabilities: { image_input: true }
owners:
  - id: team-a
    kind: project
    budget: 1000
keys:
  - key: ${KEYS.all}
    owner: team-a
    models: ["*"]
`;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One raw call. With `chunks` the body goes as those chunks with `transfer-encoding: chunked`
 * and no length; otherwise as one buffer with its `content-length`.
 */
function send(url: string, options: { body?: Buffer; chunks?: Buffer[]; headers?: Record<string, string>; signal?: AbortSignal }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...options.headers };
    if (options.chunks) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(options.body?.length ?? 0);
    const request = httpRequest(
      url,
      { method: 'POST', headers, agent: false, signal: options.signal ?? AbortSignal.timeout(CLIENT_PATIENCE_MS) },
      (response) => {
        const received: Buffer[] = [];
        response.on('data', (chunk: Buffer) => received.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(received).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (options.chunks) {
      for (const chunk of options.chunks) request.write(chunk);
      request.end();
    } else {
      request.end(options.body);
    }
  });
}

/** `body` with its one occurrence of `from` replaced by `to`. */
function replacedOnce(body: Buffer, from: string, to: string): Buffer {
  const needle = Buffer.from(from);
  const at = body.indexOf(needle);
  expect(at).toBeGreaterThan(-1);
  expect(body.indexOf(needle, at + 1)).toBe(-1);
  return Buffer.concat([body.subarray(0, at), Buffer.from(to), body.subarray(at + needle.length)]);
}

/** What the upstream must receive for a JSON body: the exact `"model":"<id>"` text swapped, nothing else. */
function withUpstreamModel(body: Buffer, model: string, upstreamModel: string): Buffer {
  return replacedOnce(body, `"model":"${model}"`, `"model":"${upstreamModel}"`);
}

/**
 * Text about `bytes` long (UTF-8) full of what the skeleton must step over correctly: escaped
 * quotes and backslashes, control characters written as escapes, two-, three- and four-byte
 * characters, and text that looks like a `model` member.
 */
function trickyText(bytes: number): string {
  const unit = 'Le café coûte 3 € — "model":"other-model" \\ back\\slash\nnew line\ttab 😀 €€ ';
  return unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
}

/** A base64 data URL of `bytes` random bytes: any byte lost, moved or repeated shows. */
function imageDataUrl(bytes: number): string {
  return `data:image/png;base64,${randomBytes(bytes).toString('base64')}`;
}

/**
 * A chat body with a long text part and a large image, `model` written after both of them (its
 * place in the skeleton is not its place in the body), then more members.
 */
function largeChatBody(model: string, extra = '', textBytes = MIB): Buffer {
  const text = JSON.stringify(trickyText(textBytes));
  const image = JSON.stringify(imageDataUrl(3 * MIB));
  return Buffer.from(
    `{"messages":[{"role":"user","content":[{"type":"text","text":${text}},{"type":"image_url","image_url":{"url":${image},"detail":"high"}}]}],` +
      `"temperature":0.5,"model":"${model}"${extra},"metadata":{"note":"after the model"}}`,
  );
}

/** Descriptors of this process (the gateway runs in it) open on a file of `directory`. */
function fdsUnder(directory: string): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed in the meantime (the directory listing's own descriptor)
    }
    if (target.startsWith(`${directory}/`)) targets.push(target);
  }
  return targets;
}

/** A line that reads the start of each request and then hangs up: the body was only partly sent. */
class CuttingUpstream {
  received: number[] = [];
  private readonly server: Server = createServer((socket) => {
    const index = this.received.push(0) - 1;
    socket.on('data', (chunk: Buffer) => {
      this.received[index] += chunk.length;
      if (this.received[index] >= CUT_AFTER_BYTES) socket.destroy();
    });
    socket.on('error', () => undefined);
  });

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('large request bodies', () => {
  let gateway: GatewayHarness;
  let spoolDir: string;
  let fdsBefore: number;
  const cutting = new CuttingUpstream();
  /** Spool descriptors seen while calls were under way: the final "none left" is not vacuous. */
  let spoolFilesSeen = 0;
  /**
   * Every spool the gateway opened. Node closes a forgotten file handle when it is garbage
   * collected, so a leaked spool can vanish from /proc/self/fd by chance; a spool nobody let go
   * of stays `isOpen` whatever the collector did.
   */
  const spools: BodySpool[] = [];
  /** Spools opened, and spool descriptors open, before the current test. */
  let spoolsBefore = 0;
  let fdsAtStart: string[] = [];
  const newFds = () => fdsUnder(spoolDir).filter((target) => !fdsAtStart.includes(target));
  let spoolOpen: jest.SpyInstance | undefined;
  const stillHeld = (from = 0) => spools.slice(from).filter((spool) => spool.isOpen).length;

  beforeAll(async () => {
    const open = BodySpool.open.bind(BodySpool);
    spoolOpen = jest.spyOn(BodySpool, 'open').mockImplementation(async (directory) => {
      const spool = await open(directory);
      spools.push(spool);
      return spool;
    });
    spoolDir = realpathSync(mkdtempSync(join(tmpdir(), 'gateway-spool-test-')));
    const cutPort = await cutting.start();
    gateway = await GatewayHarness.start({
      configYaml: (simulatorUrl) => largeBodiesConfigYaml(simulatorUrl, cutPort),
      settings: { server: { ...defaultSettings().server, bodySpool: { aboveBytes: SPOOL_ABOVE_BYTES, directory: spoolDir } } },
    });
    fdsBefore = fdsUnder(spoolDir).length;
  });

  afterAll(async () => {
    await gateway?.stop();
    await cutting.stop();
    spoolOpen?.mockRestore();
    if (spoolDir) rmSync(spoolDir, { recursive: true, force: true });
  });

  beforeEach(() => {
    gateway.simulator.reset();
    spoolsBefore = spools.length;
    fdsAtStart = fdsUnder(spoolDir);
  });

  // Every call lets go of its file: a leak is reported by the test that caused it.
  afterEach(async () => {
    try {
      await until(() => newFds().length === 0 && stillHeld(spoolsBefore) === 0, 'every spooled body to be let go of');
    } catch {
      throw new Error(`spooled bodies still held after the test: ${stillHeld(spoolsBefore)} spool(s) open, descriptors ${JSON.stringify(newFds())}`);
    }
  });

  function onlyUpstreamRequest(): RecordedRequest {
    expect(gateway.simulator.requests).toHaveLength(1);
    return gateway.simulator.requests[0];
  }

  /**
   * Sends a call whose upstream answer the simulator holds for HOLD_MS, and notes the spool
   * descriptors open once the upstream has the whole request (the call is still under way).
   */
  async function heldCall(upstreamPath: string, call: () => Promise<Answer>): Promise<{ answer: Answer; openWhileForwarding: string[] }> {
    gateway.simulator.failNext(upstreamPath, { kind: 'delay', ms: HOLD_MS });
    const settled = call().then(
      (answer) => ({ answer }),
      (error: unknown) => ({ error }),
    );
    await until(() => gateway.simulator.requests.length > 0, `the upstream to receive POST ${upstreamPath}`);
    const openWhileForwarding = newFds();
    spoolFilesSeen += openWhileForwarding.length;
    const outcome = await settled;
    if ('error' in outcome) throw outcome.error;
    return { answer: outcome.answer, openWhileForwarding };
  }

  function expectOneSpooledFile(open: string[]): void {
    expect(open).toHaveLength(1);
    expect(open[0]).toMatch(SPOOL_FILE);
    expect(open[0].startsWith(`${spoolDir}/`)).toBe(true);
  }

  function expectInvalidRequest(answer: Answer): string {
    expect(answer.status).toBe(400);
    expect(answer.headers['x-request-id']).toBeTruthy();
    const body = JSON.parse(answer.text);
    expect(body).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error', code: null } });
    return body.error.message as string;
  }

  describe('native forwarding from the file', () => {
    it('sends a chat body with a large data URL image upstream byte for byte, only the model value replaced', async () => {
      const body = largeChatBody('chat-model');
      expect(body.length).toBeGreaterThan(4 * MIB);
      expect(body.length).toBeLessThan(6 * MIB);

      const { answer, openWhileForwarding } = await heldCall(CHAT_PATH, () => send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toMatchObject({ object: 'chat.completion', model: UPSTREAM.chat });
      expectOneSpooledFile(openWhileForwarding);
      const upstream = onlyUpstreamRequest();
      const expected = withUpstreamModel(body, 'chat-model', UPSTREAM.chat);
      expect(upstream.body.length).toBe(expected.length);
      expect(upstream.body.equals(expected)).toBe(true);
      expect(upstream.headers['content-length']).toBe(String(expected.length));
    });

    it('adds the usage option to a large streaming chat body after the last member, every other byte as sent', async () => {
      // A short text (still past the skeleton's head): the simulator streams it back word by word.
      const body = largeChatBody('chat-model', ',"stream":true', 8 * 1024);

      const answer = await send(`${gateway.url}${CHAT_PATH}`, { body });

      expect(answer.status).toBe(200);
      expect(answer.text).toContain('data: [DONE]');
      const withModel = withUpstreamModel(body, 'chat-model', UPSTREAM.chat);
      const expected = Buffer.concat([withModel.subarray(0, -1), Buffer.from(',"stream_options":{"include_usage":true}}')]);
      const upstream = onlyUpstreamRequest();
      expect(upstream.body.equals(expected)).toBe(true);
      expect(upstream.headers['content-length']).toBe(String(expected.length));
    });

    it('spools a chunked body that announces no length and forwards it whole', async () => {
      // `model` first this time; chunks cut inside a four-byte character, inside an escape and
      // around the skeleton's 4096-byte head of the long string.
      const text = JSON.stringify(trickyText(3 * MIB));
      const body = Buffer.from(`{"model":"chat-model","messages":[{"role":"user","content":${text}}],"max_tokens":64}`);
      const emoji = body.indexOf(Buffer.from('😀'), 5000);
      const escape = body.indexOf(Buffer.from('\\"'), 2 * MIB);
      const cuts = [700, 4100, 4200, emoji + 2, MIB + 3, escape + 1, body.length - 10].sort((a, b) => a - b);
      const chunks = cuts.map((cut, index) => body.subarray(index === 0 ? 0 : cuts[index - 1], cut));
      chunks.push(body.subarray(cuts[cuts.length - 1]));
      expect(Buffer.concat(chunks).equals(body)).toBe(true);

      const { answer, openWhileForwarding } = await heldCall(CHAT_PATH, () => send(`${gateway.url}${CHAT_PATH}`, { chunks }));

      expect(answer.status).toBe(200);
      expectOneSpooledFile(openWhileForwarding);
      const upstream = onlyUpstreamRequest();
      const expected = withUpstreamModel(body, 'chat-model', UPSTREAM.chat);
      expect(upstream.body.equals(expected)).toBe(true);
      expect(upstream.headers['content-length']).toBe(String(expected.length));
      expect(upstream.headers['transfer-encoding']).toBeUndefined();
    });

    it('keeps a body no larger than the threshold in memory', async () => {
      const padding = 'x'.repeat(SPOOL_ABOVE_BYTES - 200);
      const body = Buffer.from(`{"model":"chat-model","messages":[{"role":"user","content":"${padding}"}]}`);
      expect(body.length).toBeLessThanOrEqual(SPOOL_ABOVE_BYTES);

      const { answer, openWhileForwarding } = await heldCall(CHAT_PATH, () => send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(answer.status).toBe(200);
      expect(openWhileForwarding).toEqual([]);
      expect(spools.length).toBe(spoolsBefore);
      expect(onlyUpstreamRequest().body.equals(withUpstreamModel(body, 'chat-model', UPSTREAM.chat))).toBe(true);
    });

    it('sends a multipart image edit with a large file part byte for byte, only the model part replaced', async () => {
      const picture = randomBytes(4 * MIB);
      const mask = randomBytes(200 * 1024);
      const form = formBody([
        ['prompt', 'Give the fox a red scarf; keep "quotes" and ümlauts'],
        ['image', { filename: 'fox.png', type: 'image/png', bytes: picture }],
        ['mask', { filename: 'mask.png', type: 'image/png', bytes: mask }],
        ['model', 'image-a'],
        ['quality', 'low'],
      ]);

      const { answer, openWhileForwarding } = await heldCall(EDITS_PATH, () =>
        send(`${gateway.url}${EDITS_PATH}`, { body: form.body, headers: { 'content-type': form.contentType } }),
      );

      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).data).toHaveLength(1);
      expectOneSpooledFile(openWhileForwarding);
      const upstream = onlyUpstreamRequest();
      const expected = replacedOnce(form.body, 'name="model"\r\n\r\nimage-a\r\n', `name="model"\r\n\r\n${UPSTREAM.image}\r\n`);
      expect(upstream.headers['content-type']).toBe(form.contentType);
      expect(upstream.headers['content-length']).toBe(String(expected.length));
      expect(upstream.body.length).toBe(expected.length);
      expect(upstream.body.equals(expected)).toBe(true);
    });
  });

  describe('failover reads the file again', () => {
    it('sends the whole body again to the second line when the first answers 503', async () => {
      const body = largeChatBody('pair-model');
      gateway.simulator.failNext(CHAT_PATH, { status: 503 });

      const answer = await send(`${gateway.url}${CHAT_PATH}`, { body });

      expect(answer.status).toBe(200);
      const expected = withUpstreamModel(body, 'pair-model', UPSTREAM.pair);
      const [first, second] = gateway.simulator.requests;
      expect(gateway.simulator.requests).toHaveLength(2);
      expect(first.body.equals(expected)).toBe(true);
      expect(second.body.equals(expected)).toBe(true);
      expect(second.headers['content-length']).toBe(String(expected.length));
      const record = await gateway.usageRecord(String(answer.headers['x-request-id']));
      expect(record).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('sends the whole body to the second line when the first hangs up part-way through the body', async () => {
      const body = largeChatBody('cut-model');
      const cutCalls = cutting.received.length;

      const answer = await send(`${gateway.url}${CHAT_PATH}`, { body });

      expect(answer.status).toBe(200);
      // The first line did get the start of this body and no more than part of it.
      expect(cutting.received.length).toBe(cutCalls + 1);
      expect(cutting.received[cutCalls]).toBeGreaterThanOrEqual(CUT_AFTER_BYTES);
      expect(cutting.received[cutCalls]).toBeLessThan(body.length);
      const upstream = onlyUpstreamRequest();
      expect(upstream.body.equals(withUpstreamModel(body, 'cut-model', UPSTREAM.cut))).toBe(true);
      const record = await gateway.usageRecord(String(answer.headers['x-request-id']));
      expect(record).toMatchObject({ line: 'line-b', status: 200 });
    });

    it('sends the whole body to the second line when the first refuses the connection', async () => {
      const body = largeChatBody('failover-model');

      const answer = await send(`${gateway.url}${CHAT_PATH}`, { body });

      expect(answer.status).toBe(200);
      expect(onlyUpstreamRequest().body.equals(withUpstreamModel(body, 'failover-model', UPSTREAM.failover))).toBe(true);
    });
  });

  describe('faults in the parts the skeleton leaves out', () => {
    const LONG = 3 * MIB;
    const FAULT_AT = 2 * MIB;

    /** What the scanner says of a whole body (what a small body with the same fault is told). */
    function scanMessage(body: Buffer): string | undefined {
      const scan = scanTopLevel(body);
      return scan.ok ? undefined : scan.message;
    }

    /** A chat body whose one message is a LONG string with `fault` FAULT_AT bytes into it. */
    function bodyWithFault(fault: Buffer): { body: Buffer; faultAt: number } {
      const head = Buffer.from('{"model":"chat-model","messages":[{"role":"user","content":"');
      const body = Buffer.concat([head, Buffer.alloc(FAULT_AT, 'a'), fault, Buffer.alloc(LONG - FAULT_AT, 'b'), Buffer.from('"}]}')]);
      return { body, faultAt: head.length + FAULT_AT };
    }

    it('refuses an unescaped control character 2 MiB into a 3 MiB string, naming its place, and forwards nothing', async () => {
      const { body, faultAt } = bodyWithFault(Buffer.from([0x01]));
      expect(body[faultAt]).toBe(0x01);

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe(`Request body is not valid JSON: unescaped control character 0x01 in a string at byte ${faultAt}.`);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses an invalid escape 2 MiB into a 3 MiB string and forwards nothing', async () => {
      const { body, faultAt } = bodyWithFault(Buffer.from('\\q'));

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      // As for a small body: at the backslash, word for word what the scanner says of the whole body.
      expect(message).toBe(`Request body is not valid JSON: invalid escape sequence at byte ${faultAt}.`);
      expect(message).toBe(scanMessage(body));
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses an invalid \\u escape 2 MiB into a 3 MiB string and forwards nothing', async () => {
      const { body, faultAt } = bodyWithFault(Buffer.from('\\u12G4'));

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe(`Request body is not valid JSON: invalid \\u escape sequence at byte ${faultAt}.`);
      expect(message).toBe(scanMessage(body));
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it.each([
      ['a 0xff byte', [0xff]],
      ['a truncated two-byte sequence', [0xc3, 0x28]],
      ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ])('refuses %s 2 MiB into a 3 MiB string as not UTF-8 and forwards nothing', async (_what, bytes) => {
      const { body } = bodyWithFault(Buffer.from(bytes));

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe('Request body is not valid JSON: it is not UTF-8 text.');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('names the body offset of a fault the skeleton keeps when a left-out stretch comes before it', async () => {
      const head = Buffer.from(`{"model":"chat-model","messages":[{"role":"user","content":"${'a'.repeat(LONG)}"},{"role":"user","content":"short `);
      const body = Buffer.concat([head, Buffer.from([0x02]), Buffer.from(' text"}]}')]);

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe(`Request body is not valid JSON: unescaped control character 0x02 in a string at byte ${head.length}.`);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('gives the message a small body gets for a syntax error after a left-out stretch, at its place in the body', async () => {
      // A missing comma after the 3 MiB string: found by the scan of the skeleton, whose offsets differ from the body's.
      const head = `{"model":"chat-model","messages":[{"role":"user","content":"${'a'.repeat(LONG)}"}] `;
      const body = Buffer.from(`${head}"temperature":1}`);
      const inMemory = scanTopLevel(body);
      expect(inMemory.ok).toBe(false);
      const expected = inMemory.ok ? '' : inMemory.message;
      expect(expected).toContain(`at byte ${Buffer.byteLength(head)}`);

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe(expected);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses a body that ends inside the long string', async () => {
      const body = Buffer.from(`{"model":"chat-model","messages":[{"role":"user","content":"${'a'.repeat(LONG)}`);

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toMatch(/^Request body is not valid JSON: /);
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('refuses a repeated top-level key that follows a 3 MiB string: the skeleton is scanned whole', async () => {
      const text = JSON.stringify(trickyText(LONG));
      const body = Buffer.from(`{"model":"chat-model","messages":[{"role":"user","content":${text}}],"temperature":1,"messages":[]}`);

      const message = expectInvalidRequest(await send(`${gateway.url}${CHAT_PATH}`, { body }));

      expect(message).toBe('Request body repeats the top-level field "messages".');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('reads the model named after a 3 MiB string (an unknown one is refused, nothing forwarded)', async () => {
      const body = Buffer.from(`{"messages":[{"role":"user","content":"${'a'.repeat(LONG)}"}],"model":"no-such-model"}`);

      const answer = await send(`${gateway.url}${CHAT_PATH}`, { body });

      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.text).error.message).toContain('no-such-model');
      expect(gateway.simulator.requests).toHaveLength(0);
    });
  });

  describe('translated calls read the whole file', () => {
    it('answers a large responses call on a messages-only model, the long text reaching the upstream intact', async () => {
      const text = trickyText(3 * MIB);
      const body = Buffer.from(
        JSON.stringify({ model: 'messages-model', instructions: 'Answer briefly.', input: [{ role: 'user', content: [{ type: 'input_text', text }] }] }),
      );
      expect(body.length).toBeGreaterThan(3 * MIB);

      const { answer, openWhileForwarding } = await heldCall(MESSAGES_PATH, () => send(`${gateway.url}${RESPONSES_PATH}`, { body }));

      expect(answer.status).toBe(200);
      // The simulator echoes the text until the model's 8192 output tokens: `incomplete` is its answer.
      const response = JSON.parse(answer.text);
      expect(response).toMatchObject({ object: 'response', model: UPSTREAM.messages, output: [expect.objectContaining({ type: 'message' })] });
      expect(response.output[0].content[0].text).toContain(`Hello from ${UPSTREAM.messages}: Le café coûte 3 €`);
      expectOneSpooledFile(openWhileForwarding);
      const upstream = onlyUpstreamRequest();
      expect(upstream.path).toBe(MESSAGES_PATH);
      const sent = upstream.json as { model: string; messages: Array<{ role: string; content: unknown }> };
      expect(sent.model).toBe(UPSTREAM.messages);
      const parts = sent.messages.flatMap((message) =>
        typeof message.content === 'string' ? [{ text: message.content }] : (message.content as Array<{ text?: string }>),
      );
      const texts = parts.map((part) => part.text).filter((value): value is string => typeof value === 'string');
      expect(texts.filter((value) => value === text)).toHaveLength(1);
    });
  });

  describe('admin API', () => {
    it('reads an admin body over the threshold from its file like a small one', async () => {
      // Valid JSON padded with whitespace past 1 MiB: spooled, and the admin API must still read it.
      const body = Buffer.from(`{"id":"padded-owner","kind":"project","budget":5${' '.repeat(MIB + 100)}}`);
      const answer = await send(`${gateway.url}/admin/owners`, { body, headers: { authorization: `Bearer ${ADMIN_TOKEN_FOR_TESTS}` } });

      expect(answer.status).toBe(201);
      expect(JSON.parse(answer.text)).toMatchObject({ id: 'padded-owner', kind: 'project' });
    });
  });

  describe('files and descriptors', () => {
    it('lets go of the file of an upload the client abandons part-way', async () => {
      const body = largeChatBody('chat-model');
      const aborting = new AbortController();
      const request = httpRequest(`${gateway.url}${CHAT_PATH}`, {
        method: 'POST',
        agent: false,
        signal: aborting.signal,
        headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', 'content-length': String(body.length) },
      });
      const ended = new Promise<void>((resolve) => request.on('error', () => resolve()));
      request.write(body.subarray(0, 2 * MIB));

      try {
        await until(() => newFds().length === 1, 'the gateway to open a spool file for the upload');
        spoolFilesSeen += 1;
      } finally {
        // Also when the check failed: a half-sent upload would hold the gateway's close for minutes.
        aborting.abort();
        await ended;
      }

      await until(() => newFds().length === 0 && stillHeld(spoolsBefore) === 0, 'the abandoned upload to be let go of');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('lets go of the file when the client leaves while the upstream is answering', async () => {
      const body = largeChatBody('chat-model');
      gateway.simulator.failNext(CHAT_PATH, { kind: 'delay', ms: HOLD_MS });
      const aborting = new AbortController();
      const call = send(`${gateway.url}${CHAT_PATH}`, { body, signal: aborting.signal }).catch((error: Error) => error);

      await until(() => gateway.simulator.requests.length === 1, 'the upstream to receive the call');
      expectOneSpooledFile(newFds());
      spoolFilesSeen += 1;
      aborting.abort();
      expect(await call).toMatchObject({ name: 'AbortError' });

      await until(() => newFds().length === 0 && stillHeld(spoolsBefore) === 0, 'the file of a call its client left to be let go of');
      expect(onlyUpstreamRequest().body.equals(withUpstreamModel(body, 'chat-model', UPSTREAM.chat))).toBe(true);
    });

    it('leaves no descriptor open on the spool folder and no file in it after all these calls', async () => {
      expect(spoolFilesSeen).toBeGreaterThanOrEqual(6);
      await until(() => fdsUnder(spoolDir).length === fdsBefore, 'every spool descriptor to be closed');
      expect(fdsBefore).toBe(0);
      expect(fdsUnder(spoolDir)).toEqual([]);
      expect(readdirSync(spoolDir)).toEqual([]);
      expect(spools.length).toBeGreaterThanOrEqual(spoolFilesSeen);
      expect(stillHeld()).toBe(0);
    });
  });

  describe('a spool folder that does not exist', () => {
    it('stops the gateway at start-up, naming BODY_SPOOL_DIR, before building the application', async () => {
      const missing = join(tmpdir(), `gateway-spool-missing-${randomBytes(6).toString('hex')}`);
      const create = jest.spyOn(NestFactory, 'create');
      let started: GatewayHarness | undefined;
      try {
        const settings = { server: { ...defaultSettings().server, bodySpool: { aboveBytes: MIB, directory: missing } } };
        // Sharing the suite's simulator and database: nothing of them is left open when start-up fails.
        const start = GatewayHarness.start({ sharing: gateway, settings }).then((harness) => {
          started = harness;
          return harness;
        });
        await expect(start).rejects.toThrow(/BODY_SPOOL_DIR/);
        await expect(start).rejects.toThrow(missing);
        expect(create).not.toHaveBeenCalled();
      } finally {
        create.mockRestore();
        if (started) await started.stop();
      }
    });
  });
});
