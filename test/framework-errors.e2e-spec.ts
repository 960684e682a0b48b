import { connect } from 'node:net';
import { defaultSettings } from '../src/config/gateway-options';
import { ADMIN_TOKEN_FOR_TESTS, GatewayHarness } from './support/gateway-harness';
import { IMAGE_PATHS } from './support/images-kit';
import { until } from './support/until';
import { VENDOR_B, VENDOR_C, VIDEO_TEST_SETTINGS } from './support/video-kit';

/**
 * No framework error shapes: what Node's HTTP parser, Node's server and
 * Fastify's router refuse before any route runs gets the gateway's error shape for the path
 * (when the path is known; else the chat shape) and an `X-Request-Id`, like every other answer.
 * A long id is an id like any other: an unknown long task id is the same 404 as a short one.
 */

const KEY = 'gk-framework-errors-0001';
const REQUEST_TIMEOUT_MS = 1_000;

function configYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - { id: chat-model, upstream_model: vendor-chat-2025-01, interfaces: [chat_completions], lines: [line-a] }
  - { id: messages-model, upstream_model: vendor-messages-2025-02, interfaces: [messages], lines: [line-a] }
  - { id: image-c, upstream_model: vendor-image-c-flash, interfaces: [images_c], lines: [line-a] }
  - { id: video-c, upstream_model: vendor-video-c-2, interfaces: [video_c], lines: [line-a] }
  - { id: video-b, upstream_model: vendor-video-b-1, interfaces: [video_b], lines: [line-a] }
owners:
  - { id: team-a, kind: project, budget: 1000 }
keys:
  - { key: ${KEY}, owner: team-a, models: ["*"] }
`;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Writes `bytes` on a new connection and reads the one answer that comes back. */
function exchange(url: string, bytes: string): Promise<Answer> {
  const address = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(address.port), address.hostname);
    let received = Buffer.alloc(0);
    const settle = () => {
      const text = received.toString('latin1');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd === -1) return false;
      const [statusLine, ...lines] = text.slice(0, headEnd).split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const length = Number(headers['content-length']);
      const body = received.subarray(headEnd + 4);
      if (!Number.isFinite(length) || body.length < length) return false;
      socket.destroy();
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.subarray(0, length).toString('utf8'));
      } catch {
        parsed = body.toString('latin1');
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: parsed });
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      settle();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!settle())
        reject(new Error(`no whole answer to ${JSON.stringify(bytes.slice(0, 60))}: ${JSON.stringify(received.toString('latin1').slice(0, 300))}`));
    });
    socket.write(bytes);
  });
}

const AUTH = `authorization: Bearer ${KEY}\r\n`;
/** A request head with a Host, the key and `connection: close`. */
const head = (method: string, path: string, extra = '') => `${method} ${path} HTTP/1.1\r\nhost: gateway.test\r\n${AUTH}connection: close\r\n${extra}\r\n`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Shape = 'chat' | 'messages' | 'google';

/** The gateway's error shape for the path, with its request id (and `request-id` on the messages entry). */
function expectShape(answer: Answer, status: number, shape: Shape, code: string | null, message: RegExp | string = /./): void {
  const text = expect.stringMatching(message);
  expect(answer.status).toBe(status);
  expect(answer.headers['x-request-id']).toMatch(UUID);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  switch (shape) {
    case 'chat':
      expect(answer.body).toEqual({ error: { message: text, type: expect.any(String), code } });
      break;
    case 'messages':
      expect(answer.body).toEqual({ type: 'error', error: { type: expect.any(String), message: text, code } });
      expect(answer.headers['request-id']).toBe(answer.headers['x-request-id']);
      break;
    case 'google':
      expect(answer.body).toEqual({
        error: { code: status, message: text, status: expect.any(String), details: [expect.objectContaining({ reason: expect.any(String) })] },
      });
      break;
  }
}

/** The request ids of the gateway's call log lines. */
class CallLog {
  text = '';

  write(chunk: string): void {
    this.text += chunk;
  }

  requestIds(): string[] {
    return this.text
      .split('\n')
      .filter((line) => line.includes('"msg":"call"'))
      .map((line) => JSON.parse(line).request_id as string);
  }
}

describe('framework errors', () => {
  let gateway: GatewayHarness;
  const log = new CallLog();

  beforeAll(async () => {
    gateway = await GatewayHarness.start({
      configYaml,
      settings: { logLevel: 'info', video: VIDEO_TEST_SETTINGS, server: { ...defaultSettings().server, requestTimeoutMs: REQUEST_TIMEOUT_MS } },
      logDestination: log,
    });
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  beforeEach(() => gateway.simulator.reset());

  describe('long path parameters', () => {
    const TASK_PATHS: Array<[string, string, (id: string) => string]> = [
      ['GET', 'vendor-c query', VENDOR_C.query],
      ['DELETE', 'vendor-c cancel', VENDOR_C.cancel],
      ['GET', 'vendor-b query', VENDOR_B.query],
      ['DELETE', 'vendor-b cancel', VENDOR_B.cancel],
    ];

    it.each(TASK_PATHS)('%s %s: an unknown task id of any length is the same 404', async (method, _, path) => {
      for (const id of ['vtask_short', `vtask_${'x'.repeat(300)}`, `vtask_${'y'.repeat(12_000)}`]) {
        const answer = await exchange(gateway.url, head(method, path(id)));
        expectShape(answer, 404, 'chat', 'not_found');
        expect({ length: id.length, message: answer.body.error.message }).toEqual({
          length: id.length,
          message: `No video task has the id ${JSON.stringify(id)}.`,
        });
      }
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('asks for the key before judging a long task id, as for a short one', async () => {
      const answer = await exchange(gateway.url, head('GET', VENDOR_C.query(`vtask_${'x'.repeat(300)}`)).replace(AUTH, ''));
      expectShape(answer, 401, 'chat', 'invalid_api_key');
    });

    it('gives an unknown long model id in a generateContent path the 404 of any unknown model', async () => {
      const model = 'm'.repeat(400);
      const answer = await exchange(
        gateway.url,
        head('POST', IMAGE_PATHS.generateContent(model), 'content-type: application/json\r\ncontent-length: 2\r\n') + '{}',
      );
      expectShape(answer, 404, 'google', null, `The model "${model}" does not exist`);
    });

    it('gives an unknown long owner id in the admin API the 404 of any unknown owner', async () => {
      const short = await exchange(gateway.url, head('GET', '/admin/owners/nobody').replace(AUTH, `authorization: Bearer ${ADMIN_TOKEN_FOR_TESTS}\r\n`));
      const long = await exchange(
        gateway.url,
        head('GET', `/admin/owners/${'n'.repeat(400)}`).replace(AUTH, `authorization: Bearer ${ADMIN_TOKEN_FOR_TESTS}\r\n`),
      );
      expectShape(short, 404, 'chat', 'not_found');
      expectShape(long, 404, 'chat', 'not_found', short.body.error.message.replace('nobody', 'n'.repeat(400)));
    });
  });

  describe("the router's refusals", () => {
    it.each([
      ['a task path', 'GET', VENDOR_C.query('%zz'), 'chat' as Shape],
      ['the messages entry', 'POST', '/v1/messages/%E0%A4%A', 'messages' as Shape],
      ['a generateContent path', 'POST', '/v1beta/models/%E0%A4:generateContent', 'google' as Shape],
    ])('answers a path that is not valid percent-encoding on %s with 400 in its shape', async (_, method, path, shape) => {
      const answer = await exchange(gateway.url, head(method, path));
      expectShape(answer, 400, shape, null, 'not valid percent-encoded');
    });

    it.each([
      ['PUT', '/v1/chat/completions', 'chat' as Shape],
      ['PROPFIND', '/v1/messages', 'messages' as Shape],
      ['PATCH', '/v1beta/models/image-c:generateContent', 'google' as Shape],
      ['GET', '/no/such/path', 'chat' as Shape],
    ])('answers %s %s, which no route takes, with 404 in its shape', async (method, path, shape) => {
      const answer = await exchange(gateway.url, head(method, path, 'content-length: 0\r\n'));
      expectShape(answer, 404, shape, 'not_found', 'No such endpoint.');
    });

    it('answers a Content-Type that is no media type with 400 naming application/json', async () => {
      const answer = await exchange(gateway.url, head('POST', '/v1/messages', 'content-type: nonsense\r\ncontent-length: 2\r\n') + '{}');
      expectShape(answer, 400, 'messages', null, 'Content-Type: application/json');
    });

    it('answers a body that is not JSON in the admin API in the chat shape', async () => {
      const admin = head('POST', '/admin/owners', 'content-type: application/json\r\ncontent-length: 5\r\n').replace(
        AUTH,
        `authorization: Bearer ${ADMIN_TOKEN_FOR_TESTS}\r\n`,
      );
      expectShape(await exchange(gateway.url, `${admin}{"id"`), 400, 'chat', null, 'not valid JSON');
    });
  });

  describe("Node's HTTP parser", () => {
    it.each([
      ['FOO', '/v1/messages', 'messages' as Shape],
      ['FOO', IMAGE_PATHS.generateContent('image-c'), 'google' as Shape],
      ['BREW', '/v1/chat/completions', 'chat' as Shape],
    ])('answers the unknown method %s on %s with 400 in the path shape', async (method, path, shape) => {
      expectShape(await exchange(gateway.url, head(method, path)), 400, shape, null, 'not an HTTP method');
    });

    it.each([
      ['a header name with a space', 'bad header: x\r\n'],
      ['both Content-Length and Transfer-Encoding', 'content-length: 2\r\ntransfer-encoding: chunked\r\n'],
      ['a line break inside a header value', 'x-note: a\rb\r\n'],
    ])('answers %s with 400 in the path shape, naming the fault', async (_, headers) => {
      expectShape(await exchange(gateway.url, head('POST', '/v1/messages', headers)), 400, 'messages', null, /^The request is not valid HTTP\/1\.1 \(.+\)\.$/);
    });

    it('answers headers over the limit with 431 in the path shape, a generateContent body carrying 431', async () => {
      const padding = `x-padding: ${'a'.repeat(20 * 1024)}\r\n`;
      expectShape(await exchange(gateway.url, head('POST', '/v1/messages', padding)), 431, 'messages', null, 'larger than 16 KiB');
      expectShape(await exchange(gateway.url, head('POST', IMAGE_PATHS.generateContent('image-c'), padding)), 431, 'google', null, 'larger than 16 KiB');
    });

    it('answers a URL over the limit with 431', async () => {
      const answer = await exchange(gateway.url, head('GET', `/v1/chat/completions/${'x'.repeat(20 * 1024)}`));
      expectShape(answer, 431, 'chat', null, 'the URL included');
    });

    it('writes no answer into a response already under way: a bad pipelined request only ends the connection', async () => {
      gateway.simulator.failNext('/v1/chat/completions', { kind: 'stall-mid-stream', afterEvents: 1 });
      const address = new URL(gateway.url);
      const socket = connect(Number(address.port), address.hostname);
      let received = '';
      socket.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      const body = JSON.stringify({ model: 'chat-model', stream: true, messages: [{ role: 'user', content: 'Hello' }] });
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: gateway.test\r\n${AUTH}content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      await until(() => received.includes('data: '), 'the first event of the stream');

      socket.write('BREW /v1/chat/completions HTTP/1.1\r\nhost: gateway.test\r\n\r\n');
      await closed;
      expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(received.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);
    });

    it('answers a body that stalls with 408 in the shape of its path and with the request id of its call', async () => {
      const answer = await exchange(gateway.url, head('POST', '/v1/messages', 'content-type: application/json\r\ncontent-length: 100\r\n') + '{"mod');
      expectShape(answer, 408, 'messages', null, 'REQUEST_TIMEOUT_MS');
      expect(gateway.simulator.requests).toHaveLength(0);
      await until(() => log.requestIds().includes(answer.headers['x-request-id']), 'the call log line under the id of the 408');
    });
  });

  describe("Node's server", () => {
    it('answers an HTTP/1.1 request without Host with 400 in the path shape', async () => {
      const answer = await exchange(gateway.url, `GET /v1beta/models/image-c:generateContent HTTP/1.1\r\n${AUTH}connection: close\r\n\r\n`);
      expectShape(answer, 400, 'google', null, 'Host header');
      const chat = await exchange(
        gateway.url,
        `POST /v1/chat/completions HTTP/1.1\r\n${AUTH}connection: close\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
      );
      expectShape(chat, 400, 'chat', null, 'Host header');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('still serves an HTTP/1.0 request without Host', async () => {
      const answer = await exchange(gateway.url, `GET /v1/models HTTP/1.0\r\n${AUTH}\r\n`);
      expect(answer.status).toBe(200);
      expect(answer.headers['x-request-id']).toMatch(UUID);
    });

    it('answers an Expect other than 100-continue with 417 in the path shape', async () => {
      const answer = await exchange(
        gateway.url,
        head('POST', '/v1/messages', 'expect: 200-ok\r\ncontent-type: application/json\r\ncontent-length: 2\r\n') + '{}',
      );
      expectShape(answer, 417, 'messages', null, '100-continue');
      expect(gateway.simulator.requests).toHaveLength(0);
    });

    it('answers CONNECT with 404 instead of closing the connection without a word', async () => {
      const answer = await exchange(gateway.url, `CONNECT upstream.example:443 HTTP/1.1\r\nhost: upstream.example:443\r\n\r\n`);
      expectShape(answer, 404, 'chat', 'not_found', 'No such endpoint.');
    });
  });
});
