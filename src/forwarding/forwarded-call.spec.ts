import type { FastifyReply, FastifyRequest } from 'fastify';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonSkeletonBuilder } from '../request-body/body-skeleton';
import { BodySpool } from '../request-body/body-spool';
import type { AdmittedCall } from './request-state';
import type { ForwardService } from '../upstream/forward.service';
import type { UsageWriter } from '../metering/usage-writer.service';
import type { CallTelemetry } from '../observability/call-telemetry';
import { CallSpec, ForwardedCall } from './forwarded-call';

describe('ForwardedCall with a spooled body', () => {
  const directory = mkdtempSync(join(tmpdir(), 'forwarded-call-spec-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  async function spooledCall(): Promise<{ spool: BodySpool; request: FastifyRequest }> {
    const body = Buffer.from(JSON.stringify({ model: 'm', image: 'A'.repeat(10_000) }));
    const spool = await BodySpool.open(directory);
    await spool.append([body]);
    const builder = new JsonSkeletonBuilder();
    builder.push(body);
    spool.skeleton = builder.finish();
    const call = { body: spool.skeleton.bytes, spool } as unknown as AdmittedCall;
    return { spool, request: { call } as unknown as FastifyRequest };
  }

  function forwardedCall() {
    const open = jest.fn(() => Promise.reject(new Error('not expected upstream')));
    const telemetry = { upstreamStarted: jest.fn(), upstreamEnded: jest.fn() };
    const calls = new ForwardedCall({ open } as unknown as ForwardService, {} as UsageWriter, telemetry as unknown as CallTelemetry);
    return { calls, open };
  }

  const reply = { raw: {} } as FastifyReply;

  it('refuses to send pieces of the skeleton: a route must pass the spool to upstreamBodyOf', async () => {
    const { spool, request } = await spooledCall();
    const { calls, open } = forwardedCall();
    const spec = { body: [spool.skeleton.bytes.subarray(0, 10), spool.skeleton.bytes.subarray(10)] } as unknown as CallSpec;

    await expect(calls.run(request, reply, spec)).rejects.toThrow('as its skeleton');
    expect(open).not.toHaveBeenCalled();
    await spool.release();
  });

  it('sends nothing when the client left and its spooled body was let go of before the call started', async () => {
    const { spool, request } = await spooledCall();
    await spool.release();
    const { calls, open } = forwardedCall();

    await expect(calls.run(request, reply, { body: spool.upstreamBody([spool.skeleton.bytes]) } as unknown as CallSpec)).resolves.toBeUndefined();
    expect(open).not.toHaveBeenCalled();
  });
});

describe('ForwardedCall records', () => {
  it("the call's duration up to when its answer's end was written, not up to its record", async () => {
    const answerEnd = performance.now() - 500;
    const request = {
      id: 'request-1',
      headers: {},
      startedAt: answerEnd - 40,
      call: { model: { id: 'm', prices: {}, priceTiers: [] }, stream: false } as unknown as AdmittedCall,
      principal: { keyId: 'key-1', ownerId: 'owner-1' },
      forwarded: { upstreamStartedAt: answerEnd - 30, responseClosed: false },
    } as unknown as FastifyRequest;
    const response = Object.assign(new EventEmitter(), { writableFinished: true, endedAt: answerEnd });
    const reply = { raw: response, hijack: jest.fn() } as unknown as FastifyReply;
    const opened = { statusCode: 200, headers: {}, line: { id: 'line-a' }, headersMs: 10, done: jest.fn() };
    const enqueue = jest.fn();
    const telemetry = { upstreamStarted: jest.fn(), upstreamEnded: jest.fn() };
    const calls = new ForwardedCall(
      { open: () => Promise.resolve(opened) } as unknown as ForwardService,
      { enqueue } as unknown as UsageWriter,
      telemetry as unknown as CallTelemetry,
    );
    const spec = {
      recordAs: 'chat_completions',
      body: Buffer.from('{}'),
      answer: () => Promise.resolve({ status: 200, line: 'line-a', errorCode: null, figures: undefined, cost: 0n, upstreamHeadersMs: 10 }),
      figures: () => undefined,
    } as unknown as CallSpec;

    await calls.run(request, reply, spec);

    expect(enqueue).toHaveBeenCalledTimes(1);
    expect(enqueue.mock.calls[0][0]).toMatchObject({ requestId: 'request-1', status: 200, durationMs: 40 });
  });
});
