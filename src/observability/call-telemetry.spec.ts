import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import pino from 'pino';
import type { RecordedCall } from '../forwarding/request-state';
import type { CallFacts } from './call-facts';
import { CallTelemetry, type CallTracer } from './call-telemetry';
import type { GatewayMetrics } from './gateway-metrics';
import { ReplicaLimits } from '../governance/replica-limits';

/** A raw response: emits `close`, knows whether it finished. */
class FakeResponse extends EventEmitter {
  statusCode = 200;
  writableFinished = false;
  headWrittenAt = 0;

  finish(status: number): void {
    this.statusCode = status;
    this.writableFinished = true;
    this.emit('close');
  }

  /** The client went away before the response was complete. */
  abort(): void {
    this.emit('close');
  }
}

interface Fixture {
  telemetry: CallTelemetry;
  replica: ReplicaLimits;
  reported: CallFacts[];
  /** How often the request-in-flight count went up. */
  started: { count: number };
  lines: Array<Record<string, unknown>>;
  request: FastifyRequest;
  reply: FastifyReply;
  response: FakeResponse;
}

function fixture(route = '/v1/chat/completions'): Fixture {
  const reported: CallFacts[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const started = { count: 0 };
  const metrics = {
    callStarted: () => (started.count += 1),
    callEnded: (facts: CallFacts) => reported.push(facts),
  } as unknown as GatewayMetrics;
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const response = new FakeResponse();
  const request = {
    id: 'request-1',
    method: 'POST',
    headers: {},
    url: route ?? '/no-such-path',
    routeOptions: { url: route },
    startedAt: performance.now(),
  } as unknown as FastifyRequest;
  const reply = { raw: response } as unknown as FastifyReply;
  const replica = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 1 });
  return { telemetry: new CallTelemetry(metrics, log, replica), replica, reported, started, lines, request, reply, response };
}

const RECORD: RecordedCall = {
  interface: 'chat_completions',
  line: 'line-a',
  translatedTo: null,
  status: 200,
  errorCode: null,
  usage: { input_tokens: 5, output_tokens: 7 },
  costNano: 12_000n,
  upstreamHeadersMs: 3,
};

describe(CallTelemetry.name, () => {
  it('reports a request that never went upstream when its response closes, once', () => {
    const { telemetry, request, reply, response, reported, lines } = fixture();
    telemetry.requestStarted(request, reply);
    request.errorCode = 'invalid_api_key';

    response.finish(401);
    response.emit('close');

    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ status: 401, errorCode: 'invalid_api_key', upstreamMs: null });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'call', request_id: 'request-1', status: 401 });
  });

  it('waits for a forwarded call to end when the response closes first, then reports its record', () => {
    const { telemetry, request, reply, response, reported } = fixture();
    telemetry.requestStarted(request, reply);
    telemetry.upstreamStarted(request);

    response.abort();
    expect(reported).toHaveLength(0);

    request.forwarded!.record = { ...RECORD, status: 499, errorCode: 'client_closed' };
    telemetry.upstreamEnded(request, reply);

    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ status: 499, errorCode: 'client_closed', line: 'line-a', costNano: 12_000n });
    expect(reported[0]!.upstreamMs).toEqual(expect.any(Number));
  });

  it('reports a forwarded call that ended before its response closed when the response closes', () => {
    const { telemetry, request, reply, response, reported } = fixture();
    telemetry.requestStarted(request, reply);
    telemetry.upstreamStarted(request);
    request.forwarded!.record = RECORD;
    telemetry.upstreamEnded(request, reply);
    expect(reported).toHaveLength(0);

    response.finish(200);

    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ status: 200, entry: 'chat_completions', usage: RECORD.usage });
  });

  it('reports a call that ended without trying a line (every line busy) as a request without upstream time', () => {
    const { telemetry, request, reply, response, reported } = fixture();
    telemetry.requestStarted(request, reply);
    telemetry.upstreamStarted(request);
    telemetry.upstreamEnded(request, reply);
    request.errorCode = 'rate_limit_exceeded';

    response.finish(429);

    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ status: 429, errorCode: 'rate_limit_exceeded', upstreamMs: null, line: null });
  });

  it('counts a request in flight from its start, and probes not at all', () => {
    const call = fixture();
    call.telemetry.requestStarted(call.request, call.reply);
    const probe = fixture('/health/live');
    probe.telemetry.requestStarted(probe.request, probe.reply);
    probe.response.finish(200);

    expect(call.started.count).toBe(1);
    expect(probe.started.count).toBe(0);
    expect(probe.reported).toEqual([]);
    expect(probe.lines).toEqual([]);
  });

  it("ends a streaming call's count among the replica's streams when its response closes, before its upstream exchange has ended", () => {
    const { telemetry, replica, request, reply, response } = fixture();
    telemetry.requestStarted(request, reply);
    replica.openStream(request, response as unknown as ServerResponse);
    telemetry.upstreamStarted(request);
    expect(replica.streams).toBe(1);

    response.abort();
    expect([replica.streams, request.streamOpen]).toEqual([0, false]);
    // A second close (none comes, but a report that waits for the upstream must not end it again).
    telemetry.upstreamEnded(request, reply);
    response.emit('close');
    expect(replica.streams).toBe(0);
    // The room is free again: the next stream is admitted.
    expect(() => replica.openStream({} as FastifyRequest, { closed: false } as ServerResponse)).not.toThrow();
  });

  it('never throws from a close listener: a failing report is logged', () => {
    const { telemetry, request, reply, response, lines } = fixture();
    telemetry.requestStarted(request, reply);
    (request as { routeOptions: unknown }).routeOptions = undefined;

    expect(() => response.finish(200)).not.toThrow();
    expect(lines).toEqual([expect.objectContaining({ level: 50, msg: 'call not reported', request_id: 'request-1' })]);
  });

  describe('with traces on', () => {
    const TRACE = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: '00f067aa0ba902b7', parent: undefined, sampled: true };

    /** A tracer that notes what it is asked. */
    function tracer(record: (request: FastifyRequest, facts: CallFacts) => void = () => undefined): CallTracer & { begun: number; recorded: CallFacts[] } {
      const fake = {
        begun: 0,
        recorded: [] as CallFacts[],
        begin: () => {
          fake.begun += 1;
          return TRACE;
        },
        record: (request: FastifyRequest, facts: CallFacts) => {
          record(request, facts);
          fake.recorded.push(facts);
        },
        shutdown: async () => undefined,
      };
      return fake;
    }

    it('gives a call its trace ids at arrival, writes them in its line, notes when its record was made, and records its spans once', () => {
      const { telemetry, request, reply, response, lines } = fixture();
      const traces = tracer();
      telemetry.traceWith(traces);
      telemetry.requestStarted(request, reply);
      expect(request.trace).toBe(TRACE);

      telemetry.upstreamStarted(request);
      request.forwarded!.record = RECORD;
      telemetry.upstreamEnded(request, reply);
      expect(request.forwarded!.settledAt).toEqual(expect.any(Number));
      response.finish(200);

      expect(traces.recorded).toHaveLength(1);
      expect(traces.recorded[0]).toMatchObject({ requestId: 'request-1', status: 200, line: 'line-a' });
      expect(lines[0]).toMatchObject({ msg: 'call', trace_id: TRACE.traceId, span_id: TRACE.spanId });
    });

    it('traces no probe', () => {
      const probe = fixture('/health/live');
      const traces = tracer();
      probe.telemetry.traceWith(traces);
      probe.telemetry.requestStarted(probe.request, probe.reply);
      probe.response.finish(200);

      expect([traces.begun, traces.recorded.length, probe.request.trace]).toEqual([0, 0, undefined]);
    });

    it('keeps the line and the metrics of a call whose spans could not be made, and says so', () => {
      const { telemetry, request, reply, response, lines, reported } = fixture();
      telemetry.traceWith(
        tracer(() => {
          throw new Error('no spans today');
        }),
      );
      telemetry.requestStarted(request, reply);

      expect(() => response.finish(200)).not.toThrow();
      expect(reported).toHaveLength(1);
      expect(lines.map((line) => line.msg)).toEqual(['call', 'call not traced']);
    });
  });

  it('without traces leaves the request and its line as they were', () => {
    const { telemetry, request, reply, response, lines } = fixture();
    telemetry.requestStarted(request, reply);
    telemetry.upstreamStarted(request);
    request.forwarded!.record = RECORD;
    telemetry.upstreamEnded(request, reply);
    response.finish(200);

    expect('trace' in request).toBe(false);
    expect('settledAt' in request.forwarded!).toBe(false);
    expect(Object.keys(lines[0]!)).not.toContain('trace_id');
  });
});
