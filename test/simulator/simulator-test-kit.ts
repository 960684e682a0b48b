import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { UpstreamSimulator } from './upstream-simulator';

/**
 * Helpers for the simulator's own specs: raw clients that see exactly what went over the wire, and a
 * simulator started for one describe block with a JSON poster.
 */

export interface RawOutcome {
  status?: number;
  headers?: IncomingHttpHeaders;
  /** Milliseconds from sending the request to receiving the response headers. */
  headersAfterMs?: number;
  text: string;
  /** False when the body ended without its proper end (socket closed mid-answer). */
  complete: boolean;
  error?: Error;
}

export interface RawOptions {
  headers?: Record<string, string>;
  /** Client gives up (destroys the request) after this much socket inactivity. */
  idleTimeoutMs?: number;
}

/** POSTs JSON on a fresh connection and reports whatever happened, never rejecting. */
export function rawPost(url: string, body: unknown, options: RawOptions = {}): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const outcome: RawOutcome = { text: '', complete: false };
    const sentAt = Date.now();
    const request = httpRequest(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...options.headers } }, (response) => {
      outcome.status = response.statusCode;
      outcome.headers = response.headers;
      outcome.headersAfterMs = Date.now() - sentAt;
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (outcome.text += chunk));
      response.on('error', (error) => (outcome.error ??= error));
      response.on('close', () => {
        outcome.complete = response.complete;
        resolve(outcome);
      });
    });
    request.on('error', (error) => {
      outcome.error ??= error;
      if (outcome.status === undefined) resolve(outcome);
    });
    if (options.idleTimeoutMs) {
      request.setTimeout(options.idleTimeoutMs, () => request.destroy(new Error('client gave up waiting')));
    }
    request.end(JSON.stringify(body));
  });
}

export interface ParsedSse {
  event?: string;
  data: string;
}

/** Splits raw SSE text into events, keeping the `event:` name apart from the data. */
export function parseSse(text: string): ParsedSse[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const parsed: ParsedSse = { data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) parsed.event = line.slice('event: '.length);
        if (line.startsWith('data: ')) parsed.data = line.slice('data: '.length);
      }
      return parsed;
    });
}

/** The simulator's input-token rule, restated so a changed rule fails the specs. */
export function quarterBytes(value: unknown): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(value), 'utf8') / 4);
}

/** A function declaration in the shape all three protocols share (name, description, schema). */
export interface FunctionDeclaration {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
}

export const weatherTool: FunctionDeclaration = {
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};

export const timeTool: FunctionDeclaration = {
  name: 'get_time',
  description: 'Local time of a time zone',
  parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] },
};

/** One answer as fetch saw it; `json` is undefined when the body was not JSON. */
export interface JsonAnswer {
  status: number;
  json: any;
}

/** POSTs a JSON (or, when a string, raw) body with these headers and parses the answer when it is JSON. */
async function postJson(url: string, body: unknown, headers: Record<string, string>): Promise<JsonAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  try {
    return { status: response.status, json: JSON.parse(text) };
  } catch {
    return { status: response.status, json: undefined };
  }
}

/** A describe block's simulator: started before its tests, reset before each, stopped after them. */
export interface SimulatorUnderTest {
  simulator: UpstreamSimulator;
  /** Where it listens, once started: read it inside hooks and tests. */
  readonly baseUrl: string;
  /** POSTs a JSON (or, when a string, raw) body to a path with the Bearer key unless headers say otherwise. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<JsonAnswer>;
}

/** A simulator taking this key for the surrounding describe block; call it at the top of the block. */
export function useSimulator(apiKey: string): SimulatorUnderTest {
  const simulator = new UpstreamSimulator({ apiKey });
  let baseUrl = '';
  beforeAll(async () => {
    baseUrl = await simulator.start();
  });
  afterAll(() => simulator.stop());
  beforeEach(() => simulator.reset());
  return {
    simulator,
    get baseUrl() {
      return baseUrl;
    },
    post: (path, body, headers = { authorization: `Bearer ${apiKey}` }) => postJson(`${baseUrl}${path}`, body, headers),
  };
}

/** The bytes as a base64 data URL of this media type. */
export const toDataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;
