import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { errorBody } from '../common/error-body';
import { GatewayError } from '../common/gateway-error';

export const CONSOLE_PATH = '/console';

/**
 * The page may load its own script, style sheet and images and talk to its own origin, and
 * nothing else: no inline script or style, no framing, no forms posting elsewhere.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

interface PageFile {
  body: Buffer;
  type: string;
  etag: string;
}

/**
 * Where `npm run build` puts the page: `dist/console`, beside the compiled server; a server run
 * from its TypeScript sources (the tests) finds it in the same place.
 */
export function consoleFolder(): string {
  return __filename.endsWith('.ts') ? join(__dirname, '..', '..', 'dist', 'console') : join(__dirname, '..', '..', 'console');
}

/** The page's files, read once: a handful of small files that change only with a new build. */
function readPage(folder: string): Map<string, PageFile> {
  const files = new Map<string, PageFile>();
  for (const name of readdirSync(folder)) {
    const type = CONTENT_TYPES[extname(name)];
    if (!type) continue;
    const body = readFileSync(join(folder, name));
    files.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return files;
}

function send(reply: FastifyReply, file: PageFile, ifNoneMatch: string | undefined): void {
  reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    // Checked again on every load, so a new build is picked up at once; unchanged files cost a 304.
    .header('cache-control', 'no-cache')
    .header('etag', file.etag);
  if (ifNoneMatch === file.etag) reply.code(304).send();
  else reply.type(file.type).send(file.body);
}

/**
 * The operator console (docs/console.md) at /console/: static files built from `console/` by
 * `npm run build`, served from memory. Only when the admin API is on; the page itself holds no
 * data and signs in through the admin API.
 */
export function serveConsole(app: NestFastifyApplication, folder: string = consoleFolder()): boolean {
  if (!existsSync(join(folder, 'index.html'))) return false;
  const files = readPage(folder);
  const fastify = app.getHttpAdapter().getInstance();
  fastify.get(CONSOLE_PATH, (_request, reply) => {
    void reply.redirect(`${CONSOLE_PATH}/`, 308);
  });
  fastify.get(`${CONSOLE_PATH}/*`, (request, reply) => {
    const name = (request.params as { '*': string })['*'] || 'index.html';
    const file = files.get(name);
    if (file) return send(reply, file, request.headers['if-none-match']);
    void reply
      .code(404)
      .type('application/json')
      .send(errorBody(new GatewayError('not_found', 'No such endpoint.'), 'openai'));
  });
  return true;
}
