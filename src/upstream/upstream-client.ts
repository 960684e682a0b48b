import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Line } from './line-registry';
import type { CallAbort } from './call-abort';
import { BodySpool, SpooledUpstreamBody } from '../common/body-spool';

/** A request body: one buffer, consecutive pieces of one (a large body is not joined), or pieces of a spooled body. */
export type UpstreamBody = Buffer | readonly Buffer[] | SpooledUpstreamBody;

/** Pieces smaller than this together are joined: one write beats an iterable for small bodies. */
const JOIN_BELOW_BYTES = 1 << 20;

/**
 * The body to send for these pieces: joined when small, left in pieces when large. Pieces cut
 * from a spooled body's skeleton (`spool` given) stand for the file's bytes.
 */
export function upstreamBodyOf(parts: readonly Buffer[], spool?: BodySpool): UpstreamBody {
  if (spool) return spool.upstreamBody(parts);
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
    const body = request.body;
    const spooled = body instanceof SpooledUpstreamBody ? body : undefined;
    const pieces = Array.isArray(body) ? (body as readonly Buffer[]) : undefined;
    // undici cannot know the length of pieces; the upstream gets it as for a single buffer.
    const length = spooled ? spooled.length : pieces ? pieces.reduce((sum, piece) => sum + piece.length, 0) : undefined;
    const response = await line.pool.request({
      method: request.method,
      path: request.path,
      headers: length === undefined ? request.headers : { ...request.headers, 'content-length': String(length) },
      // undici writes any (async) iterable of chunks (its type declarations list single values only).
      body: (spooled ? spooled.chunks() : (pieces ?? body)) as Buffer | undefined,
      signal: request.signal,
      headersTimeout: line.config.timeoutMs,
      bodyTimeout: line.config.timeoutMs,
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  }
}
