import type { DataSource } from 'typeorm';
import type { Page } from './admin-store';
import { parseTimeCursor, timeCursor } from './usage-query';

/** A video task as the admin API lists it. */
export interface VideoTaskRow {
  id: string;
  ownerId: string;
  keyId: string;
  interface: string;
  model: string;
  line: string | null;
  status: string;
  submitRequestId: string;
  submittedAt: Date;
  reservedNano: bigint;
  settledAt: Date | null;
  settlement: string | null;
  costNano: bigint | null;
  usage: Record<string, number> | null;
  polls: number;
  lastError: string | null;
}

interface StoredTask {
  id: string;
  owner_id: string;
  key_id: string;
  interface: string;
  model: string;
  line: string | null;
  status: string;
  submit_request_id: string;
  submitted_at: Date | string;
  reserved_nano: string;
  settled_at: Date | string | null;
  settlement: string | null;
  cost_nano: string | null;
  usage: Record<string, number> | null;
  polls: number;
  last_error: string | null;
}

function taskOf(row: StoredTask): VideoTaskRow {
  return {
    id: row.id,
    ownerId: row.owner_id,
    keyId: row.key_id,
    interface: row.interface,
    model: row.model,
    line: row.line,
    status: row.status,
    submitRequestId: row.submit_request_id,
    submittedAt: new Date(row.submitted_at),
    reservedNano: BigInt(row.reserved_nano),
    settledAt: row.settled_at === null ? null : new Date(row.settled_at),
    settlement: row.settlement,
    costNano: row.cost_nano === null ? null : BigInt(row.cost_nano),
    usage: row.usage,
    polls: Number(row.polls),
    lastError: row.last_error,
  };
}

/** Video tasks for the admin API: open ones (money reserved) and settled ones, newest first. */
export class VideoTaskReads {
  constructor(private readonly dataSource: DataSource) {}

  async tasks(filter: { state?: 'open' | 'settled'; ownerId?: string }, limit: number, after: string | undefined): Promise<Page<VideoTaskRow>> {
    const conditions: string[] = [];
    const values: unknown[] = [];
    if (filter.state === 'open') conditions.push('settled_at IS NULL');
    if (filter.state === 'settled') conditions.push('settled_at IS NOT NULL');
    if (filter.ownerId !== undefined) {
      values.push(filter.ownerId);
      conditions.push(`owner_id = $${values.length}`);
    }
    if (after !== undefined) {
      const cursor = parseTimeCursor(after);
      values.push(cursor.at, cursor.id);
      conditions.push(`(submitted_at, id) < ($${values.length - 1}::timestamptz, $${values.length})`);
    }
    values.push(limit + 1);
    const rows = await this.dataSource.query<StoredTask[]>(
      `SELECT id, owner_id, key_id, interface, model, line, status, submit_request_id, submitted_at, reserved_nano, settled_at,
          settlement, cost_nano, usage, polls, last_error
        FROM video_task ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''} ORDER BY submitted_at DESC, id DESC LIMIT $${values.length}`,
      values,
    );
    const tasks = rows.map(taskOf);
    if (tasks.length <= limit) return { rows: tasks, next: null };
    const page = tasks.slice(0, limit);
    const last = page[page.length - 1];
    return { rows: page, next: timeCursor(last.submittedAt, last.id) };
  }
}
