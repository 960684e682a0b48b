import { PassThrough } from 'node:stream';
import type { OpenedResponse } from '../upstream/forward.service';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonSkeletonBuilder } from '../common/body-skeleton';
import { BodySpool } from '../common/body-spool';
import type { AdmittedCall } from '../common/request-state';
import type { ForwardService } from '../upstream/forward.service';
import type { UsageWriter } from '../metering/usage-writer.service';
import type { CallTelemetry } from '../observability/call-telemetry';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { CallSpec, dropRest, ForwardedCall, pipeChunks, readWhole } from './forwarded-call';

describe(readWhole.name, () => {
  const opened = (body: PassThrough, headers: Record<string, string>) => ({ body, headers }) as unknown as OpenedResponse;

  it('has an answer with a Content-Length at its last byte, before the body ends', async () => {
    const body = new PassThrough();
    const whole = readWhole(opened(body, { 'content-length': '11' }));
    body.write('{"id":');
    body.write('"a1"}');

    expect((await whole).toString()).toBe('{"id":"a1"}');
    expect(body.readableEnded).toBe(false);
  });

  it('reads an answer without a Content-Length to its end', async () => {
    const body = new PassThrough();
    const whole = readWhole(opened(body, {}));
    body.write('{"id":');
    body.end('"a1"}');

    expect((await whole).toString()).toBe('{"id":"a1"}');
  });
});

describe(pipeChunks.name, () => {
  /** A client socket that takes `room` chunks, then reports full until `drain`. */
  function client(room = Infinity) {
    const response = Object.assign(new EventEmitter(), { destroyed: false, taken: [] as string[] });
    const pass = (chunk: Buffer) => {
      response.taken.push(chunk.toString());
      return response.taken.length < room;
    };
    return { response, pass, asResponse: response as unknown as ServerResponse };
  }

  it('hands every chunk over in order and resolves at the end', async () => {
    const body = new PassThrough();
    const { response, pass, asResponse } = client();
    const piped = pipeChunks(body, asResponse, pass);
    body.write('a');
    body.write('b');
    body.end('c');

    await piped;
    expect(response.taken).toEqual(['a', 'b', 'c']);
  });

  it('stops reading while the client is full and goes on when it drains', async () => {
    const body = new PassThrough();
    const { response, pass, asResponse } = client(1);
    const piped = pipeChunks(body, asResponse, pass);
    body.write('a');
    body.write('b');
    body.end('c');
    await new Promise((resolve) => setImmediate(resolve));

    expect(response.taken).toEqual(['a']);
    expect(body.isPaused()).toBe(true);
    response.emit('drain');
    await new Promise((resolve) => setImmediate(resolve));
    expect(response.taken).toEqual(['a', 'b']);
    response.emit('drain');
    response.emit('drain');
    await piped;
    expect(response.taken).toEqual(['a', 'b', 'c']);
  });

  it('rejects when the client goes while reading waits for it, and lets the upstream body go', async () => {
    const body = new PassThrough();
    const { response, pass, asResponse } = client(1);
    const piped = pipeChunks(body, asResponse, pass);
    body.write('a');
    await new Promise((resolve) => setImmediate(resolve));
    response.emit('close');

    await expect(piped).rejects.toThrow('client closed');
    expect(body.destroyed).toBe(true);
  });

  it("rejects with the body's error, and when it closes before its end", async () => {
    const broken = new PassThrough();
    const first = pipeChunks(broken, client().asResponse, client().pass);
    broken.destroy(new Error('socket hang up'));
    await expect(first).rejects.toThrow('socket hang up');

    const cut = new PassThrough();
    const second = pipeChunks(cut, client().asResponse, client().pass);
    cut.destroy();
    await expect(second).rejects.toThrow('closed before its end');
  });

  it('settles at once for a body already ended or destroyed', async () => {
    const ended = new PassThrough();
    ended.end();
    ended.resume();
    await new Promise((resolve) => ended.once('end', resolve));
    await expect(pipeChunks(ended, client().asResponse, client().pass)).resolves.toBeUndefined();

    const destroyed = new PassThrough();
    destroyed.on('error', () => undefined);
    destroyed.destroy(new Error('reset'));
    await new Promise((resolve) => destroyed.once('close', resolve));
    await expect(pipeChunks(destroyed, client().asResponse, client().pass)).rejects.toThrow('reset');
  });

  it('rejects with what the chunk handler throws and stops the body, instead of throwing inside its emit', async () => {
    const body = new PassThrough();
    const piped = pipeChunks(body, client().asResponse, () => {
      throw new Error('meter broke');
    });
    body.write('a');

    await expect(piped).rejects.toThrow('meter broke');
    expect(body.destroyed).toBe(true);
  });
});

describe(dropRest.name, () => {
  it('reads what is left to the end, so the connection can serve the next call', async () => {
    const body = new PassThrough();
    body.write('event: ping\n\n');
    const done = dropRest(body);
    body.end('data: trailing\n\n');

    await done;

    expect(body.readableEnded).toBe(true);
    expect(body.destroyed).toBe(true);
    expect(body.errored).toBeNull();
  });

  it('gives up on a body that goes on past a mebibyte', async () => {
    const body = new PassThrough();
    const done = dropRest(body);
    for (let index = 0; index < 20; index++) body.write(Buffer.alloc(64 * 1024));

    await done;

    expect(body.destroyed).toBe(true);
    expect(body.readableEnded).toBe(false);
  });

  it('gives up on a body that does not end within five seconds', async () => {
    jest.useFakeTimers();
    try {
      const body = new PassThrough();
      const done = dropRest(body);
      body.write('data: still here\n\n');
      jest.advanceTimersByTime(5_000);
      jest.useRealTimers();

      await done;

      expect(body.destroyed).toBe(true);
      expect(body.readableEnded).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  it('resolves at once for a body that already ended or was destroyed', async () => {
    const destroyed = new PassThrough();
    destroyed.destroy();
    const ended = new PassThrough({ autoDestroy: false });
    ended.resume();
    ended.end();
    await new Promise((resolve) => ended.once('end', resolve));

    await expect(dropRest(destroyed)).resolves.toBeUndefined();
    await expect(dropRest(ended)).resolves.toBeUndefined();
    expect(ended.listenerCount('data')).toBe(0);
  });
});

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
