import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { ModelFields, ModelItem, ModelList, ModelView, ReloadView, UpstreamItem, UpstreamList, UpstreamReplacement, UpstreamView } from './catalog.views';
import { Actor, AdminGuard } from './admin.guard';
import { SESSION_COOKIE } from './console-sessions';
import { AdminErrors } from './admin-errors';
import { JsonObjectBody } from './admin-validation';
import { CatalogAdminService, deleteVersionOf } from './catalog-admin.service';

const LIVE = 'Takes effect on the replica that answers before it answers, and on every other replica within CATALOG_CHECK_MS (at once on PostgreSQL).';
const VERSIONED = 'The body carries the `version` of the item as read; another one gives 409.';

@ApiTags('catalog')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/upstreams')
@UseGuards(AdminGuard)
export class UpstreamsController {
  constructor(private readonly catalog: CatalogAdminService) {}

  @Post()
  @ApiOperation({
    summary: 'Add an upstream line',
    description: `The JSON form of a configuration-file \`upstreams\` item. \`api_key\`: a \${VAR} reference or a literal (stored encrypted; needs GATEWAY_SECRET_KEY); never shown again. ${LIVE}`,
  })
  @ApiBody({ type: UpstreamItem })
  @ApiCreatedResponse({ type: UpstreamView })
  create(@Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeUpstream('create', body, actor);
  }

  @Get()
  @ApiOkResponse({ type: UpstreamList })
  @ApiOperation({ summary: 'List the upstream lines, file ones (`source: config`) and added ones, with whether a key is set and its last four characters' })
  list() {
    return this.catalog.list('upstream');
  }

  @Get(':id')
  @ApiOkResponse({ type: UpstreamView })
  @ApiOperation({ summary: 'Show an upstream line' })
  show(@Param('id') id: string) {
    return this.catalog.show('upstream', id);
  }

  @Put(':id')
  @ApiOperation({ summary: 'Replace an upstream line', description: `The whole item; without \`api_key\` the stored key stays. ${VERSIONED} ${LIVE}` })
  @ApiBody({ type: UpstreamReplacement })
  @ApiOkResponse({ type: UpstreamView })
  replace(@Param('id') id: string, @Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeUpstream('replace', body, actor, id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change fields of an upstream line', description: `The given fields replace the stored ones. ${VERSIONED} ${LIVE}` })
  @ApiBody({ type: UpstreamReplacement })
  @ApiOkResponse({ type: UpstreamView })
  patch(@Param('id') id: string, @Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeUpstream('patch', body, actor, id);
  }

  @Delete(':id')
  @ApiOkResponse({ type: UpstreamView, description: 'The deleted item.' })
  @ApiOperation({ summary: 'Delete an upstream line', description: `409 while a model names it. Calls on it finish; new calls no longer use it. ${LIVE}` })
  @ApiQuery({ name: 'version', required: false, description: 'When given, the version the line must be at.' })
  remove(@Param('id') id: string, @Actor() actor: string, @Query('version') version?: string) {
    return this.catalog.remove('upstream', id, deleteVersionOf(version), actor);
  }
}

@ApiTags('catalog')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/models')
@UseGuards(AdminGuard)
export class CatalogModelsController {
  constructor(private readonly catalog: CatalogAdminService) {}

  @Post()
  @ApiOperation({ summary: 'Add a model', description: `The JSON form of a configuration-file \`models\` item, price tiers included. ${LIVE}` })
  @ApiBody({ type: ModelItem })
  @ApiCreatedResponse({ type: ModelView })
  create(@Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeModel('create', body, actor);
  }

  @Get()
  @ApiOkResponse({ type: ModelList })
  @ApiOperation({ summary: 'List the models, in catalog order, prices as exact decimal strings' })
  list() {
    return this.catalog.list('model');
  }

  @Get(':id')
  @ApiOkResponse({ type: ModelView })
  @ApiOperation({ summary: 'Show a model' })
  show(@Param('id') id: string) {
    return this.catalog.show('model', id);
  }

  @Put(':id')
  @ApiOperation({ summary: 'Replace a model', description: `Calls admitted before keep the prices they started with. ${VERSIONED} ${LIVE}` })
  @ApiBody({ type: ModelFields })
  @ApiOkResponse({ type: ModelView })
  replace(@Param('id') id: string, @Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeModel('replace', body, actor, id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change fields of a model', description: `The given fields replace the stored ones (\`prices\` as a whole). ${VERSIONED} ${LIVE}` })
  @ApiBody({ type: ModelFields })
  @ApiOkResponse({ type: ModelView })
  patch(@Param('id') id: string, @Body(new JsonObjectBody()) body: Record<string, unknown>, @Actor() actor: string) {
    return this.catalog.writeModel('patch', body, actor, id);
  }

  @Delete(':id')
  @ApiOkResponse({ type: ModelView, description: 'The deleted item.' })
  @ApiOperation({ summary: 'Delete a model', description: `Calls in flight finish; keys naming it no longer reach it. ${LIVE}` })
  @ApiQuery({ name: 'version', required: false, description: 'When given, the version the model must be at.' })
  remove(@Param('id') id: string, @Actor() actor: string, @Query('version') version?: string) {
    return this.catalog.remove('model', id, deleteVersionOf(version), actor);
  }
}

@ApiTags('catalog')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/reload')
@UseGuards(AdminGuard)
export class ReloadController {
  constructor(private readonly catalog: CatalogAdminService) {}

  @Post()
  @HttpCode(200)
  @ApiOkResponse({ type: ReloadView })
  @ApiOperation({
    summary: 'Read the configuration file again and apply it',
    description: `As SIGHUP does: owners, keys, lines and models of GATEWAY_CONFIG, applied as at start-up. A file with a problem changes nothing: 400 naming each problem by its YAML path. ${LIVE}`,
  })
  reload(@Actor() actor: string) {
    return this.catalog.reload(actor);
  }
}
