import { Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { Entry } from '../forwarding/entry.decorator';
import { ModelAccessGuard } from '../forwarding/model-access.guard';
import { NativeCallService } from '../forwarding/native-call.service';
import { GENERATE_CONTENT_ROUTE, generateContentModel, IMAGES_EDITS_ROUTE, IMAGES_GENERATIONS_ROUTE, VENDOR_B_IMAGES_ROUTE } from './image-routes';

/**
 * The three image formats (SPEC.md "Images"). Each image model is served only on the endpoint
 * of its interface; the guards give 400 elsewhere.
 */
@Controller()
@UseGuards(ApiKeyGuard, ModelAccessGuard)
export class ImagesController {
  constructor(private readonly native: NativeCallService) {}

  @Post('v1/images/generations')
  @HttpCode(200)
  @Entry('images_a')
  generations(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, IMAGES_GENERATIONS_ROUTE);
  }

  @Post('v1/images/edits')
  @HttpCode(200)
  @Entry('images_a', { forms: true })
  edits(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, IMAGES_EDITS_ROUTE);
  }

  @Post('vendor-b/api/v3/images/generations')
  @HttpCode(200)
  @Entry('images_b')
  vendorB(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, VENDOR_B_IMAGES_ROUTE);
  }

  /** `/v1beta/models/{model}:generateContent`; the key may come as `x-alt-api-key`. */
  @Post('v1beta/models/:target')
  @HttpCode(200)
  @Entry('images_c', { modelFromPath: generateContentModel })
  generateContent(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, GENERATE_CONTENT_ROUTE);
  }
}
