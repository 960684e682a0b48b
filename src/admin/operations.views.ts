import { ApiProperty } from '@nestjs/swagger';
import { nanoToNumber } from '../config/money';
import type { Line } from '../upstream/line-registry';
import type { MinuteTotal } from './usage-query';
import type { VideoTaskRow } from './video-task-reads';

/** What the console's overview and video pages read: calls per minute, the lines' state, video tasks. */

export class MinuteTotalView {
  @ApiProperty({ example: '2026-11-27T14:05:00.000Z', description: 'Start of the minute (UTC).' }) minute!: string;
  @ApiProperty() calls!: number;
  @ApiProperty({ description: 'Calls answered with status 400 or above.' }) failed_calls!: number;
  @ApiProperty() cost!: number;
  @ApiProperty() cost_nano!: string;
}

export class MinuteTotals {
  @ApiProperty({ type: [MinuteTotalView], description: 'Oldest first; minutes without calls are left out.' }) data!: MinuteTotalView[];
}

export function minuteView(total: MinuteTotal): MinuteTotalView {
  return {
    minute: total.minute.toISOString(),
    calls: total.calls,
    failed_calls: total.failedCalls,
    cost: nanoToNumber(total.costNano),
    cost_nano: total.costNano.toString(),
  };
}

export class LineStateView {
  @ApiProperty() id!: string;
  @ApiProperty() base_url!: string;
  @ApiProperty({ description: 'Calls on the line now, on the replica that answered.' }) in_flight!: number;
  @ApiProperty({ type: Number, nullable: true, description: "The line's max_concurrency; null: no limit." }) max_concurrency!: number | null;
  @ApiProperty({ description: 'Skipped by new calls while another line of the model is usable (after a failure).' }) cooling!: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'When the cooling ends.' }) cooling_until!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: "Until when the line's vendor asked for no calls (a 429's Retry-After): tried after the model's other lines till then; null: not now.",
  })
  rate_limited_until!: string | null;
}

export class LineStates {
  @ApiProperty({ type: [LineStateView] }) data!: LineStateView[];
}

export function lineStateView(line: Line, now: number): LineStateView {
  const cooling = line.coolingUntil > now;
  return {
    id: line.id,
    base_url: line.config.baseUrl,
    in_flight: line.inFlight,
    max_concurrency: line.config.maxConcurrency ?? null,
    cooling,
    cooling_until: cooling ? new Date(line.coolingUntil).toISOString() : null,
    rate_limited_until: line.rateLimitedUntil > now ? new Date(line.rateLimitedUntil).toISOString() : null,
  };
}

export class VideoTaskView {
  @ApiProperty({ description: "The gateway's task id, as clients see it." }) id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty() key_id!: string;
  @ApiProperty() interface!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ type: String, nullable: true }) line!: string | null;
  @ApiProperty({ description: "`submitting`, then the upstream's status as last seen." }) status!: string;
  @ApiProperty({ description: 'Request id of the submit: the request id of its usage record once settled.' }) submit_request_id!: string;
  @ApiProperty() submitted_at!: string;
  @ApiProperty({ description: 'Held from the owner while the task is open.' }) reserved!: number;
  @ApiProperty() reserved_nano!: string;
  @ApiProperty({ type: String, nullable: true }) settled_at!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'How it was billed: from usage, by the reservation, or not at all.' }) settlement!: string | null;
  @ApiProperty({ type: Number, nullable: true }) cost!: number | null;
  @ApiProperty({ type: String, nullable: true }) cost_nano!: string | null;
  @ApiProperty({ type: 'object', nullable: true, additionalProperties: { type: 'number' } }) usage!: Record<string, number> | null;
  @ApiProperty({ description: 'Status queries made to the upstream so far.' }) polls!: number;
  @ApiProperty({ type: String, nullable: true }) last_error!: string | null;
}

export class VideoTaskPage {
  @ApiProperty({ type: [VideoTaskView] }) data!: VideoTaskView[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `after` for the next page; null on the last page.' }) next!: string | null;
}

export function videoTaskView(task: VideoTaskRow): VideoTaskView {
  return {
    id: task.id,
    owner_id: task.ownerId,
    key_id: task.keyId,
    interface: task.interface,
    model: task.model,
    line: task.line,
    status: task.status,
    submit_request_id: task.submitRequestId,
    submitted_at: task.submittedAt.toISOString(),
    reserved: nanoToNumber(task.reservedNano),
    reserved_nano: task.reservedNano.toString(),
    settled_at: task.settledAt?.toISOString() ?? null,
    settlement: task.settlement,
    cost: task.costNano === null ? null : nanoToNumber(task.costNano),
    cost_nano: task.costNano?.toString() ?? null,
    usage: task.usage,
    polls: task.polls,
    last_error: task.lastError,
  };
}
