import { randomBytes } from 'node:crypto';
import { asRecord } from './scripted-model';
import type { Route, RouteContext } from './simulator-types';

/**
 * Asynchronous video tasks of the two video vendors, paths as the gateway calls them upstream:
 * - vendor-c (MiniMax-like): `POST /v2/video_generation`, `GET /v2/query/video_generation/{id}`,
 *   `DELETE /v2/video_generation/{id}`; answers carry `base_resp`.
 * - vendor-b (Volcengine-Ark-like): `POST /api/v3/contents/generations/tasks`,
 *   `GET` and `DELETE /api/v3/contents/generations/tasks/{id}`; errors are `{ error: { code, ... } }`.
 * Tasks live on a VideoTaskBoard that tests drive (setStatus, succeed); without
 * `videoAutoAdvanceMs` a task stays `queued` until a test moves it.
 */

export type VideoVendor = 'vendor-b' | 'vendor-c';

export type SimulatedVideoStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'expired';

/** What a failed task reports in `error`. */
export interface SimulatedVideoError {
  code: string | number;
  message: string;
}

/** One task as the simulator holds it; the board hands out the live object. */
export interface SimulatedVideoTask {
  id: string;
  vendor: VideoVendor;
  model: string;
  status: SimulatedVideoStatus;
  /** The submit body as received. */
  body: Record<string, unknown>;
  /** Vendor-b: submitted with `draft: true`. */
  draft: boolean;
  /** Vendor-b: the draft task named by a `draft_task` content item. */
  draftTaskId?: string;
  /** Reported only while succeeded; absent means an answer without usage. */
  usage?: Record<string, number>;
  /** Reported only while failed. */
  error?: SimulatedVideoError;
  /** Milliseconds since the epoch (answers carry unix seconds). */
  createdAt: number;
  updatedAt: number;
  /** GET and DELETE calls on this id that reached the task (planned failures and 401s not counted). */
  queries: number;
  cancels: number;
}

/** Where succeeded tasks say their video is; never fetched. */
export const VIDEO_HOST = 'https://videos.simulator.invalid';

const DEFAULT_ERRORS: Record<VideoVendor, SimulatedVideoError> = {
  'vendor-c': { code: 1013, message: 'simulated video generation failure' },
  'vendor-b': { code: 'InternalServiceError', message: 'simulated video generation failure' },
};

/**
 * The simulator's video tasks, in creation order. Tests read and move them; the routes create,
 * find and cancel them. With `autoAdvanceMs` a task nobody moved explicitly is `running` once
 * that long after creation and `succeeded` (default usage) after twice that, applied lazily
 * whenever the task is read, so no timer outlives a test.
 */
export class VideoTaskBoard {
  private readonly tasks = new Map<string, SimulatedVideoTask>();
  /** Ids moved by setStatus or succeed: auto-advance leaves them alone. */
  private readonly pinned = new Set<string>();

  constructor(
    private readonly autoAdvanceMs?: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Tasks in creation order, of one vendor when given. */
  list(vendor?: VideoVendor): SimulatedVideoTask[] {
    return [...this.tasks.values()].filter((task) => vendor === undefined || task.vendor === vendor).map((task) => this.advance(task));
  }

  get(id: string): SimulatedVideoTask | undefined {
    const task = this.tasks.get(id);
    return task && this.advance(task);
  }

  /** The most recently created task. */
  last(): SimulatedVideoTask | undefined {
    return this.list().at(-1);
  }

  /** Moves a task to any state but succeeded (see succeed); `error` is what a failed task reports. */
  setStatus(id: string, status: Exclude<SimulatedVideoStatus, 'succeeded'>, error?: SimulatedVideoError): void {
    const task = this.pin(id);
    task.status = status;
    task.usage = undefined;
    task.error = status === 'failed' ? (error ?? DEFAULT_ERRORS[task.vendor]) : undefined;
  }

  /** Marks a task succeeded; `usage` undefined gives the default usage, null an answer without usage. */
  succeed(id: string, usage?: Record<string, number> | null): void {
    const task = this.pin(id);
    task.status = 'succeeded';
    task.usage = usage === null ? undefined : (usage ?? defaultUsage(task));
    task.error = undefined;
  }

  clear(): void {
    this.tasks.clear();
    this.pinned.clear();
  }

  /** Used by the submit routes: a new queued task. */
  create(vendor: VideoVendor, body: Record<string, unknown>, draftTaskId?: string): SimulatedVideoTask {
    const id = `${vendor === 'vendor-c' ? 'vc-' : 'cgt-'}${randomBytes(12).toString('hex')}`;
    const createdAt = this.now();
    const task: SimulatedVideoTask = {
      id,
      vendor,
      model: String(body.model),
      status: 'queued',
      body,
      draft: vendor === 'vendor-b' && body.draft === true,
      createdAt,
      updatedAt: createdAt,
      queries: 0,
      cancels: 0,
    };
    if (draftTaskId !== undefined) task.draftTaskId = draftTaskId;
    this.tasks.set(id, task);
    return task;
  }

  /** Used by the routes: a task of that vendor, advanced to now; another vendor's id is unknown. */
  find(vendor: VideoVendor, id: string): SimulatedVideoTask | undefined {
    const task = this.get(id);
    return task?.vendor === vendor ? task : undefined;
  }

  /** Used by the cancel routes: true when the task was queued and is now cancelled. */
  cancel(task: SimulatedVideoTask): boolean {
    if (task.status !== 'queued') return false;
    task.status = 'cancelled';
    task.updatedAt = this.now();
    return true;
  }

  private pin(id: string): SimulatedVideoTask {
    const task = this.tasks.get(id);
    if (!task) throw new Error(`No simulated video task ${id}`);
    this.pinned.add(id);
    task.updatedAt = this.now();
    return task;
  }

  private advance(task: SimulatedVideoTask): SimulatedVideoTask {
    const step = this.autoAdvanceMs;
    if (step === undefined || this.pinned.has(task.id)) return task;
    const elapsed = this.now() - task.createdAt;
    if (task.status === 'queued' && elapsed >= step) {
      task.status = 'running';
      task.updatedAt = task.createdAt + step;
    }
    if (task.status === 'running' && elapsed >= 2 * step) {
      task.status = 'succeeded';
      task.usage = defaultUsage(task);
      task.updatedAt = task.createdAt + 2 * step;
    }
    return task;
  }
}

/**
 * Usage a succeeded task reports unless a test says otherwise.
 * - vendor-c: `output_seconds` = duration (6 when absent), `input_seconds` = summed `duration` of
 *   video content items, `input_image_count` = number of `image_url` items.
 * - vendor-b: tokens = round(W * H * 24 fps * duration / 1024), H from a resolution like "720p"
 *   (720 when absent), W = round(H * 16 / 9), duration 5 when absent.
 */
export function defaultUsage(task: Pick<SimulatedVideoTask, 'vendor' | 'body'>): Record<string, number> {
  const duration = typeof task.body.duration === 'number' ? task.body.duration : undefined;
  if (task.vendor === 'vendor-c') {
    const items = contentItems(task.body);
    return {
      output_seconds: duration ?? 6,
      input_seconds: items.filter(isVideoItem).reduce((sum, item) => sum + itemDuration(item), 0),
      input_image_count: items.filter((item) => item.type === 'image_url').length,
    };
  }
  const height = Number(/^(\d+)p$/i.exec(String(task.body.resolution ?? ''))?.[1] ?? 720);
  const width = Math.round((height * 16) / 9);
  const tokens = Math.round((width * height * 24 * (duration ?? 5)) / 1024);
  return { completion_tokens: tokens, total_tokens: tokens };
}

function contentItems(body: Record<string, unknown>): Record<string, unknown>[] {
  return Array.isArray(body.content) ? body.content.map(asRecord) : [];
}

function isVideoItem(item: Record<string, unknown>): boolean {
  return item.type === 'video_url' || item.type === 'video';
}

/** A video item's seconds: `duration` on the item or inside its typed part (`video_url.duration`). */
function itemDuration(item: Record<string, unknown>): number {
  const own = item.duration ?? asRecord(item[String(item.type)]).duration;
  return typeof own === 'number' ? own : 0;
}

const unixSeconds = (ms: number) => Math.floor(ms / 1000);

/** The submitted `duration` and `resolution`, each only when given. */
function echoed(task: SimulatedVideoTask): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (task.body.duration !== undefined) fields.duration = task.body.duration;
  if (task.body.resolution !== undefined) fields.resolution = task.body.resolution;
  return fields;
}

/** The request body when it is a JSON object, else undefined (the routes answer 400). */
function objectBody(context: RouteContext): Record<string, unknown> | undefined {
  const json = context.request.json;
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
}

// ---------------------------------------------------------------- vendor-c

const C_OK = { status_code: 0, status_msg: 'success' };

/** Vendor-c errors: HTTP status plus a `base_resp` code (2013 invalid params, 1004 not found, ...). */
export function vendorCError(status: number, message: string, code = vendorCCode(status)): unknown {
  return { base_resp: { status_code: code, status_msg: message } };
}

function vendorCCode(status: number): number {
  switch (status) {
    case 400:
      return 2013;
    case 401:
      return 2049;
    case 402:
      return 1008;
    case 404:
      return 1004;
    case 429:
      return 1002;
    default:
      return status >= 500 ? 1013 : 1000;
  }
}

function vendorCRoute(handle: Route['handle']): Route {
  return { vendor: 'openai', checksOwnBody: true, errorBody: vendorCError, handle };
}

function submitC(board: VideoTaskBoard): Route {
  return vendorCRoute(async (context) => {
    const body = objectBody(context);
    if (!body) return context.json(400, vendorCError(400, 'invalid params: body must be a JSON object'));
    if (typeof body.model !== 'string') return context.json(400, vendorCError(400, 'invalid params: model is required'));
    const task = board.create('vendor-c', body);
    return context.json(200, { task_id: task.id, base_resp: C_OK });
  });
}

function queryC(board: VideoTaskBoard, id: string): Route {
  return vendorCRoute(async (context) => {
    const task = board.find('vendor-c', id);
    if (!task) return context.json(404, vendorCError(404, `task ${id} not found`));
    task.queries += 1;
    const answer: Record<string, unknown> = {
      id: task.id,
      model: task.model,
      status: task.status,
      ...echoed(task),
      created_at: unixSeconds(task.createdAt),
    };
    if (task.status === 'succeeded') {
      answer.content = { url: `${VIDEO_HOST}/vc/${task.id}.mp4` };
      if (task.usage) answer.usage = task.usage;
    }
    if (task.status === 'failed' && task.error) answer.error = task.error;
    return context.json(200, { task: answer, base_resp: C_OK });
  });
}

function cancelC(board: VideoTaskBoard, id: string): Route {
  return vendorCRoute(async (context) => {
    const task = board.find('vendor-c', id);
    if (!task) return context.json(404, vendorCError(404, `task ${id} not found`));
    task.cancels += 1;
    if (!board.cancel(task)) {
      return context.json(400, vendorCError(400, `only queued tasks can be cancelled; task ${id} is ${task.status}`));
    }
    return context.json(200, { task: { id: task.id, status: task.status }, base_resp: C_OK });
  });
}

// ---------------------------------------------------------------- vendor-b

/** Vendor-b errors: `{ error: { code, message, param?, type } }`, type named after the status. */
export function vendorBError(status: number, message: string, code = vendorBCode(status), param?: string): unknown {
  return { error: { code, message, ...(param === undefined ? {} : { param }), type: vendorBType(status) } };
}

function vendorBCode(status: number): string {
  switch (status) {
    case 400:
      return 'InvalidParameter';
    case 401:
      return 'AuthenticationError';
    case 403:
      return 'AccessDenied';
    case 404:
      return 'ResourceNotFound';
    case 429:
      return 'RateLimitExceeded';
    default:
      return status >= 500 ? 'InternalServiceError' : 'BadRequest';
  }
}

function vendorBType(status: number): string {
  switch (status) {
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 429:
      return 'TooManyRequests';
    default:
      return status >= 500 ? 'InternalServerError' : 'BadRequest';
  }
}

function vendorBRoute(handle: Route['handle']): Route {
  return { vendor: 'openai', checksOwnBody: true, errorBody: (status, message) => vendorBError(status, message), handle };
}

const notFoundB = (id: string) => vendorBError(404, `task ${id} not found`);

function submitB(board: VideoTaskBoard): Route {
  return vendorBRoute(async (context) => {
    const body = objectBody(context);
    if (!body) return context.json(400, vendorBError(400, 'the request body must be a JSON object', 'InvalidParameter', 'model'));
    if (typeof body.model !== 'string') {
      return context.json(400, vendorBError(400, 'the parameter `model` is required', 'InvalidParameter', 'model'));
    }
    const draftItem = contentItems(body).find((item) => item.type === 'draft_task');
    let draftTaskId: string | undefined;
    if (draftItem) {
      const named = asRecord(draftItem.draft_task).id;
      const draft = typeof named === 'string' ? board.find('vendor-b', named) : undefined;
      if (!draft?.draft) {
        const message = `the draft task ${String(named)} does not exist or is not a draft`;
        return context.json(400, vendorBError(400, message, 'InvalidParameter', 'content'));
      }
      draftTaskId = draft.id;
    }
    const task = board.create('vendor-b', body, draftTaskId);
    return context.json(200, { id: task.id });
  });
}

function queryB(board: VideoTaskBoard, id: string): Route {
  return vendorBRoute(async (context) => {
    const task = board.find('vendor-b', id);
    if (!task) return context.json(404, notFoundB(id));
    task.queries += 1;
    const answer: Record<string, unknown> = {
      id: task.id,
      model: task.model,
      status: task.status,
      created_at: unixSeconds(task.createdAt),
      updated_at: unixSeconds(task.updatedAt),
      ...echoed(task),
    };
    if (task.draft) answer.draft = true;
    if (task.status === 'succeeded') {
      answer.content = { video_url: `${VIDEO_HOST}/vb/${task.id}.mp4` };
      if (task.usage) answer.usage = task.usage;
    }
    if (task.status === 'failed' && task.error) answer.error = task.error;
    return context.json(200, answer);
  });
}

function cancelB(board: VideoTaskBoard, id: string): Route {
  return vendorBRoute(async (context) => {
    const task = board.find('vendor-b', id);
    if (!task) return context.json(404, notFoundB(id));
    task.cancels += 1;
    if (!board.cancel(task)) {
      return context.json(400, vendorBError(400, `only queued tasks can be cancelled; task ${id} is ${task.status}`, 'InvalidAction'));
    }
    return context.json(200, {});
  });
}

// ---------------------------------------------------------------- routing

/** Method, path pattern (the id, when any, is the first group) and the route it gives. */
const VIDEO_PATHS: Array<[string, RegExp, (board: VideoTaskBoard, id: string) => Route]> = [
  ['POST', /^\/v2\/video_generation$/, submitC],
  ['GET', /^\/v2\/query\/video_generation\/([^/]+)$/, queryC],
  ['DELETE', /^\/v2\/video_generation\/([^/]+)$/, cancelC],
  ['POST', /^\/api\/v3\/contents\/generations\/tasks$/, submitB],
  ['GET', /^\/api\/v3\/contents\/generations\/tasks\/([^/]+)$/, queryB],
  ['DELETE', /^\/api\/v3\/contents\/generations\/tasks\/([^/]+)$/, cancelB],
];

/** The video route for a request, bound to its task id; undefined when the path is no video path. */
export function videoRoute(board: VideoTaskBoard, method: string, pathname: string): Route | undefined {
  for (const [routeMethod, pattern, route] of VIDEO_PATHS) {
    const match = method === routeMethod ? pattern.exec(pathname) : null;
    if (match) return route(board, decodeId(match[1] ?? ''));
  }
  return undefined;
}

function decodeId(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
