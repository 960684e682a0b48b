import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../common/gateway-error';
import { CallAbort } from '../upstream/call-abort';
import { defaultAuthStyle, upstreamRequestHeaders } from '../upstream/header-policy';
import { LineRegistry } from '../upstream/line-registry';
import { UpstreamClient } from '../upstream/upstream-client';
import { classifyFailure, isCredentialStatus } from '../upstream/upstream-failure';
import type { VideoTask } from './video-task.entity';
import { wireOf } from './video-wire';

/** A whole upstream answer to a query or cancel. */
export interface TaskAnswer {
  statusCode: number;
  contentType: string;
  body: Buffer;
}

/** Bodies of task answers are small JSON; more than this is not a task answer. */
const MAX_ANSWER_BYTES = 4 << 20;

/**
 * Queries and cancels of one task, on the line that accepted it (a task exists on that line
 * only, so there is no failover). Failures come back as the gateway's errors: no answer is 502
 * or 504, and the upstream refusing the gateway's credentials is 502 (SPEC.md Authentication 8).
 */
@Injectable()
export class VideoUpstream {
  constructor(
    private readonly lines: LineRegistry,
    private readonly client: UpstreamClient,
  ) {}

  query(task: VideoTask, incomingHeaders: IncomingHttpHeaders = {}): Promise<TaskAnswer> {
    return this.send(task, 'GET', wireOf(task.interface).queryPath(task.upstreamTaskId!), incomingHeaders);
  }

  cancel(task: VideoTask, incomingHeaders: IncomingHttpHeaders = {}): Promise<TaskAnswer> {
    return this.send(task, 'DELETE', wireOf(task.interface).cancelPath(task.upstreamTaskId!), incomingHeaders);
  }

  private async send(task: VideoTask, method: 'GET' | 'DELETE', path: string, incomingHeaders: IncomingHttpHeaders): Promise<TaskAnswer> {
    const line = this.lines.find(task.line ?? '');
    if (!line) throw new GatewayError('service_unavailable', `The upstream line of this task (${task.line}) is no longer configured.`);
    let answer: TaskAnswer;
    try {
      const response = await this.client.send(line, {
        method,
        path,
        headers: upstreamRequestHeaders(incomingHeaders, task.interface, {
          style: line.config.auth ?? defaultAuthStyle(task.interface),
          apiKey: line.config.apiKey,
        }),
        signal: new CallAbort(),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body.chunks()) {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) {
          response.body.destroy();
          throw new GatewayError('upstream_failed', 'The upstream answered the task request with an oversized body.');
        }
        chunks.push(chunk);
      }
      const type = response.headers['content-type'];
      answer = { statusCode: response.statusCode, contentType: typeof type === 'string' ? type : 'application/json', body: Buffer.concat(chunks) };
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      if (classifyFailure(error, false) === 'timeout') {
        throw new GatewayError('upstream_timeout', `The upstream did not answer within ${line.config.timeoutMs} ms.`);
      }
      throw new GatewayError('upstream_failed', 'The upstream could not be reached.');
    }
    if (isCredentialStatus(answer.statusCode)) {
      throw new GatewayError('upstream_failed', `The upstream refused the gateway's credentials (HTTP ${answer.statusCode}).`);
    }
    return answer;
  }
}
