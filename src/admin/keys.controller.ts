import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor, AdminGuard } from './admin.guard';
import { SESSION_COOKIE } from './console-sessions';
import { AdminService } from './admin.service';
import { CreateKeyBody, KeyListQuery, RenewBody, UpdateKeyBody } from './admin.dto';
import { Validated } from './admin-validation';
import { CreatedKeyView, KeyPage, KeyView, ListedKeyView } from './admin.views';
import { AdminErrors } from './admin-errors';

const TTL_NOTE = 'Takes effect at once on the replica that answers and within KEY_CACHE_TTL_MS on the others.';

@ApiTags('keys')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/keys')
@UseGuards(AdminGuard)
export class KeysController {
  constructor(private readonly admin: AdminService) {}

  @Post()
  @ApiOperation({
    summary: 'Create a key for an owner',
    description: 'The answer carries the key itself, once; only its SHA-256 and a short prefix are stored. Usable at once.',
  })
  @ApiCreatedResponse({ type: CreatedKeyView })
  create(@Body(new Validated(CreateKeyBody, 'body')) body: CreateKeyBody, @Actor() actor: string) {
    return this.admin.createKey(body, actor);
  }

  @Get()
  @ApiOperation({ summary: 'List keys (prefix only), of one owner or all, in creation order' })
  @ApiOkResponse({ type: KeyPage })
  list(@Query(new Validated(KeyListQuery, 'query')) query: KeyListQuery) {
    return this.admin.keys(query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Show a key' })
  @ApiOkResponse({ type: ListedKeyView })
  show(@Param('id') id: string) {
    return this.admin.key(id);
  }

  @Patch(':id')
  @ApiOperation({ summary: "Change a key's own rate limits or budget", description: `Give limits, budget or both. ${TTL_NOTE}` })
  @ApiOkResponse({ type: KeyView })
  update(@Param('id') id: string, @Body(new Validated(UpdateKeyBody, 'body')) body: UpdateKeyBody, @Actor() actor: string) {
    return this.admin.updateKey(id, body, actor);
  }

  @Post(':id/disable')
  @HttpCode(200)
  @ApiOperation({ summary: 'Disable a key', description: TTL_NOTE })
  @ApiOkResponse({ type: KeyView })
  disable(@Param('id') id: string, @Actor() actor: string) {
    return this.admin.setEnabled(id, false, actor);
  }

  @Post(':id/enable')
  @HttpCode(200)
  @ApiOperation({ summary: 'Enable a key', description: TTL_NOTE })
  @ApiOkResponse({ type: KeyView })
  enable(@Param('id') id: string, @Actor() actor: string) {
    return this.admin.setEnabled(id, true, actor);
  }

  @Post(':id/renew')
  @HttpCode(200)
  @ApiOperation({
    summary: "Give a member's key a new expiry",
    description: `Project keys are renewed by the project (POST /admin/owners/{id}/renew-keys): a project key gives 400. ${TTL_NOTE}`,
  })
  @ApiOkResponse({ type: KeyView })
  renew(@Param('id') id: string, @Body(new Validated(RenewBody, 'body')) body: RenewBody, @Actor() actor: string) {
    return this.admin.renewKey(id, body.expires_at, actor);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a key', description: `Its usage records stay. A key of the configuration file comes back at the next start. ${TTL_NOTE}` })
  @ApiOkResponse({ type: KeyView })
  remove(@Param('id') id: string, @Actor() actor: string) {
    return this.admin.deleteKey(id, actor);
  }
}
