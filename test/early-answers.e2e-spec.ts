import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BodySpool } from '../src/request-body/body-spool';
import { defaultSettings } from '../src/config/gateway-options';
import { GatewayHarness } from './support/gateway-harness';
import { formBody } from './support/images-kit';
import { KEYS } from './support/test-config';

/**
 * Answers given before the request body was read (docs/api.md "Early answers"): a body over 32 MiB
 * gets its 413 while the client is still sending, and the gateway reads and drops the rest of
 * the body before it closes, so the client's TCP stack does not throw the answer away. fetch
 * (what the SDKs use), Node's http client and curl each send a body just over the limit
 * TRIES times to each entry; every try must get the 413 in the entry's error shape with a
 * request id, and nothing may reach the upstream.
 */

/**
 * Tries per case. The race these tries look for shows within a few tries when it is there;
 * `npm run test:stress` (run by CI) makes 20 of each, `npm test` 5 to keep its time.
 */
const TRIES = Number(process.env.EARLY_ANSWER_TRIES) || 5;
/** Tries of the streamed and bad-length cases, which only add paths to the matrix. */
const OTHER_TRIES = Math.ceil(TRIES / 2);
const MIB = 1024 * 1024;
/** Just over the 32 MiB limit, as a client that does not know the limit sends. */
const OVERSIZED_BYTES = 34_000_000;
/** A streamed body is refused once 32 MiB are in: this size leaves a good part of it unread then. */
const STREAMED_BYTES = 60_000_000;
/** One try's bound: only a client that gets no answer at all comes near it. */
const CLIENT_PATIENCE_MS = 60_000;
/** Cases under way at once (each a client making its tries one after another): enough to keep two cores busy. */
const RUNS_AT_ONCE = 4;
const CURL = '/usr/bin/curl';

function earlyAnswersConfigYaml(simulator: string): string {
  return `
upstreams:
  - id: line-a
    base_url: ${simulator}
    api_key: \${TEST_VENDOR_KEY}
models:
  - id: chat-model
    upstream_model: vendor-chat-1
    interfaces: [chat_completions]
    lines: [line-a]
  - id: messages-model
    upstream_model: vendor-messages-1
    interfaces: [messages]
    lines: [line-a]
  - id: image-a
    upstream_model: vendor-image-a-1
    interfaces: [images_a]
    lines: [line-a]
  - id: image-c
    upstream_model: vendor-image-c-flash
    interfaces: [images_c]
    lines: [line-a]
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

/** A JSON body of exactly `bytes` bytes naming `model`, one long text making up the rest. */
function oversizedJson(model: string, bytes: number): Buffer {
  const head = `{"model":"${model}","prompt":"`;
  const tail = '"}';
  const body = Buffer.alloc(bytes, 'a');
  body.write(head, 0);
  body.write(tail, bytes - tail.length);
  return body;
}

interface Answer {
  status: number;
  requestId: string | undefined;
  text: string;
}

/** What one try came to: the answer, or how the client failed. */
type Outcome = Answer | { failure: string };

interface Call {
  url: string;
  contentType: string;
  /** The body, written once to a file the clients read. */
  file: string;
}

const authorization = `Bearer ${KEYS.all}`;

/**
 * The tries of fetch, Node's http client and a raw socket run in a child process, as real clients
 * do: in the gateway's own event loop the answer is always read before the write fails, which
 * hides the race. The child reads the body from its file once, makes the tries one after another
 * and prints their outcomes. `node:http` writes the whole body with `request.end(body)`, or in
 * 1 MiB writes without a length (chunked); `raw` writes `head` and the body on a bare socket.
 */
const NODE_CLIENT = String.raw`
const { readFileSync } = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { kind, url, file, headers, tries, patience, chunked, head } = JSON.parse(process.argv[1]);
const body = readFileSync(file);
const failureOf = (error) => error?.cause?.code ?? error?.code ?? error?.cause?.message ?? error?.message ?? String(error);

async function withFetch() {
  try {
    const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(patience) });
    return { status: response.status, requestId: response.headers.get('x-request-id') ?? undefined, text: await response.text() };
  } catch (error) {
    return { failure: 'fetch: ' + failureOf(error) };
  }
}

// Settles once the connection is closed: an error after the answer (the rest of the body not
// taken) fails the try too.
function withNodeHttp() {
  return new Promise((resolve) => {
    const sent = chunked ? headers : { ...headers, 'content-length': String(body.length) };
    let answer;
    let failure;
    const request = http.request(url, { method: 'POST', headers: sent, agent: false, signal: AbortSignal.timeout(patience) }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => (answer = { status: response.statusCode, requestId: response.headers['x-request-id'], text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', (error) => (failure ??= 'node:http response: ' + failureOf(error)));
    });
    request.on('error', (error) => (failure ??= 'node:http: ' + failureOf(error) + (answer ? ' after the answer' : '')));
    request.on('close', () => resolve(failure ? { failure } : answer ?? { failure: 'node:http: closed without an answer' }));
    if (!chunked) return request.end(body);
    for (let at = 0; at < body.length; at += 1 << 20) request.write(body.subarray(at, at + (1 << 20)));
    request.end();
  });
}

function withRawSocket() {
  return new Promise((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    const timer = setTimeout(() => socket.destroy(new Error('no answer in time')), patience);
    let received = Buffer.alloc(0);
    const settle = (outcome) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const field = (name) => lines.find((line) => line.toLowerCase().startsWith(name + ':'))?.slice(name.length + 1).trim();
      const length = Number(field('content-length'));
      if (received.length < end + 4 + length) return;
      settle({ status: Number(lines[0].split(' ')[1]), requestId: field('x-request-id'), text: received.subarray(end + 4, end + 4 + length).toString('utf8') });
    });
    socket.on('error', (error) => settle({ failure: 'raw socket: ' + failureOf(error) }));
    socket.on('end', () => settle({ failure: 'raw socket: ended before the whole answer' }));
    socket.write(head);
    socket.write(body);
  });
}

(async () => {
  const client = { fetch: withFetch, 'node:http': withNodeHttp, raw: withRawSocket }[kind];
  const outcomes = [];
  for (let index = 0; index < tries; index += 1) outcomes.push(await client());
  process.stdout.write(JSON.stringify(outcomes));
})();
`;

interface NodeClientOptions {
  chunked?: boolean;
  /** For `raw`: the request line and headers, sent as they are. */
  head?: string;
}

/** `tries` tries of `kind` in a child Node process (NODE_CLIENT). */
function inNodeClient(kind: 'fetch' | 'node:http' | 'raw', call: Call, tries: number, options: NodeClientOptions = {}): Promise<Outcome[]> {
  return new Promise((resolve, reject) => {
    const headers = { authorization, 'content-type': call.contentType };
    const spec = JSON.stringify({ kind, url: call.url, file: call.file, headers, tries, patience: CLIENT_PATIENCE_MS, ...options });
    const child = spawn(process.execPath, ['-e', NODE_CLIENT, spec], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (exitCode) => {
      if (exitCode === 0) resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as Outcome[]);
      else reject(new Error(`${kind} client exit ${exitCode}: ${Buffer.concat(err).toString('utf8')}`));
    });
  });
}

/** curl as people run it: `--data-binary @file`, its own `Expect: 100-continue` for a large body. */
function withCurl(call: Call): Promise<Outcome> {
  return new Promise((resolve) => {
    const args = [
      '-sS',
      '-i',
      '--max-time',
      String(CLIENT_PATIENCE_MS / 1000),
      '-H',
      `authorization: ${authorization}`,
      '-H',
      `content-type: ${call.contentType}`,
    ];
    const curl = spawn(CURL, [...args, '--data-binary', `@${call.file}`, call.url], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    curl.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    curl.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    curl.on('error', (error) => resolve({ failure: `curl: ${error.message}` }));
    curl.on('close', (exitCode) => {
      if (exitCode !== 0) {
        resolve({ failure: `curl exit ${exitCode}: ${Buffer.concat(err).toString('utf8').trim()}` });
        return;
      }
      resolve(answerOfCurl(Buffer.concat(out).toString('utf8')));
    });
  });
}

/** The final answer in curl's `-i` output (after any `100 Continue`). */
function answerOfCurl(output: string): Outcome {
  let rest = output;
  while (/^HTTP\/1\.1 1\d\d /.test(rest)) rest = rest.slice(rest.indexOf('\r\n\r\n') + 4);
  const end = rest.indexOf('\r\n\r\n');
  if (end < 0) return { failure: `curl: no answer in ${JSON.stringify(output.slice(0, 200))}` };
  const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
  const requestId = lines.find((line) => line.toLowerCase().startsWith('x-request-id:'));
  return { status: Number(statusLine.split(' ')[1]), requestId: requestId?.slice(requestId.indexOf(':') + 1).trim(), text: rest.slice(end + 4) };
}

const CLIENTS = ['fetch', 'node:http', 'curl'] as const;
type ClientName = (typeof CLIENTS)[number];

/** Sends `call` `tries` times with `client`, one try after another; gives each try's outcome. */
async function trying(client: ClientName, call: Call, tries = TRIES): Promise<Outcome[]> {
  if (client !== 'curl') return inNodeClient(client, call, tries);
  const outcomes: Outcome[] = [];
  for (let index = 0; index < tries; index += 1) outcomes.push(await withCurl(call));
  return outcomes;
}

/** Runs `tasks` with at most `width` of them under way at once; gives their results in order. */
async function inTurns<T>(tasks: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  return results;
}

/** The tries that did not get `expected` (the error body, parsed) with a request id, each said in a line. */
function missed(outcomes: Outcome[], status: number, expected: unknown): string[] {
  return outcomes.flatMap((outcome, index) => {
    if ('failure' in outcome) return [`try ${index + 1}: ${outcome.failure}`];
    let body: unknown;
    try {
      body = JSON.parse(outcome.text);
    } catch {
      body = outcome.text.slice(0, 200);
    }
    if (outcome.status === status && outcome.requestId && matches(body, expected)) return [];
    return [`try ${index + 1}: ${outcome.status} x-request-id=${outcome.requestId} ${JSON.stringify(body)}`];
  });
}

function matches(actual: unknown, expected: unknown): boolean {
  try {
    expect(actual).toEqual(expected);
    return true;
  } catch {
    return false;
  }
}

const TOO_LARGE_MESSAGE = 'Request body is larger than 32 MiB.';
const CHAT_SHAPE = { error: { message: TOO_LARGE_MESSAGE, type: 'invalid_request_error', code: 'request_too_large' } };
const MESSAGES_SHAPE = { type: 'error', error: { type: 'request_too_large', message: TOO_LARGE_MESSAGE, code: 'request_too_large' } };
const GENERATE_CONTENT_SHAPE = {
  error: {
    code: 413,
    message: TOO_LARGE_MESSAGE,
    status: 'INVALID_ARGUMENT',
    details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'REQUEST_TOO_LARGE', domain: 'gateway' }],
  },
};

const ENTRIES = [
  ['chat', '/v1/chat/completions', CHAT_SHAPE],
  ['messages', '/v1/messages', MESSAGES_SHAPE],
  ['images A edits (JSON)', '/v1/images/edits', CHAT_SHAPE],
  ['images A edits (form)', '/v1/images/edits', CHAT_SHAPE],
  ['format C', '/v1beta/models/image-c:generateContent', GENERATE_CONTENT_SHAPE],
] as const;
const CASES = ENTRIES.flatMap(([entry, , shape]) => CLIENTS.map((client) => [entry, client, shape] as const));
/** A length Node's parser takes but no JavaScript number holds exactly: readBody refuses it with 400. */
const UNSAFE_LENGTH = '9007199254740993';

describe('early answers', () => {
  let gateway: GatewayHarness;
  let folder: string;
  let spoolDir: string;
  /** Every try's outcome by case, gathered before the tests look at them. */
  const outcomes = new Map<string, Outcome[]>();
  let spoolOpen: jest.SpyInstance;

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'early-answers-'));
    spoolDir = join(folder, 'spool');
    mkdirSync(spoolDir);
    spoolOpen = jest.spyOn(BodySpool, 'open');
    gateway = await GatewayHarness.start({
      configYaml: earlyAnswersConfigYaml,
      // Streamed bodies go through the spool, whose refusals must linger too.
      settings: { server: { ...defaultSettings().server, bodySpool: { aboveBytes: MIB, directory: spoolDir } } },
    });
    const json: Call = { url: '', contentType: 'application/json', file: join(folder, 'body.json') };
    writeFileSync(json.file, oversizedJson('chat-model', OVERSIZED_BYTES));
    const form = formBody([
      ['model', 'image-a'],
      ['prompt', 'A fox in the snow'],
      ['image', { filename: 'fox.png', type: 'image/png', bytes: Buffer.alloc(OVERSIZED_BYTES, 7) }],
    ]);
    const multipart: Call = { url: '', contentType: form.contentType, file: join(folder, 'body.form') };
    writeFileSync(multipart.file, form.body);

    const runs: Array<[string, () => Promise<Outcome[]>]> = [];
    for (const [entry, path] of ENTRIES) {
      const call = { ...(entry.endsWith('(form)') ? multipart : json), url: `${gateway.url}${path}` };
      for (const client of CLIENTS) runs.push([`${entry} ${client}`, () => trying(client, call)]);
    }
    const chat = { ...json, url: `${gateway.url}/v1/chat/completions` };
    const streamed: Call = { ...chat, file: join(folder, 'streamed.json') };
    writeFileSync(streamed.file, oversizedJson('chat-model', STREAMED_BYTES));
    runs.push(['streamed', () => inNodeClient('node:http', streamed, OTHER_TRIES, { chunked: true })]);
    const head =
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${authorization}\r\n` +
      `content-type: application/json\r\ncontent-length: ${UNSAFE_LENGTH}\r\n\r\n`;
    runs.push(['bad length', () => inNodeClient('raw', chat, OTHER_TRIES, { head })]);
    const settled = await inTurns(
      runs.map(([, run]) => run),
      RUNS_AT_ONCE,
    );
    runs.forEach(([name], index) => outcomes.set(name, settled[index]));
  }, 240_000);

  afterAll(async () => {
    await gateway?.stop();
    spoolOpen?.mockRestore();
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it.each(CASES)(
    `answers a %s body over 32 MiB sent by %s with 413 in its error shape and a request id, ${TRIES} tries out of ${TRIES}`,
    (entry, client, shape) => {
      const tries = outcomes.get(`${entry} ${client}`)!;

      expect(tries).toHaveLength(TRIES);
      expect(missed(tries, 413, shape)).toEqual([]);
    },
  );

  it(`answers a streamed chat body with 413 once it passes 32 MiB, spooled until then, ${OTHER_TRIES} tries out of ${OTHER_TRIES}`, () => {
    const tries = outcomes.get('streamed')!;

    expect(tries).toHaveLength(OTHER_TRIES);
    expect(missed(tries, 413, CHAT_SHAPE)).toEqual([]);
    // Bodies announced over the limit are refused before any spooling: these are the streamed ones.
    expect(spoolOpen).toHaveBeenCalledTimes(OTHER_TRIES);
  });

  it(`answers a Content-Length no number holds with 400 while the body is still coming, ${OTHER_TRIES} tries out of ${OTHER_TRIES}`, () => {
    const tries = outcomes.get('bad length')!;

    expect(tries).toHaveLength(OTHER_TRIES);
    expect(missed(tries, 400, { error: { message: 'Invalid Content-Length header.', type: 'invalid_request_error', code: null } })).toEqual([]);
  });

  it('forwards none of these calls upstream', () => {
    expect(gateway.simulator.requests).toEqual([]);
  });
});
