import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatRoute } from './chat-route';
import { embeddingsRoute } from './embeddings-route';
import { generateContentRoute } from './generate-content-route';
import { imageEditsRoute, imageGenerationsRoute } from './images-a-routes';
import { arkImagesRoute } from './images-b-route';
import { countTokensRoute, messagesRoute } from './messages-route';
import { responsesRoute } from './responses-route';
import { asRecord } from './scripted-model';
import type { Failure, Interruption, RecordedRequest, Route, RouteContext, UpstreamSimulatorOptions, Vendor } from './simulator-types';
import { speechRoute } from './speech-route';
import { ResponseWriter } from './sse-writer';
import { anthropicError, openAiError, vendorError } from './vendor-errors';
import { VideoTaskBoard, videoRoute } from './video-tasks';

export type { Failure, RecordedRequest, UpstreamSimulatorOptions } from './simulator-types';
export { VideoTaskBoard } from './video-tasks';
export type { SimulatedVideoStatus, SimulatedVideoTask } from './video-tasks';

/**
 * The upstream paths the gateway calls (DESIGN.md section 3), keyed by method and path. Video task
 * paths carry an id and are matched by video-tasks.ts; generateContent paths carry the model and
 * are matched by generate-content-route.ts.
 */
const ROUTES: Record<string, Route> = {
  'POST /v1/chat/completions': chatRoute,
  'POST /v1/responses': responsesRoute,
  'POST /v1/messages': messagesRoute,
  'POST /v1/messages/count_tokens': countTokensRoute,
  'POST /v1/embeddings': embeddingsRoute,
  'POST /v1/images/generations': imageGenerationsRoute,
  'POST /v1/images/edits': imageEditsRoute,
  'POST /api/v3/images/generations': arkImagesRoute,
  'POST /v1/t2a_v2': speechRoute,
};

/** Path of the request log, itself never logged, for demos and manual checks. */
const LOG_PATH = '/__requests';

/** Failures planned for a path ('*' matches every path), used up in order. */
interface PlannedFailure {
  failure: Failure;
  remaining: number;
}

/**
 * A fake model vendor speaking the real wire formats over plain node:http: the only fake of the
 * project. Answers follow the rules of scripted-model.ts, steered by the request body alone,
 * because the gateway forwards only a few headers.
 */
export class UpstreamSimulator {
  readonly requests: RecordedRequest[] = [];
  /** The video tasks submitted so far; tests move them between states. */
  readonly video: VideoTaskBoard;
  private readonly failures = new Map<string, PlannedFailure[]>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server?: Server;

  constructor(private readonly options: UpstreamSimulatorOptions = {}) {
    this.video = new VideoTaskBoard(options.videoAutoAdvanceMs);
  }

  /** Listens (port 0 picks a free one) and resolves to the base URL, e.g. `http://127.0.0.1:9100`. */
  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    const server = createServer((request, response) => void this.handle(request, response));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return baseUrlOf(server.address() as AddressInfo);
  }

  /** Ends everything at once, held and stalled requests included, so no handle outlives a test. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  /** Forgets recorded requests, planned failures and video tasks; `requests` and `video` keep their identity. */
  reset(): void {
    this.requests.length = 0;
    this.failures.clear();
    this.video.clear();
  }

  /** The next `times` requests on `path` (without query; '*' for any path) meet `failure`. */
  failNext(path: string, failure: Failure, times = 1): void {
    const queue = this.failures.get(path) ?? [];
    queue.push({ failure, remaining: times });
    this.failures.set(path, queue);
  }

  private takeFailure(pathname: string): Failure | undefined {
    for (const key of [pathname, '*']) {
      const queue = this.failures.get(key);
      const planned = queue?.[0];
      if (!queue || !planned) continue;
      planned.remaining -= 1;
      if (planned.remaining <= 0) queue.shift();
      return planned.failure;
    }
    return undefined;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const body = await readBody(request);
      const path = request.url ?? '/';
      const pathname = path.split('?')[0];
      if (request.method === 'GET' && pathname === LOG_PATH) return this.sendLog(response);
      const recorded = recordRequest(request, path, body);
      this.requests.push(recorded);
      const method = request.method ?? 'GET';
      const route = ROUTES[`${method} ${pathname}`] ?? videoRoute(this.video, method, pathname) ?? generateContentRoute(method, pathname);
      await this.answer(request, response, recorded, route, this.takeFailure(pathname));
    } catch (error) {
      // A bug in the simulator must show up as a clear 500, not as a hanging test.
      if (response.headersSent) return void response.destroy();
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify(openAiError(500, `Simulator error: ${String(error)}`)));
    }
  }

  private async answer(
    request: IncomingMessage,
    response: ServerResponse,
    recorded: RecordedRequest,
    route: Route | undefined,
    failure: Failure | undefined,
  ): Promise<void> {
    const vendor: Vendor = route?.vendor ?? 'openai';
    const errorOf = (status: number, message: string) => (route?.errorBody ? route.errorBody(status, message) : vendorError(vendor, status, message));
    const writer = this.writerFor(response, vendor, failure);
    if (failure && !('kind' in failure)) {
      if (typeof failure.body === 'string') return writer.text(failure.status, failure.body, failure.headers);
      const errorBody = failure.body ?? errorOf(failure.status, `Simulated upstream failure (${failure.status})`);
      return writer.json(failure.status, errorBody, failure.headers);
    }
    switch (failure?.kind) {
      case 'reset-before-headers':
        return void request.socket.destroy();
      case 'never-respond':
        return; // stop() or the client's own abort ends it
      case 'raw':
        return writer.raw(failure.status, failure.contentType, failure.chunks, failure.keepOpen === true);
      case 'delay':
        await this.wait(failure.ms);
        if (request.socket.destroyed) return;
    }
    if (!route) return writer.json(404, openAiError(404, `Invalid URL (${request.method} ${recorded.path})`));
    if (!this.isAuthorized(route, request.headers)) {
      if (route.unauthorized) {
        const refusal = route.unauthorized(credentialOf(route, request.headers) !== undefined);
        return writer.json(refusal.status, refusal.body);
      }
      return writer.json(401, route.errorBody ? route.errorBody(401, 'invalid api key') : unauthorizedBody(vendor));
    }
    const body = recorded.json;
    if (!route.checksOwnBody && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      return writer.json(400, errorOf(400, 'We could not parse the JSON body of your request.'));
    }
    const context: RouteContext = {
      request: recorded,
      body: asRecord(body),
      // Decoded only when a route reads it: image bodies run to 30 MiB.
      get rawBody() {
        return recorded.body.toString('utf8');
      },
      json: (status, answer) => writer.json(status, answer),
      events: (events) => writer.events(events),
      reject: (status, message) => writer.json(status, errorOf(status, message)),
    };
    await route.handle(context);
  }

  private writerFor(response: ServerResponse, vendor: Vendor, failure: Failure | undefined): ResponseWriter {
    const interrupts = failure !== undefined && 'kind' in failure && (failure.kind === 'reset-mid-stream' || failure.kind === 'stall-mid-stream');
    return new ResponseWriter(response, {
      vendor,
      interruption: interrupts ? (failure as Interruption) : undefined,
      chunkDelayMs: this.options.chunkDelayMs ?? 0,
      wait: (ms) => this.wait(ms),
    });
  }

  /**
   * OpenAI-style routes take `Authorization: Bearer`. Anthropic-style ones take `x-api-key`
   * or, like the current API (the 1.x SDK sends its key that way), `Authorization: Bearer`.
   * Routes with `credential: 'x-goog-api-key'` take that header only.
   */
  private isAuthorized(route: Route, headers: IncomingHttpHeaders): boolean {
    const expected = this.options.apiKey;
    if (expected === undefined) return true;
    if (route.credential === 'x-goog-api-key') return headers['x-goog-api-key'] === expected;
    const bearerMatches = headers.authorization === `Bearer ${expected}`;
    return route.vendor === 'anthropic' ? bearerMatches || headers['x-api-key'] === expected : bearerMatches;
  }

  /** A timer that stop() cancels; the waiting request then simply never goes on. */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }

  private sendLog(response: ServerResponse): void {
    const entries = this.requests.map(({ body, ...entry }) => (entry.json === undefined ? { ...entry, body: body.toString('utf8') } : entry));
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(entries));
  }
}

function unauthorizedBody(vendor: Vendor): unknown {
  if (vendor === 'anthropic') return anthropicError(401, 'invalid x-api-key');
  return openAiError(401, 'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.');
}

/** The key a request presents in the route's credential header, if any. */
function credentialOf(route: Route, headers: IncomingHttpHeaders): string | undefined {
  const value = route.credential === 'x-goog-api-key' ? headers['x-goog-api-key'] : headers.authorization;
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function recordRequest(request: IncomingMessage, path: string, body: Buffer): RecordedRequest {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = value;
  }
  const recorded: RecordedRequest = { method: request.method ?? 'GET', path, headers, body, clientPort: request.socket.remotePort };
  // A form (image edits) is never JSON: skip decoding and parsing up to 30 MiB for nothing.
  if (headers['content-type']?.toString().startsWith('multipart/form-data')) return recorded;
  try {
    if (body.length > 0) recorded.json = JSON.parse(body.toString('utf8'));
  } catch {
    // Not JSON: the route answers 400 and the raw bytes stay in `body`.
  }
  return recorded;
}

/** A wildcard listen address is reached through loopback; IPv6 literals need brackets. */
function baseUrlOf(address: AddressInfo): string {
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const host = wildcard ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
