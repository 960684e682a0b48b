import { EventEmitter } from 'node:events';
import type { FastifyRequest } from 'fastify';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../common/gateway-error';
import { ReplicaLimits } from './replica-limits';

/** A request as the guard and the close listener see it. */
function request(): FastifyRequest {
  return { streamOpen: false } as FastifyRequest;
}

const OPEN = { closed: false } as ServerResponse;

/** A server whose connections the test makes and closes. */
function watched(maxClientConnections: number): { limits: ReplicaLimits; connect(): Socket & EventEmitter } {
  const server = new EventEmitter();
  const limits = new ReplicaLimits({ maxClientConnections, maxStreams: 0 });
  limits.watch(server as unknown as Server);
  return {
    limits,
    connect: () => {
      const socket = new EventEmitter() as Socket & EventEmitter;
      server.emit('connection', socket);
      return socket;
    },
  };
}

describe(`${ReplicaLimits.name} streams`, () => {
  it('admits every stream without a limit, and counts them', () => {
    const limits = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 0 });
    const calls = Array.from({ length: 1_000 }, request);
    for (const call of calls) limits.openStream(call, OPEN);

    expect(limits.streams).toBe(1_000);
    expect(calls.every((call) => call.streamOpen)).toBe(true);
    expect(limits.refusals.max_streams).toBe(0);
  });

  it('refuses the stream past MAX_STREAMS with 503 service_unavailable and Retry-After 1, counted, and without counting it', () => {
    const limits = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 2 });
    limits.openStream(request(), OPEN);
    limits.openStream(request(), OPEN);
    const refused = request();

    let error: unknown;
    try {
      limits.openStream(refused, OPEN);
    } catch (thrown) {
      error = thrown;
    }

    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'service_unavailable', retryAfterSeconds: 1, message: expect.stringContaining('(2)') });
    expect([limits.streams, refused.streamOpen, limits.refusals.max_streams]).toEqual([2, false, 1]);
  });

  it('admits a stream again once one has ended, and ends each stream once however often its end is reported', () => {
    const limits = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 2 });
    const first = request();
    limits.openStream(first, OPEN);
    limits.openStream(request(), OPEN);

    limits.streamEnded(first);
    limits.streamEnded(first);
    expect([limits.streams, first.streamOpen]).toEqual([1, false]);

    limits.openStream(request(), OPEN);
    expect(() => limits.openStream(request(), OPEN)).toThrow(GatewayError);
    expect(limits.streams).toBe(2);
  });

  it('does not count a request that admitted no stream (a call refused before, a call that does not stream)', () => {
    const limits = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 2 });
    limits.openStream(request(), OPEN);

    limits.streamEnded(request());
    expect(limits.streams).toBe(1);
  });

  it('does not count a stream whose response has closed already: its close, which ends streams, has come and gone', () => {
    const limits = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 1 });
    const gone = request();
    limits.openStream(gone, { closed: true } as ServerResponse);

    expect([limits.streams, gone.streamOpen]).toEqual([0, false]);
    expect(() => limits.openStream(request(), OPEN)).not.toThrow();
  });
});

describe(`${ReplicaLimits.name} client connections`, () => {
  it('counts open connections without a limit and marks none', () => {
    const { limits, connect } = watched(0);
    const sockets = Array.from({ length: 5 }, connect);
    sockets[0].emit('close');

    expect(limits.connections).toBe(4);
    expect(sockets.some((socket) => limits.isOverLimit(socket))).toBe(false);
  });

  it('marks a connection accepted past MAX_CLIENT_CONNECTIONS, counts it while open, and accepts again once one has closed', () => {
    const { limits, connect } = watched(2);
    const [first, second, third] = [connect(), connect(), connect()];

    expect([first, second, third].map((socket) => limits.isOverLimit(socket))).toEqual([false, false, true]);
    expect(limits.connections).toBe(3);

    third.emit('close');
    expect(limits.connections).toBe(2);
    expect(limits.isOverLimit(connect())).toBe(true);

    first.emit('close');
    const fourth = connect();
    expect(limits.isOverLimit(fourth)).toBe(false);
    expect(limits.connections).toBe(3);
  });

  it('does not count connections over the limit against it: they are closed after their first request', () => {
    const { limits, connect } = watched(2);
    const [first] = [connect(), connect()];
    const refused = [connect(), connect(), connect()];
    expect(refused.every((socket) => limits.isOverLimit(socket))).toBe(true);

    first.emit('close');

    expect(limits.isOverLimit(connect())).toBe(false);
    expect(limits.connections).toBe(5);
  });

  it('counts a refusal of a request on a connection over the limit, with Retry-After 1', () => {
    const { limits } = watched(2);

    expect(limits.connectionRefusal()).toMatchObject({ code: 'service_unavailable', retryAfterSeconds: 1, message: expect.stringContaining('(2)') });
    expect(limits.refusals).toEqual({ max_client_connections: 1, max_streams: 0 });
  });
});
