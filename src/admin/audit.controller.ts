import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditPage } from './catalog.views';
import { AdminGuard } from './admin.guard';
import { SESSION_COOKIE } from './console-sessions';
import { AdminErrors } from './admin-errors';
import { AdminService } from './admin.service';
import { AuditQuery } from './admin.dto';
import { Validated } from './admin-validation';

@ApiTags('audit')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/audit')
@UseGuards(AdminGuard)
export class AuditController {
  constructor(private readonly admin: AdminService) {}

  @Get()
  @ApiOkResponse({ type: AuditPage })
  @ApiOperation({
    summary: 'List admin changes, newest first',
    description:
      "Every change of owners, budgets, keys, lines and models, and every reload: when (`at`), who (`actor`: the admin token's name, `command line (user)`, `SIGHUP`), what (`action`, `item_kind`, `item_id`), and the item before and after as the admin API shows it (vendor keys masked, gateway keys never).",
  })
  list(@Query(new Validated(AuditQuery, 'query')) query: AuditQuery) {
    return this.admin.audits(query);
  }
}
