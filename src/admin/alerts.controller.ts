import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsNotEmpty, IsOptional, IsString } from 'class-validator';
import { DataSource } from 'typeorm';
import { alertEventOf, STORED_ALERT_COLUMNS, StoredAlert, storedAlertOf, StoredAlertRecord } from '../governance/budget-alerts';
import type { Page } from './admin-store';
import { AdminGuard } from './admin.guard';
import { AdminErrors } from './admin-errors';
import { PageQuery } from './admin.dto';
import { Validated } from './admin-validation';
import { SESSION_COOKIE } from './console-sessions';
import { parseTimeCursor, timeCursor } from './usage-query';

const DEFAULT_PAGE = 100;

export class AlertQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Only the alerts of this quota owner.' })
  @IsOptional()
  @IsNotEmpty()
  @IsString()
  owner_id?: string;
}

class AlertPeriodView {
  @ApiProperty({ type: String, nullable: true, description: "The period's start; null for an owner without a period (its lifetime budget)." }) start!:
    string | null;
  @ApiProperty({ type: String, nullable: true, description: "The period's end; null without a period." }) end!: string | null;
}

export class AlertView {
  @ApiProperty({ format: 'uuid', description: 'The event id, the same on every delivery attempt.' }) id!: string;
  @ApiProperty({ example: 'budget.alert' }) type!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty({ example: 80, description: 'Per cent of the budget reached.' }) threshold!: number;
  @ApiProperty({ type: AlertPeriodView }) period!: AlertPeriodView;
  @ApiProperty({ description: "The period's budget when the alert fired." }) budget!: number;
  @ApiProperty({ description: 'Spent plus reserved in the period when the alert fired.' }) used!: number;
  @ApiProperty() fired_at!: string;
  @ApiProperty({ type: String, nullable: true, description: 'When the webhook took it (2xx); null while undelivered.' }) delivered_at!: string | null;
  @ApiProperty({ description: 'Delivery attempts so far.' }) attempts!: number;
  @ApiProperty({ type: String, nullable: true, description: 'When the next attempt is due; null once delivered.' }) next_attempt_at!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the last failed attempt failed (kept after a later success).' }) last_error!: string | null;
}

export class AlertPage {
  @ApiProperty({ type: [AlertView] }) data!: AlertView[];
  @ApiProperty({ type: String, nullable: true }) next!: string | null;
}

function alertView(alert: StoredAlert): AlertView {
  return {
    ...alertEventOf(alert),
    delivered_at: alert.deliveredAt?.toISOString() ?? null,
    attempts: alert.attempts,
    next_attempt_at: alert.deliveredAt ? null : alert.nextAttemptAt.toISOString(),
    last_error: alert.lastError,
  };
}

/** Fired budget alerts, newest first, `limit` at a time. */
async function alertPage(dataSource: DataSource, ownerId: string | undefined, limit: number, after: string | undefined): Promise<Page<StoredAlert>> {
  const conditions: string[] = [];
  const values: unknown[] = [];
  if (ownerId !== undefined) {
    values.push(ownerId);
    conditions.push(`a.owner_id = $${values.length}`);
  }
  if (after !== undefined) {
    const cursor = parseTimeCursor(after);
    values.push(cursor.at, cursor.id);
    conditions.push(`(a.fired_at, a.id::text) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  values.push(limit + 1);
  const rows = await dataSource.query<StoredAlertRecord[]>(
    `SELECT ${STORED_ALERT_COLUMNS} FROM budget_alert AS a ${conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : ''}
      ORDER BY a.fired_at DESC, a.id::text DESC LIMIT $${values.length}`,
    values,
  );
  const alerts = rows.map(storedAlertOf);
  if (alerts.length <= limit) return { rows: alerts, next: null };
  const page = alerts.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, next: timeCursor(last.firedAt, last.id) };
}

@ApiTags('alerts')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/alerts')
@UseGuards(AdminGuard)
export class AlertsController {
  constructor(private readonly dataSource: DataSource) {}

  @Get()
  @ApiOperation({
    summary: 'Budget alerts fired, newest first, with their delivery',
    description:
      'Each threshold (per cent of the budget) an owner reached, once per budget period, and its delivery to ALERT_WEBHOOK_URL: `delivered_at`, `attempts`, `next_attempt_at`, `last_error`. Without ALERT_WEBHOOK_URL alerts are listed but stay undelivered.',
  })
  @ApiOkResponse({ type: AlertPage })
  async list(@Query(new Validated(AlertQuery, 'query')) query: AlertQuery) {
    const page = await alertPage(this.dataSource, query.owner_id, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map(alertView), next: page.next };
  }
}
