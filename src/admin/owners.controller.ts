import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor, AdminGuard } from './admin.guard';
import { SESSION_COOKIE } from './console-sessions';
import { AdminService } from './admin.service';
import { CreateOwnerBody, PageQuery, RenewBody, UpdateOwnerBody } from './admin.dto';
import { Validated } from './admin-validation';
import { OwnerPage, OwnerView, RenewedKeys } from './admin.views';
import { AdminErrors } from './admin-errors';

@ApiTags('owners')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/owners')
@UseGuards(AdminGuard)
export class OwnersController {
  constructor(private readonly admin: AdminService) {}

  @Post()
  @ApiOperation({ summary: 'Create a quota owner', description: '409 when the id exists already.' })
  @ApiCreatedResponse({ type: OwnerView })
  create(@Body(new Validated(CreateOwnerBody, 'body')) body: CreateOwnerBody, @Actor() actor: string) {
    return this.admin.createOwner(body, actor);
  }

  @Get()
  @ApiOperation({ summary: 'List quota owners, by id' })
  @ApiOkResponse({ type: OwnerPage })
  list(@Query(new Validated(PageQuery, 'query')) query: PageQuery) {
    return this.admin.owners(query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Show a quota owner: budget, spent, reserved' })
  @ApiOkResponse({ type: OwnerView })
  show(@Param('id') id: string) {
    return this.admin.owner(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: "Change an owner's budget, budget period, alerts or rate limits",
    description:
      'Give any of budget, budget_period, budget_timezone, alerts and limits. Spent and reserved amounts stay; a new period or time zone counts the current period again from the usage records and open video tasks. Budgets apply on every replica within BALANCE_CACHE_TTL_MS, limits within KEY_CACHE_TTL_MS.',
  })
  @ApiOkResponse({ type: OwnerView })
  update(@Param('id') id: string, @Body(new Validated(UpdateOwnerBody, 'body')) body: UpdateOwnerBody, @Actor() actor: string) {
    return this.admin.updateOwner(id, body, actor);
  }

  @Post(':id/renew-keys')
  @HttpCode(200)
  @ApiOperation({
    summary: "Renew a project's keys",
    description: 'Project keys are renewed by the project: every key of the project gets the new expiry. A member owner gives 400.',
  })
  @ApiOkResponse({ type: RenewedKeys })
  renewKeys(@Param('id') id: string, @Body(new Validated(RenewBody, 'body')) body: RenewBody, @Actor() actor: string) {
    return this.admin.renewProjectKeys(id, body.expires_at, actor);
  }
}
