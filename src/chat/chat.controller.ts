import { Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { Entry } from '../forwarding/entry.decorator';
import { ModelAccessGuard } from '../forwarding/model-access.guard';
import { NativeCallService } from '../forwarding/native-call.service';
import { TranslatedCallService } from './translated-call.service';
import { CHAT_COMPLETIONS_ROUTE, COUNT_TOKENS_ROUTE, EMBEDDINGS_ROUTE, MESSAGES_ROUTE, RESPONSES_ROUTE } from '../forwarding/native-route';

/** The text entry points. Guards authenticate and admit; a service forwards natively or translated. */
@Controller('v1')
@UseGuards(ApiKeyGuard, ModelAccessGuard)
export class ChatController {
  constructor(
    private readonly native: NativeCallService,
    private readonly translated: TranslatedCallService,
  ) {}

  @Post('chat/completions')
  @HttpCode(200)
  @Entry('chat_completions')
  chatCompletions(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, CHAT_COMPLETIONS_ROUTE);
  }

  @Post('responses')
  @HttpCode(200)
  @Entry('responses', { translatable: true })
  responses(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (request.call!.translateTo) return this.translated.forward(request, reply, 'responses');
    return this.native.forward(request, reply, RESPONSES_ROUTE);
  }

  @Post('messages')
  @HttpCode(200)
  @Entry('messages', { translatable: true })
  messages(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (request.call!.translateTo) return this.translated.forward(request, reply, 'messages');
    return this.native.forward(request, reply, MESSAGES_ROUTE);
  }

  @Post('messages/count_tokens')
  @HttpCode(200)
  @Entry('messages')
  countTokens(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, COUNT_TOKENS_ROUTE);
  }

  @Post('embeddings')
  @HttpCode(200)
  @Entry('embeddings')
  embeddings(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return this.native.forward(request, reply, EMBEDDINGS_ROUTE);
  }
}
