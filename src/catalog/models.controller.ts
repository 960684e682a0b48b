import { Controller, Get, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiKeyGuard } from '../auth/api-key.guard';
import { CatalogService } from './catalog.service';
import type { ModelConfig } from '../config/gateway-config';

/** A model in the chat-completions list shape, with the fields SPEC.md names. */
function modelRecord(model: ModelConfig, created: number) {
  return {
    id: model.id,
    object: 'model',
    created,
    owned_by: 'gateway',
    interfaces: model.interfaces,
    capabilities: { image_input: model.capabilities.imageInput },
    max_tokens: model.maxTokens ?? null,
  };
}

@Controller('v1/models')
@UseGuards(ApiKeyGuard)
export class ModelsController {
  constructor(private readonly catalog: CatalogService) {}

  @Get()
  list(@Req() request: FastifyRequest) {
    const data = this.catalog.usableBy(request.principal!).map((model) => modelRecord(model, this.catalog.loadedAt));
    return { object: 'list', data };
  }
}
