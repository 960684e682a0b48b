import { Controller, Get, Param, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminGuard } from './admin.guard';
import { SESSION_COOKIE } from './console-sessions';
import { AdminService } from './admin.service';
import { DailyQuery, MinutesQuery, SpendAuditQuery, UsageListQuery } from './admin.dto';
import { Validated } from './admin-validation';
import { DailyDifferenceView, DailyTotals, SPEND_DIFFERENCE_VIEWS, SpendAuditView, UsagePage, UsageRecordView } from './admin.views';
import { AdminErrors } from './admin-errors';
import { MinuteTotals } from './operations.views';

@ApiTags('usage')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/usage')
@UseGuards(AdminGuard)
export class UsageController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOperation({ summary: 'Usage records matching every given filter, newest first' })
  @ApiOkResponse({ type: UsagePage })
  list(@Query(new Validated(UsageListQuery, 'query')) query: UsageListQuery) {
    return this.admin.usageRecords(query);
  }

  @Get('daily')
  @ApiOperation({
    summary: 'Totals per UTC day and model (optionally per owner)',
    description: 'Read from the daily roll-up table, kept by the database on every insert; retention leaves it intact.',
  })
  @ApiOkResponse({ type: DailyTotals })
  daily(@Query(new Validated(DailyQuery, 'query')) query: DailyQuery) {
    return this.admin.dailyTotals(query);
  }

  @Get('minutes')
  @ApiOperation({
    summary: 'Calls, failed calls and cost per minute over the last hours',
    description: 'Counted from the usage records (records still queued on a replica arrive within USAGE_FLUSH_INTERVAL_MS).',
  })
  @ApiOkResponse({ type: MinuteTotals })
  minutes(@Query(new Validated(MinutesQuery, 'query')) query: MinutesQuery) {
    return this.admin.minuteTotals(query);
  }

  // Before ':requestId', which would take `verify` for a request id.
  @Get('verify')
  @ApiOperation({
    summary: 'Spend audit: every stored cost worked out again from the prices it was billed at, and the totals against the records',
    description:
      "Recomputes each usage record's cost from its figures, its price sheet and its price basis; compares each owner's lifetime spent amount with the sum of its daily totals, and the daily totals with the records still stored (days retention has not reached). `differences` is empty when all adds up. Reads every record of the filter: on a large table, give `from` and `to` or `owner`.",
  })
  @ApiExtraModels(...SPEND_DIFFERENCE_VIEWS, DailyDifferenceView)
  @ApiOkResponse({ type: SpendAuditView })
  verify(@Query(new Validated(SpendAuditQuery, 'query')) query: SpendAuditQuery) {
    return this.admin.verifySpend(query);
  }

  @Get(':requestId')
  @ApiOperation({ summary: 'The usage record of a call, by its request id (X-Request-Id)' })
  @ApiOkResponse({ type: UsageRecordView })
  record(@Param('requestId') requestId: string) {
    return this.admin.usageRecord(requestId);
  }
}
