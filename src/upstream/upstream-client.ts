import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Line } from './line-registry';
import type { CallAbort } from './call-abort';

export interface UpstreamRequest {
  method: 'POST' | 'GET' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
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
    const response = await line.pool.request({
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
      headersTimeout: line.config.timeoutMs,
      bodyTimeout: line.config.timeoutMs,
    });
    return { statusCode: response.statusCode, headers: response.headers, body: response.body };
  }
}
