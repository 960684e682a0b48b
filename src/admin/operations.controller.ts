import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { LineRegistry } from '../upstream/line-registry';
import { AdminGuard } from './admin.guard';
import { AdminErrors } from './admin-errors';
import { VideoTaskQuery } from './admin.dto';
import { Validated } from './admin-validation';
import { SESSION_COOKIE } from './console-sessions';
import { LineStates, lineStateView, VideoTaskPage, videoTaskView } from './operations.views';
import { VideoTaskReads } from './video-task-reads';

const DEFAULT_PAGE = 100;

@ApiTags('lines')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/lines')
@UseGuards(AdminGuard)
export class LinesController {
  constructor(
    private readonly lines: LineRegistry,
    private readonly clock: Clock,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Every line with its calls in flight and whether it is cooling',
    description: 'The live state of the replica that answers (each replica has its own connections and cooling), by line id.',
  })
  @ApiOkResponse({ type: LineStates })
  list() {
    const now = this.clock.now();
    const lines = this.lines.all().sort((a, b) => a.id.localeCompare(b.id));
    return { data: lines.map((line) => lineStateView(line, now)) };
  }
}

@ApiTags('video tasks')
@ApiBearerAuth()
@ApiCookieAuth(SESSION_COOKIE)
@AdminErrors()
@Controller('admin/video-tasks')
@UseGuards(AdminGuard)
export class VideoTasksController {
  private readonly reads: VideoTaskReads;

  constructor(dataSource: DataSource) {
    this.reads = new VideoTaskReads(dataSource);
  }

  @Get()
  @ApiOperation({ summary: 'Video tasks, newest first: open ones hold a reservation, settled ones were billed or released' })
  @ApiOkResponse({ type: VideoTaskPage })
  async list(@Query(new Validated(VideoTaskQuery, 'query')) query: VideoTaskQuery) {
    const page = await this.reads.tasks({ state: query.state, ownerId: query.owner }, query.limit ?? DEFAULT_PAGE, query.after);
    return { data: page.rows.map(videoTaskView), next: page.next };
  }
}
