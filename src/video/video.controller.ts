import { Controller, Delete, Get, HttpCode, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { Entry } from '../forwarding/entry.decorator';
import { ModelAccessGuard } from '../forwarding/model-access.guard';
import { VideoTaskService } from './video-task.service';
import { VENDOR_B_WIRE, VENDOR_C_WIRE } from './video-wire';

/**
 * Vendor-c video tasks (SPEC.md "Video tasks"). Submit is a model call (key, scope, interface,
 * budget); query and cancel need only a key of the task's quota owner.
 */
@Controller('vendor-c/v2')
@UseGuards(ApiKeyGuard)
export class VendorCVideoController {
  constructor(private readonly tasks: VideoTaskService) {}

  @Post('video_generation')
  @HttpCode(200)
  @UseGuards(ModelAccessGuard)
  @Entry('video_c')
  submit(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.tasks.submit(request, reply, VENDOR_C_WIRE);
  }

  @Get('query/video_generation/:taskId')
  query(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param('taskId') taskId: string): Promise<void> {
    return this.tasks.query(request, reply, VENDOR_C_WIRE, taskId);
  }

  @Delete('video_generation/:taskId')
  cancel(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param('taskId') taskId: string): Promise<void> {
    return this.tasks.cancel(request, reply, VENDOR_C_WIRE, taskId);
  }
}

/** Vendor-b video tasks, drafts included (SPEC.md "Video tasks" rule 9). */
@Controller('vendor-b/api/v3/contents/generations/tasks')
@UseGuards(ApiKeyGuard)
export class VendorBVideoController {
  constructor(private readonly tasks: VideoTaskService) {}

  @Post()
  @HttpCode(200)
  @UseGuards(ModelAccessGuard)
  @Entry('video_b')
  submit(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.tasks.submit(request, reply, VENDOR_B_WIRE);
  }

  @Get(':taskId')
  query(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param('taskId') taskId: string): Promise<void> {
    return this.tasks.query(request, reply, VENDOR_B_WIRE, taskId);
  }

  @Delete(':taskId')
  cancel(@Req() request: FastifyRequest, @Res() reply: FastifyReply, @Param('taskId') taskId: string): Promise<void> {
    return this.tasks.cancel(request, reply, VENDOR_B_WIRE, taskId);
  }
}
