/** Shared types of the upstream simulator: what tests configure and what they can inspect. */

/** One request as the simulator received it, kept in arrival order. */
export interface RecordedRequest {
  method: string;
  /** Path including the query string, exactly as sent. */
  path: string;
  headers: Record<string, string | string[]>;
  body: Buffer;
  /** Parsed body when it was valid JSON. */
  json?: unknown;
  /** The client's port of the connection it came on: equal ports mean a reused keep-alive connection. */
  clientPort?: number;
}

/**
 * A fault to inject into the next request(s) on a path.
 * - `{ status }`: answer with that status, the vendor's error body (or `body`: JSON, or a string
 *   sent as is) and `headers`.
 * - `delay`: wait before the response headers, then answer normally.
 * - `reset-before-headers`: destroy the socket without any response.
 * - `reset-mid-stream`: destroy the socket after `afterEvents` SSE events (JSON: after half the body).
 * - `never-respond`: keep the request open until the client gives up or the simulator stops.
 * - `stall-mid-stream`: stop writing after `afterEvents` SSE events (JSON: after half the body).
 * - `raw`: answer `status` with `contentType` and exactly these bytes, each chunk its own write
 *   (chunked transfer, no length; the last one with the end of the body), the way a faulty vendor
 *   or a proxy in front of one sends them:
 *   broken JSON, garbage in a stream, an error body with HTTP 200, a huge answer. With
 *   `keepOpen`, every chunk is written and the body is never ended (an upstream that holds the
 *   connection after its last event).
 */
export type Failure =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'delay'; ms: number }
  | { kind: 'reset-before-headers' }
  | { kind: 'reset-mid-stream'; afterEvents: number }
  | { kind: 'never-respond' }
  | { kind: 'stall-mid-stream'; afterEvents: number }
  | { kind: 'raw'; status: number; contentType: string; chunks: Iterable<string | Buffer>; keepOpen?: boolean };

/** A failure that lets the answer start and then breaks it. */
export type Interruption = Extract<Failure, { kind: 'reset-mid-stream' | 'stall-mid-stream' }>;

export interface UpstreamSimulatorOptions {
  /** When set, requests must carry this key in the route's credential header, else 401. */
  apiKey?: string;
  /** Pause between SSE events, on top of the event-loop yield every event gets. */
  chunkDelayMs?: number;
  /**
   * Video tasks nobody moved explicitly are reported `running` this long after creation and
   * `succeeded` (default usage) after twice that. Unset: they stay `queued` until a test moves them.
   */
  videoAutoAdvanceMs?: number;
}

/** Whose wire conventions a route follows: error shape, credential header, request-id header. */
export type Vendor = 'openai' | 'anthropic';

/** One server-sent event; `event` is the optional `event:` line. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** What a route handler gets: the parsed request and a way to answer it. */
export interface RouteContext {
  request: RecordedRequest;
  body: Record<string, unknown>;
  /** The body as text, for rules that look at the raw bytes (the "cache-me" marker); decoded when read. */
  readonly rawBody: string;
  json(status: number, body: unknown): Promise<void>;
  events(events: SseEvent[]): Promise<void>;
  /** Answers with the route vendor's error shape. */
  reject(status: number, message: string): Promise<void>;
}

/** The header a route takes its key from: `Authorization: Bearer` (the default) or Google's `x-goog-api-key`. */
export type Credential = 'bearer' | 'x-goog-api-key';

/** A whole answer: status and JSON body. */
export interface Refusal {
  status: number;
  body: unknown;
}

export interface Route {
  vendor: Vendor;
  /** Where the key must be; default `bearer` (Anthropic-style routes also take `x-api-key`). */
  credential?: Credential;
  /**
   * The answer to a request without the right key, for vendors that do not answer 401 (Google:
   * 400 or 403; MiniMax: HTTP 200 with a `base_resp` code). `presented`: some key was sent.
   * Default: 401 in errorBody's or the vendor's shape.
   */
  unauthorized?(presented: boolean): Refusal;
  /** Error body for a vendor with a shape of its own (planned failures, 401, reject); default: `vendor`'s. */
  errorBody?(status: number, message: string): unknown;
  /** The route checks the body itself or reads none: the shared "not a JSON object" 400 is skipped. */
  checksOwnBody?: boolean;
  handle(context: RouteContext): Promise<void>;
}
