import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Line } from './line-registry';
import type { CallAbort } from './call-abort';

/** A request body: one buffer, or consecutive pieces of one (a large body is not joined). */
export type UpstreamBody = Buffer | readonly Buffer[];

/** Pieces smaller than this together are joined: one write beats an iterable for small bodies. */
const JOIN_BELOW_BYTES = 1 << 20;

/** The body to send for these pieces: joined when small, left in pieces when large. */
export function upstreamBodyOf(parts: readonly Buffer[]): UpstreamBody {
  let length = 0;
  for (const part of parts) length += part.length;
  return length < JOIN_BELOW_BYTES ? Buffer.concat(parts as Buffer[], length) : parts;
}

export interface UpstreamRequest {
  method: 'POST' | 'GET' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: UpstreamBody;
  signal: CallAbort;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** The upstream HTTP boundary: one request on one line's keep-alive pool. */
@Injectable()
export class UpstreamClient {
  async send(line: Line, request: UpstreamRequest): Promise<UpstreamResponse> {
    const pieces = Array.isArray(request.body) ? (request.body as readonly Buffer[]) : undefined;
    const response = await line.pool.request({
      method: request.method,
      path: request.path,
      // undici cannot know the length of pieces; the upstream gets it as for a single buffer.
      headers: pieces ? { ...request.headers, 'content-length': String(pieces.reduce((sum, piece) => sum + piece.length, 0)) } : request.headers,
      // undici writes any iterable of chunks (its type declarations list single values only).
      body: (pieces ?? request.body) as Buffer | undefined,
      signal: request.signal,
      headersTimeout: line.config.timeoutMs,
      bodyTimeout: line.config.timeoutMs,
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  }
}
