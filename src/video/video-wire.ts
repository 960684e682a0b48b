import type { UsageFigures } from '../metering/usage-figures';
import type { VideoInterface } from './video-task.entity';

/** A task as one query answer reports it. */
export interface ReportedTask {
  status?: string;
  /** Metered figures, named as in the price table; undefined when the answer reports none. */
  figures?: UsageFigures;
  durationSeconds?: number;
  resolution?: string;
}

/** Where one vendor's task API lives upstream and how its answers are read. */
export interface VideoWire {
  interface: VideoInterface;
  submitPath: string;
  queryPath(upstreamId: string): string;
  cancelPath(upstreamId: string): string;
  /** The upstream's task id in a submit answer. */
  submittedId(answer: unknown): string | undefined;
  reported(answer: unknown): ReportedTask;
}

type Json = Record<string, unknown>;

function child(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Json)[key] : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function figuresOf(entries: Array<[string, number | undefined]>): UsageFigures | undefined {
  const figures: UsageFigures = {};
  let any = false;
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    figures[name] = value;
    any = true;
  }
  return any ? figures : undefined;
}

function taskFacts(task: unknown): Omit<ReportedTask, 'figures'> {
  return { status: text(child(task, 'status')), durationSeconds: count(child(task, 'duration')), resolution: text(child(task, 'resolution')) };
}

/** Vendor-c: `{task_id}` on submit; `{task: {id, status, content.url, duration, usage}}` on query (SPEC.md "Video task"). */
export const VENDOR_C_WIRE: VideoWire = {
  interface: 'video_c',
  submitPath: '/v2/video_generation',
  queryPath: (id) => `/v2/query/video_generation/${encodeURIComponent(id)}`,
  cancelPath: (id) => `/v2/video_generation/${encodeURIComponent(id)}`,
  submittedId: (answer) => text(child(answer, 'task_id')),
  reported(answer) {
    const task = child(answer, 'task');
    const usage = child(task, 'usage');
    return {
      ...taskFacts(task),
      figures: figuresOf([
        ['output_seconds', count(child(usage, 'output_seconds'))],
        ['input_seconds', count(child(usage, 'input_seconds'))],
        ['input_image_count', count(child(usage, 'input_image_count'))],
      ]),
    };
  },
};

/** Vendor-b: `{id}` on submit; the task object itself, status at the top level, on query. Billed by output tokens. */
export const VENDOR_B_WIRE: VideoWire = {
  interface: 'video_b',
  submitPath: '/api/v3/contents/generations/tasks',
  queryPath: (id) => `/api/v3/contents/generations/tasks/${encodeURIComponent(id)}`,
  cancelPath: (id) => `/api/v3/contents/generations/tasks/${encodeURIComponent(id)}`,
  submittedId: (answer) => text(child(answer, 'id')),
  reported(answer) {
    return {
      ...taskFacts(answer),
      figures: figuresOf([['output_video_tokens', count(child(child(answer, 'usage'), 'completion_tokens'))]]),
    };
  },
};

export function wireOf(videoInterface: VideoInterface): VideoWire {
  return videoInterface === 'video_b' ? VENDOR_B_WIRE : VENDOR_C_WIRE;
}

/** A JSON string literal, escapes included. */
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;
/** A string literal holding a result address: left as the upstream signed it, so the download keeps working. */
const ADDRESS_LITERAL = /^"https?:\/\//i;

/**
 * An upstream answer with the upstream task id replaced by the gateway's wherever it occurs
 * in a string (ids, error messages), except inside result addresses. Every other byte stays as
 * the upstream sent it (numbers, spacing, field order). A body that is not JSON gets the same
 * replacement as text.
 */
export function withGatewayId(body: Buffer, upstreamId: string, gatewayId: string): Buffer {
  const source = body.toString('utf8');
  if (!source.includes(upstreamId)) return body;
  const swap = (text: string) => text.split(upstreamId).join(gatewayId);
  const start = source.trimStart()[0];
  if (start !== '{' && start !== '[') return Buffer.from(swap(source));
  return Buffer.from(source.replace(JSON_STRING, (literal) => (literal.includes(upstreamId) && !ADDRESS_LITERAL.test(literal) ? swap(literal) : literal)));
}

export function parsedJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
