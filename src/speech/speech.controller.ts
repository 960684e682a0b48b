import { Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { Entry } from '../forwarding/entry.decorator';
import { ModelAccessGuard } from '../forwarding/model-access.guard';
import { NativeCallService } from '../forwarding/native-call.service';
import { NativeRoute, replaceModel } from '../forwarding/native-route';
import { SpeechMeter } from '../metering/speech-meter';

/** Vendor-c text to speech: JSON or a stream of audio events, forwarded natively. */
export const SPEECH_ROUTE: NativeRoute = {
  name: 'speech_c',
  upstreamPath: '/v1/t2a_v2',
  upstreamBody: (call) => replaceModel(call),
  meter: () => new SpeechMeter(),
};

@Controller('vendor-c/v1')
@UseGuards(ApiKeyGuard, ModelAccessGuard)
export class SpeechController {
  constructor(private readonly native: NativeCallService) {}

  @Post('t2a_v2')
  @HttpCode(200)
  @Entry('speech_c')
  speech(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, SPEECH_ROUTE);
  }
}
