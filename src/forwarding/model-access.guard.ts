import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { isUtf8 } from 'node:buffer';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InterfaceName, ModelConfig } from '../config/gateway-config';
import { GatewayError } from '../common/gateway-error';
import { scanTopLevel, TopLevelField } from '../request-body/json-scan';
import { readValue } from '../request-body/json-splice';
import { BodySpool } from '../request-body/body-spool';
import { FormPart, formBoundary, parseForm, partText } from '../request-body/multipart-form';
import { mayUseModel, Principal } from '../auth/principal';
import { QuotaService } from '../metering/quota.service';
import { Admission, RateLimiter } from '../governance/rate-limiter';
import { ReplicaLimits } from '../governance/replica-limits';
import { CatalogService } from '../catalog/catalog.service';
import { ENTRY_METADATA, EntryDeclaration } from './entry.decorator';
import { isTranslatableEntry, TextProtocol, translationTarget } from '../translation/translation-routes';
import { endUserOf, endUserOfForm, TAGS_HEADER, tagsOf } from './call-labels';

/**
 * Admits a model call: the body is a JSON object without repeated top-level fields and with a
 * string `model` (or, where the route allows, a valid multipart form with one `model` field, or
 * the model named in the path); the model exists (404), the key may use it (403), the model offers
 * the entry's interface (400), a streaming call finds room among the replica's streams (503 over
 * `MAX_STREAMS`; asked before budgets and rate limits, so a refused stream counts against neither),
 * the owner's budget is not used up (402), and no rate limit of the key or its owner is reached
 * (429; an admitted call counts at once). A bad `X-Gateway-Tags` is a 400 too. Runs after
 * ApiKeyGuard; the scan is kept on the request so nothing parses the body again, with the call's
 * tags and end user (call-labels.ts) for its usage record.
 */
@Injectable()
export class ModelAccessGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly catalog: CatalogService,
    private readonly quota: QuotaService,
    private readonly limiter: RateLimiter,
    private readonly replica: ReplicaLimits,
  ) {}

  /** Synchronous when the owner's balance is cached (Nest awaits only what is not a boolean): it runs on every call. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const declaration = this.reflector.get<EntryDeclaration>(ENTRY_METADATA, context.getHandler());
    const spool = request.body instanceof BodySpool ? request.body : undefined;
    const body = spool ? spool.skeleton.bytes : Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const boundary = declaration.forms ? formBoundary(request.headers['content-type']) : undefined;
    const read = boundary === undefined ? readJsonBody(body, declaration, request, spool) : readFormBody(body, boundary, declaration.entry);
    const tags = tagsOf(request.headers[TAGS_HEADER]);
    const model = this.resolve(read.modelId, request);
    const translateTo = this.upstreamProtocol(model, declaration);
    const principal = request.principal!;
    // Counted from here until the response closes, however the call ends (a 402 or 429 below included).
    if (read.stream) this.replica.openStream(request, context.switchToHttp().getResponse<FastifyReply>().raw);
    const admitted = this.quota.admit(principal);
    const enter = (): true => {
      request.call = {
        entry: declaration.entry,
        translateTo,
        model,
        body,
        spool,
        fields: read.fields,
        form: read.form,
        stream: read.stream,
        tags,
        endUser: read.endUser,
      };
      return true;
    };
    if (admitted) return admitted.then(() => this.limited(context, principal, declaration.entry, enter));
    return this.limited(context, principal, declaration.entry, enter);
  }

  /** The rate limits of the key and its owner: 429 over one, else the call counts from now on. */
  private limited(context: ExecutionContext, principal: Principal, entry: InterfaceName, enter: () => true): true | Promise<true> {
    const admission = this.limiter.admit(principal, entry);
    if (admission instanceof Promise) return admission.then((end) => this.counted(context, end, enter));
    return this.counted(context, admission, enter);
  }

  /**
   * A call counts against concurrency limits until its answer is closed, however it ends; a
   * client that left while its admission waited (for a balance, or for other replicas' counts)
   * ends it at once.
   */
  private counted(context: ExecutionContext, end: Admission, enter: () => true): true {
    if (end) {
      const response = context.switchToHttp().getResponse<FastifyReply>().raw;
      if (response.closed) end();
      else response.once('close', end);
    }
    return enter();
  }

  private resolve(modelId: string, request: FastifyRequest): ModelConfig {
    const model = this.catalog.find(modelId);
    if (!model) {
      throw new GatewayError('model_not_found', `The model ${JSON.stringify(modelId)} does not exist; GET /v1/models lists the model ids.`);
    }
    if (!mayUseModel(request.principal!, model.id)) {
      throw new GatewayError('model_not_allowed', `This API key may not use the model ${JSON.stringify(modelId)}.`);
    }
    return model;
  }

  /** Undefined for a native call; the upstream protocol for a translated one; else 400. */
  private upstreamProtocol(model: ModelConfig, { entry, translatable }: EntryDeclaration): TextProtocol | undefined {
    if (model.interfaces.includes(entry)) return undefined;
    const target = translatable && isTranslatableEntry(entry) ? translationTarget(entry, model.interfaces) : undefined;
    if (!target) {
      throw new GatewayError('invalid_request', `The model ${JSON.stringify(model.id)} does not offer the ${entry} interface.`);
    }
    return target;
  }
}

interface ReadBody {
  modelId: string;
  fields: Map<string, TopLevelField>;
  form?: FormPart[];
  stream: boolean;
  endUser: string | null;
}

/**
 * A JSON object without repeated top-level fields, with a string `model` unless the path names it.
 * JSON text is UTF-8 (RFC 8259 section 8.1): other bytes would reach the upstream's parser as
 * something else than what the gateway read (a native check, cheap even on the largest bodies).
 */
function readJsonBody(body: Buffer, declaration: EntryDeclaration, request: FastifyRequest, spool: BodySpool | undefined): ReadBody {
  if (spool?.fault) throw new GatewayError('invalid_request', `Request body is not valid JSON: ${spool.fault.message} at byte ${spool.fault.position}.`);
  const scan = scanTopLevel(body);
  if (!scan.ok) throw new GatewayError('invalid_request', spool ? inBodyOffsets(scan.message, spool) : scan.message);
  if (!(spool ? spool.isUtf8 : isUtf8(body))) throw new GatewayError('invalid_request', 'Request body is not valid JSON: it is not UTF-8 text.');
  const modelId = declaration.modelFromPath
    ? declaration.modelFromPath(request.params as Record<string, string | undefined>)
    : stringField(body, scan.fields.get('model'));
  if (modelId === undefined) {
    throw new GatewayError('invalid_request', 'Request body must be a JSON object with a string "model" field.');
  }
  return { modelId, fields: scan.fields, stream: isTrue(body, scan.fields.get('stream')), endUser: endUserOf(declaration.entry, body, scan.fields) };
}

/** A valid multipart form with exactly one non-empty `model` field. */
function readFormBody(body: Buffer, boundary: string, entry: InterfaceName): ReadBody {
  const form = parseForm(body, boundary);
  if (!form.ok) throw new GatewayError('invalid_request', form.message);
  const models = form.parts.filter((part) => part.name === 'model');
  if (models.length > 1) throw new GatewayError('invalid_request', 'The form repeats the field "model".');
  const modelId = models.length === 1 && models[0].filename === undefined ? partText(body, models[0]) : '';
  if (!modelId) throw new GatewayError('invalid_request', 'The form must have a non-empty "model" field.');
  const stream = form.parts.some((part) => part.name === 'stream' && partText(body, part).trim().toLowerCase() === 'true');
  return { modelId, fields: new Map(), form: form.parts, stream, endUser: endUserOfForm(entry, body, form.parts) };
}

/** A scan message about a skeleton, with its byte offsets turned into the body's. */
function inBodyOffsets(message: string, spool: BodySpool): string {
  return message.replace(/at byte (\d+)/g, (_, position: string) => `at byte ${spool.skeleton.map.bodyOffset(Number(position))}`);
}

function stringField(body: Buffer, field: TopLevelField | undefined): string | undefined {
  if (!field) return undefined;
  const value = readValue(body, field);
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function isTrue(body: Buffer, field: TopLevelField | undefined): boolean {
  return field !== undefined && field.valueEnd - field.valueStart === 4 && readValue(body, field) === true;
}
