import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import { GatewayError } from '../common/gateway-error';
import { readValue, scanTopLevel, TopLevelField } from '../common/json-scan';
import { mayUseModel } from '../auth/principal';
import { QuotaService } from '../metering/quota.service';
import { CatalogService } from './catalog.service';
import { ENTRY_METADATA } from './entry.decorator';

/**
 * Admits a JSON model call: the body is a JSON object without repeated top-level fields and
 * with a string `model`; the model exists (404), the key may use it (403), the model offers
 * the entry's interface (400), and the owner's budget is not used up (402). Runs after
 * ApiKeyGuard; the scan is kept on the request so nothing parses the body again.
 */
@Injectable()
export class ModelAccessGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly catalog: CatalogService,
    private readonly quota: QuotaService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const entry = this.reflector.get<InterfaceName>(ENTRY_METADATA, context.getHandler());
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const scan = scanTopLevel(body);
    if (!scan.ok) throw new GatewayError('invalid_request', scan.message);
    const modelId = stringField(body, scan.fields.get('model'));
    if (modelId === undefined) {
      throw new GatewayError('invalid_request', 'Request body must be a JSON object with a string "model" field.');
    }
    const model = this.resolve(modelId, request, entry);
    await this.quota.admit(request.principal!.ownerId);
    request.call = {
      entry,
      model,
      body,
      fields: scan.fields,
      stream: isTrue(body, scan.fields.get('stream')),
    };
    return true;
  }

  private resolve(modelId: string, request: FastifyRequest, entry: InterfaceName): ModelConfig {
    const model = this.catalog.find(modelId);
    if (!model) {
      throw new GatewayError('model_not_found', `The model ${JSON.stringify(modelId)} does not exist; GET /v1/models lists the model ids.`);
    }
    if (!mayUseModel(request.principal!, model.id)) {
      throw new GatewayError('model_not_allowed', `This API key may not use the model ${JSON.stringify(modelId)}.`);
    }
    if (!model.interfaces.includes(entry)) {
      throw new GatewayError('invalid_request', `The model ${JSON.stringify(modelId)} does not offer the ${entry} interface.`);
    }
    return model;
  }
}

function stringField(body: Buffer, field: TopLevelField | undefined): string | undefined {
  if (!field) return undefined;
  const value = readValue(body, field);
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function isTrue(body: Buffer, field: TopLevelField | undefined): boolean {
  return field !== undefined && field.valueEnd - field.valueStart === 4 && readValue(body, field) === true;
}
