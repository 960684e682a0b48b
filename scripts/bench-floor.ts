/**
 * The stack's own floor, a target of `npm run bench -- --floor`: the bare proxy's work (read the
 * body, parse it, rewrite `model`, forward it with an undici pool, write the answer back as it
 * arrives) done the way the gateway is built: NestJS on @nestjs/platform-fastify (the gateway's
 * versions), one controller, two guards as on the gateway's data-plane routes, the body taken
 * as raw bytes by a content-type parser, `@Req`/`@Res` and a hijacked reply.
 *
 * Nothing of the gateway's own work: no key check, no model or quota admission, no metering,
 * no log line, no translation. Between the bare proxy and this target is what the frameworks
 * cost per call; between this target and the gateway, what the gateway's own work costs.
 *
 * Usage: UPSTREAM_URL=http://127.0.0.1:PORT PORT=N node dist/scripts/bench-floor.js
 */
import 'reflect-metadata';
import { CanActivate, Controller, ExecutionContext, Injectable, Module, Post, Req, Res, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';

// The upstream pool and the handler below are bench/bare-proxy.mjs's, on purpose: both targets do the same work.
const upstream = new Pool(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:18080', {
  connections: 256,
  keepAliveTimeout: 60_000,
  headersTimeout: 0,
  bodyTimeout: 0,
});

/** Hop-by-hop headers of the upstream answer, not passed on (the bare proxy's list). */
const SKIP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

/** Stands where the gateway's key guard stands: reads a header, lets the call through. */
@Injectable()
class HeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<FastifyRequest>().headers['content-type'] !== undefined;
  }
}

/** Stands where the gateway's model guard stands: looks at the body, lets the call through. */
@Injectable()
class BodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return Buffer.isBuffer(context.switchToHttp().getRequest<FastifyRequest>().body);
  }
}

function reject(reply: FastifyReply, status: number, message: string): void {
  const response = reply.raw;
  if (response.headersSent) return void response.destroy();
  const text = JSON.stringify({ error: { type: 'floor_proxy_error', message } });
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/** The bare proxy's handler: model rewritten, the upstream answer written into the response as it arrives. */
function forward(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.hijack();
  let body: unknown;
  try {
    body = JSON.parse((request.body as Buffer).toString('utf8'));
  } catch {
    return Promise.resolve(reject(reply, 400, 'body is not JSON'));
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return Promise.resolve(reject(reply, 400, 'body is not a JSON object'));
  const call = body as Record<string, unknown>;
  call.model = `floor/${String(call.model)}`;
  const text = JSON.stringify(call);
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
  const response = reply.raw;
  return upstream
    .stream({ path: request.url, method: 'POST', headers, body: text }, ({ statusCode, headers: answer }) => {
      for (const name in answer) if (!SKIP.has(name)) response.setHeader(name, (answer as IncomingHttpHeaders)[name]!);
      response.writeHead(statusCode);
      return response;
    })
    .then(
      () => undefined,
      (error: { code?: string; message: string }) => reject(reply, 502, `upstream: ${error.code ?? error.message}`),
    );
}

@Controller('v1')
@UseGuards(HeaderGuard, BodyGuard)
class FloorController {
  @Post('chat/completions')
  chatCompletions(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return forward(request, reply);
  }

  @Post('messages')
  messages(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    return forward(request, reply);
  }
}

@Module({ controllers: [FloorController], providers: [HeaderGuard, BodyGuard] })
class FloorModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(FloorModule, new FastifyAdapter({ logger: false }), {
    bodyParser: false,
    logger: ['error', 'warn'],
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  await app.listen(Number(process.env.PORT ?? 8080), '127.0.0.1');
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

void main();
