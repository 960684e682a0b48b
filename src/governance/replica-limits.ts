import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../common/gateway-error';
import { sendGatewayError } from '../common/gateway-exception.filter';
import { REPLICA_LIMIT_SETTINGS, ReplicaLimitSettings } from '../config/settings/limits.settings';
import { isProbe } from '../observability/call-facts';
import { lingerAfterRefusal } from '../request-body/lingering-close';
import '../forwarding/request-state';

/** The limits of one replica, as `gateway_replica_limited_total` names them. */
export type ReplicaLimitName = 'max_client_connections' | 'max_streams';

/** Seconds a refused client waits: a connection or a stream of this replica may end any moment. */
const RETRY_SECONDS = 1;

/**
 * This replica's own limits (`MAX_CLIENT_CONNECTIONS`, `MAX_STREAMS`; docs/operations.md "Several
 * replicas"): past them the gateway refuses with 503 `service_unavailable` and `Retry-After: 1`,
 * so that an overloaded replica turns calls away instead of slowing every stream it carries, and
 * a balancer or client tries elsewhere.
 *
 * Client connections are counted per connection (the server's `connection` event, then the
 * socket's `close`), never per request; only with a limit set does a request look up whether its
 * connection came past it (refuseOverLimitConnections). Streams are counted from admission
 * (ModelAccessGuard) until their response closes, which CallTelemetry's `close` listener of every
 * request reports here: one compare and increment at admission, one decrement at the end.
 */
@Injectable()
export class ReplicaLimits {
  /** Client connections open now, those accepted past the limit included until they close. */
  connections = 0;
  /** Streaming calls admitted whose response is not over. */
  streams = 0;
  /** Requests refused over each limit, for /metrics. */
  readonly refusals: Record<ReplicaLimitName, number> = { max_client_connections: 0, max_streams: 0 };
  /** Of `connections`, those accepted past the limit: they do not count against it. */
  private overLimitConnections = 0;
  private readonly overLimit = new WeakSet<Socket>();

  constructor(@Inject(REPLICA_LIMIT_SETTINGS) readonly settings: ReplicaLimitSettings) {}

  /** Counts `server`'s client connections from now on; before it listens. */
  watch(server: Server): void {
    server.on('connection', this.connected);
  }

  /** Whether `socket` was accepted past `MAX_CLIENT_CONNECTIONS` (false for every socket without a limit). */
  isOverLimit(socket: Socket): boolean {
    return this.overLimit.has(socket);
  }

  /** The refusal of a request on a connection over the limit; counted. */
  connectionRefusal(): GatewayError {
    this.refusals.max_client_connections += 1;
    return new GatewayError(
      'service_unavailable',
      `This gateway replica has the most client connections it takes (${this.settings.maxClientConnections}); retry on a new connection.`,
      RETRY_SECONDS,
    );
  }

  /**
   * Admits a streaming call among the replica's streams, or throws 503 when `MAX_STREAMS` are in
   * flight. Its response's close ends it (streamEnded); a response already closed (the client left
   * while the call waited for its key or body) is not counted, as its close has come and gone.
   */
  openStream(request: FastifyRequest, response: ServerResponse): void {
    if (response.closed) return;
    const max = this.settings.maxStreams;
    if (max > 0 && this.streams >= max) {
      this.refusals.max_streams += 1;
      throw new GatewayError('service_unavailable', `This gateway replica has the most streaming calls it takes (${max}); retry shortly.`, RETRY_SECONDS);
    }
    this.streams += 1;
    request.streamOpen = true;
  }

  /** From the `close` of every request's response: ends the stream the request had admitted, if any. */
  streamEnded(request: FastifyRequest): void {
    if (!request.streamOpen) return;
    request.streamOpen = false;
    this.streams -= 1;
  }

  /** A listener made once, so no connection costs a closure; `close` comes once per socket. */
  private readonly connected = (socket: Socket): void => {
    const counted = this.connections - this.overLimitConnections;
    this.connections += 1;
    const max = this.settings.maxClientConnections;
    if (max > 0 && counted >= max) {
      this.overLimitConnections += 1;
      this.overLimit.add(socket);
      socket.on('close', this.overLimitClosed);
    } else {
      socket.on('close', this.closed);
    }
  };

  private readonly closed = (): void => {
    this.connections -= 1;
  };

  private readonly overLimitClosed = (): void => {
    this.connections -= 1;
    this.overLimitConnections -= 1;
  };
}

/**
 * The `onRequest` hook added with `MAX_CLIENT_CONNECTIONS` set, after the gateway's own (so the
 * answer has its request id, log line and metrics): a request on a connection accepted past the
 * limit gets 503 in its path's error shape with `Retry-After: 1` and `Connection: close`, before
 * its body is read and before any guard or route runs; Node then closes the connection. A body
 * on its way is read and dropped first (lingering-close.ts), so the client sees the answer rather
 * than a reset. Probes (`/health/*`, `/metrics`) are answered as ever, with `Connection: close`,
 * so an orchestrator still sees the replica.
 */
export function refuseOverLimitConnections(limits: ReplicaLimits): onRequestHookHandler {
  return (request, reply, done) => {
    if (!limits.isOverLimit(request.raw.socket)) return done();
    void reply.header('connection', 'close');
    if (isProbe(request.url)) return done();
    lingerAfterRefusal(request.raw);
    sendGatewayError(request, reply, limits.connectionRefusal());
  };
}
