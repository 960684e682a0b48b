import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { maxHeaderSize, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { AppModule } from './app.module';
import type { FastifyRequest } from 'fastify';
import type { GatewayOptions, ServerSettings } from './config/gateway-options';
import { answerFrameworkError, GatewayExceptionFilter } from './common/gateway-exception.filter';
import './forwarding/request-state';
import { BodyDone, readBody, refuseBody, SpoolPolicy } from './request-body/body-reader';
import { contentTypeRefusal } from './request-body/content-type-rule';
import { accessSync, constants } from 'node:fs';
import { BodySpool } from './request-body/body-spool';
import { answerClientError, answerServerRefusals, missingHostRefusal } from './common/client-errors';
import type { DestinationStream } from 'pino';
import { createGatewayLog } from './observability/call-log';
import { CallTelemetry } from './observability/call-telemetry';
import { traceCalls } from './observability/tracing';
import { tracingSettingsFrom, type TracingSettings } from './config/settings/tracing.settings';
import { nestLoggerOf } from './observability/nest-logger';
import { carryRequestId, TimedServerResponse } from './common/timed-response';
import { serveAdminDocs } from './admin/admin-docs';
import { serveConsole } from './console/console-page';
import { Logger } from '@nestjs/common';
import { refuseOverLimitConnections, ReplicaLimits } from './governance/replica-limits';

/** SPEC.md: request bodies up to 32 MiB on every endpoint; larger gives 413. */
export const BODY_LIMIT_BYTES = 32 * 1024 * 1024;

export interface AppCreateOptions {
  /** Nest's own messages; default: JSON lines of the gateway's log (`LOG_LEVEL`). */
  logger?: LoggerService | LogLevel[] | false;
  /** Where the JSON log goes (call lines, and Nest's messages by default); default: standard output. */
  logDestination?: DestinationStream;
  /** OpenTelemetry traces; default: from the process's `OTEL_*` variables (off without an OTLP endpoint); null: off. */
  tracing?: TracingSettings | null;
}

/**
 * Node's timeouts for receiving a request. Node enforces `requestTimeout` only when the headers
 * timeout (60 s by default) is not longer, and checks both only every `connectionsCheckingInterval`
 * (30 s by default), so both follow the request timeout.
 */
function requestTimeouts(requestTimeoutMs: number): { requestTimeout?: number; headersTimeout?: number; connectionsCheckingInterval?: number } {
  if (requestTimeoutMs <= 0) return {};
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(60_000, requestTimeoutMs),
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4))),
  };
}

/**
 * Builds the gateway application: Fastify with one raw-bytes body parser (the guards scan
 * the bytes once; nothing parses JSON into objects on the way in), a request id on every
 * response, and the gateway's error shapes for errors Fastify raises itself.
 */
export async function createGatewayApp(options: GatewayOptions, create: AppCreateOptions = {}): Promise<NestFastifyApplication> {
  const spooling = spoolPolicyOf(options.server.bodySpool);
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // Fastify turns Node's limit off; a client stalling mid-body would hold its buffer for ever.
    requestTimeout: options.server.requestTimeoutMs,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // 408, 431 and 400 from Node's parser in the gateway's error shape, with a request id.
    clientErrorHandler: answerClientError,
    // request.ip: the client named by X-Forwarded-For when the socket's peer is a trusted proxy.
    trustProxy: options.server.trustedProxies.length > 0 ? options.server.trustedProxies : false,
    // No parameter limit of the router's own (a long task id is an unknown task, 404, not a 414):
    // a parameter is part of the request line, which Node's header limit bounds (431).
    routerOptions: { maxParamLength: maxHeaderSize },
    // Bad percent-encoding in a path: the path's error shape with a request id.
    frameworkErrors: answerFrameworkError,
    logger: false,
    // Notes when each response head is written: the time to first byte of every call.
    // Host checked in onRequest instead of Node's empty 400 (missingHostRefusal).
    http: { ServerResponse: TimedServerResponse, requireHostHeader: false, ...requestTimeouts(options.server.requestTimeoutMs) },
  });
  const log = createGatewayLog(options.logLevel, create.logDestination);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(options, log), adapter, {
    bodyParser: false,
    logger: create.logger,
    bufferLogs: create.logger === undefined,
    abortOnError: false,
  });
  if (create.logger === undefined) app.useLogger(nestLoggerOf(log));
  const telemetry = app.get(CallTelemetry);
  const tracing = create.tracing === undefined ? tracingSettingsFrom(process.env) : create.tracing;
  if (tracing) await traceCalls(app, tracing, log);
  const fastify = app.getHttpAdapter().getInstance();
  fastify.removeAllContentTypeParsers();
  const parseBody = (request: FastifyRequest, payload: IncomingMessage, done: BodyDone) => {
    // Checked before a byte is read: a body of a type the route does not take is refused (400).
    const refusal = contentTypeRefusal(request);
    if (refusal) refuseBody(payload, done, refusal);
    else readBody(payload, BODY_LIMIT_BYTES, done, spooling);
  };
  fastify.addContentTypeParser('*', parseBody);
  // The same parser under the types calls carry: Fastify caches a parser it finds by type, but
  // looks for the catch-all anew on every request, parsing the Content-Type header each time.
  fastify.addContentTypeParser(['application/json', 'multipart/form-data'], parseBody);
  fastify.decorateRequest('startedAt', 0);
  fastify.decorateRequest('streamOpen', false);
  fastify.addHook('onRequest', (request, reply, done) => {
    request.startedAt = performance.now();
    // On the raw response, so it survives replies that bypass Fastify (streams) too. The
    // messages SDK reads its request id from `request-id` (`message._request_id`).
    carryRequestId(reply.raw, request.id, request.url.startsWith('/v1/messages'));
    telemetry.requestStarted(request, reply);
    // A body that may be spooled: its file is let go of when the response is over.
    if (spooling && mayBeSpooled(request.headers, spooling)) reply.raw.once('close', () => releaseSpool(request.body));
    done(missingHostRefusal(request.raw));
  });
  // Client connections are counted per connection (for the gauge too); only with MAX_CLIENT_CONNECTIONS
  // set does a request ask whether its connection came past the limit: no work per request without it.
  const replica = app.get(ReplicaLimits);
  replica.watch(app.getHttpServer());
  if (options.replicaLimits.maxClientConnections > 0) fastify.addHook('onRequest', refuseOverLimitConnections(replica));
  app.useGlobalFilters(new GatewayExceptionFilter());
  answerServerRefusals(app.getHttpServer());
  if (options.adminToken || options.adminTokens?.length) {
    serveAdminDocs(app);
    if (!serveConsole(app)) new Logger('Console').warn('The console is not built (npm run build makes dist/console): /console answers 404.');
  }
  return app;
}

/** Undefined when spooling is off; a folder the gateway cannot write to stops it at start-up. */
function spoolPolicyOf(settings: ServerSettings['bodySpool']): SpoolPolicy | undefined {
  if (settings.aboveBytes <= 0) return undefined;
  try {
    accessSync(settings.directory, constants.W_OK);
  } catch (error) {
    throw new Error(`BODY_SPOOL_DIR: the gateway cannot write large request bodies to ${settings.directory} (${(error as Error).message})`, { cause: error });
  }
  return settings;
}

function mayBeSpooled(headers: IncomingHttpHeaders, spooling: SpoolPolicy): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length']) > spooling.aboveBytes;
}

function releaseSpool(body: unknown): void {
  if (body instanceof BodySpool) void body.release();
}
