import { Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import type { UsageFigures } from '../metering/usage-figures';
import { UsageWriter } from '../metering/usage-writer.service';
import { AlertDelivery } from '../governance/alert-delivery';
import { RateLimiter } from '../governance/rate-limiter';
import { ReplicaLimits } from '../governance/replica-limits';
import { ATTEMPT_OUTCOMES, AttemptOutcome, Line, LineRegistry } from '../upstream/line-registry';
import { isFinalStatus } from '../video/video-task.entity';
import type { Settlement } from '../video/video-task.entity';
import { buildInfoOf } from './build-info';
import { CallFacts, UNKNOWN } from './call-facts';
import { LightCounter, LightHistogram } from './light-metrics';
import { USAGE_UNIT_NAMES, USAGE_UNITS, UsageUnit } from './usage-units';

/** Upstream times run from milliseconds (an error answer) to minutes (an image or a long stream). */
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** The gateway's own time is counted in fractions of a millisecond. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** A scrape does not wait longer than this for the video task count (the database may be away). */
const VIDEO_QUERY_TIMEOUT_MS = 2_000;

const OPEN_VIDEO_TASKS_SQL = 'SELECT status, count(*)::int AS count FROM video_task WHERE settled_at IS NULL GROUP BY status';

const NANO_PER_UNIT = 1e9;

/** What each unit's usage counter says it counts. */
const USAGE_HELP: Record<UsageUnit, string> = {
  tokens:
    'Tokens billed (as in the usage records), by model and figure (input_tokens, output_tokens, cached_input_tokens, …). Figures overlap: cached and cache-write input tokens are part of input_tokens, the 5m and 1h cache writes part of cache_write_input_tokens, reasoning_tokens part of output_tokens.',
  images: 'Images billed (as in the usage records), by model and figure (output_images, input_images, input_image_count).',
  seconds: 'Seconds of video billed (as in the usage records), by model and figure (output_seconds, input_seconds); video tasks count when they settle.',
  characters: 'Characters of text billed (as in the usage records), by model and figure (input_characters: speech).',
};

/**
 * The gateway's Prometheus metrics, on a registry of this application (not prom-client's
 * global one, so several gateways in one process keep their own). Call metrics are fed once
 * per request by CallTelemetry; line, usage-writer and video-task state is read at scrape time.
 */
@Injectable()
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly logger = new Logger('Metrics');

  private readonly requests = new LightCounter(
    'gateway_requests_total',
    'Requests answered, by entry point (interface of the call, else the route template, else "none"), model ("none" when unknown), HTTP status and whether the call was translated.',
    ['entry', 'model', 'status', 'translated'],
    this.registry,
  );
  private readonly duration = new LightHistogram(
    'gateway_request_duration_seconds',
    "Time from the request's arrival to the end of its response (for a forwarded call: to the end of the upstream exchange, if later), by entry point.",
    ['entry'],
    UPSTREAM_BUCKETS,
    this.registry,
  );
  private readonly upstreamHeaders = new LightHistogram(
    'gateway_upstream_headers_seconds',
    'Time from sending a call to its line until the upstream response headers arrived, by the line that answered.',
    ['line'],
    UPSTREAM_BUCKETS,
    this.registry,
  );
  private readonly upstreamDuration = new LightHistogram(
    'gateway_upstream_duration_seconds',
    'Time from sending a call to its first line until the end of the upstream answer (its last byte relayed to the client) or of the last failed attempt, by the last line tried.',
    ['line'],
    UPSTREAM_BUCKETS,
    this.registry,
  );
  private readonly firstByte = new LightHistogram(
    'gateway_time_to_first_byte_seconds',
    "Time from the request's arrival until the response head (status and headers, the first bytes the client receives) was written, by entry point.",
    ['entry'],
    UPSTREAM_BUCKETS,
    this.registry,
  );
  private readonly overhead = new LightHistogram(
    'gateway_overhead_seconds',
    'Time a forwarded call spent in the gateway itself: its total duration minus its upstream time (gateway_upstream_duration_seconds), i.e. from arrival until the first upstream attempt was sent, plus from the end of the upstream exchange until the response was finished. Work done while the upstream answer streams (metering, translation) is upstream time. By entry point.',
    ['entry'],
    OVERHEAD_BUCKETS,
    this.registry,
  );
  /** The usage counter of each figure, one counter per unit; a figure without a unit (none today) is not counted. */
  private readonly usageByFigure = usageCountersOf(this.registry);
  private readonly cost = new LightCounter(
    'gateway_cost_total',
    "Cost billed, in currency units (the usage records' nano-units / 1e9), by model; video tasks count when they settle.",
    ['model'],
    this.registry,
  );
  /** Read by the gauge when scraped: a plain field costs the request path less than the gauge's own inc/dec. */
  private inFlightCount = 0;
  private readonly videoSettled = new Counter({
    name: 'gateway_video_tasks_settled_total',
    help: 'Video tasks settled by this replica, by settlement (usage, estimated, not_billed, reserved) and final status ("unfinished" for a task charged its reservation while still running).',
    labelNames: ['settlement', 'status'] as const,
    registers: [this.registry],
  });

  constructor(
    private readonly lines: LineRegistry,
    private readonly writer: UsageWriter,
    private readonly dataSource: DataSource,
    private readonly limiter: RateLimiter,
    private readonly alerts: AlertDelivery,
    private readonly replica: ReplicaLimits,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.registerBuildInfo();
    this.registerScrapedState();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The metrics in Prometheus text format; never fails for want of the database. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  callStarted(): void {
    this.inFlightCount += 1;
  }

  /** One request is over: what it was, how it ended, how long it took, what it used. */
  callEnded(facts: CallFacts): void {
    this.inFlightCount -= 1;
    const model = facts.model ?? UNKNOWN;
    this.requests.of(facts.entry, model, String(facts.status), facts.translatedTo === null ? 'false' : 'true').value += 1;
    this.duration.of(facts.entry).observe(facts.durationMs / 1000);
    if (facts.firstByteMs !== null) this.firstByte.of(facts.entry).observe(facts.firstByteMs / 1000);
    if (facts.upstreamMs !== null) {
      const line = facts.line ?? UNKNOWN;
      this.upstreamDuration.of(line).observe(facts.upstreamMs / 1000);
      this.overhead.of(facts.entry).observe(Math.max(0, facts.durationMs - facts.upstreamMs) / 1000);
      if (facts.upstreamHeadersMs !== null) this.upstreamHeaders.of(line).observe(facts.upstreamHeadersMs / 1000);
    }
    this.countUsage(model, facts.usage, facts.costNano);
  }

  /** A video task settled here: its outcome, and its usage and cost (its record is written now, not at submit). */
  videoTaskSettled(model: string, settlement: Settlement, status: string, figures: UsageFigures | undefined, costNano: bigint): void {
    this.videoSettled.inc({ settlement, status: isFinalStatus(status) ? status : 'unfinished' });
    this.countUsage(model, figures, costNano);
  }

  private countUsage(model: string, figures: UsageFigures | undefined, costNano: bigint): void {
    if (figures) {
      for (const figure in figures) {
        const value = figures[figure];
        if (value === undefined || value <= 0) continue;
        const counter = this.usageByFigure.get(figure);
        if (counter !== undefined) counter.of(model, figure).value += value;
      }
    }
    if (costNano > 0n) this.cost.of(model).value += Number(costNano) / NANO_PER_UNIT;
  }

  /** Set once: a dashboard shows which versions run by the replicas' series, and alerts when they differ. */
  private registerBuildInfo(): void {
    new Gauge({
      name: 'gateway_build_info',
      help: 'Always 1; its labels say what runs: the gateway version (package.json), the Node.js version, and the commit when GATEWAY_COMMIT names it.',
      labelNames: ['version', 'node_version', 'commit'] as const,
      registers: [this.registry],
    }).set(buildInfoOf(process.env), 1);
  }

  /** Metrics read when scraped: requests in flight, each line's state, the usage writer, the replica's limits, the open video tasks. */
  private registerScrapedState(): void {
    const inFlight = () => this.inFlightCount;
    new Gauge({
      name: 'gateway_in_flight_requests',
      help: 'Requests arrived and not yet over (probes and scrapes aside); a forwarded call counts until its upstream exchange ended.',
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
    const lines = this.lines;
    new Gauge({
      name: 'gateway_line_cooling',
      help: '1 while the upstream line is cooling down (skipped after a refused connection or a timeout), else 0.',
      labelNames: ['line'] as const,
      registers: [this.registry],
      collect() {
        for (const line of lines.all()) this.set({ line: line.id }, lines.isCooling(line) ? 1 : 0);
      },
    });
    const byLineAndOutcome = (name: string, help: string, counts: (line: Line) => Record<AttemptOutcome, number>) =>
      new Counter({
        name,
        help,
        labelNames: ['line', 'outcome'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const line of lines.all()) {
            const byOutcome = counts(line);
            for (const outcome of ATTEMPT_OUTCOMES) if (byOutcome[outcome] > 0) this.inc({ line: line.id, outcome }, byOutcome[outcome]);
          }
        },
      });
    byLineAndOutcome(
      'gateway_line_attempts_total',
      'Calls sent to the upstream line, by how the attempt ended: answered (an answer passed on), 429, 5xx, credentials (the vendor refused the line key), refused, timeout, reset, aborted (the client left).',
      (line) => line.attempts,
    );
    byLineAndOutcome(
      'gateway_line_failovers_total',
      "Attempts on the line after which the call went on: to another line of its model, or to a retry, by the attempt's outcome.",
      (line) => line.failovers,
    );
    new Gauge({
      name: 'gateway_line_rate_limited',
      help: "1 while the line's vendor asked for no calls (a 429 with Retry-After), so it is tried after its model's other lines, else 0.",
      labelNames: ['line'] as const,
      registers: [this.registry],
      collect() {
        for (const line of lines.all()) this.set({ line: line.id }, lines.isRateLimited(line) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'gateway_line_in_flight',
      help: 'Requests in flight on the upstream line (its max_concurrency applies to this).',
      labelNames: ['line'] as const,
      registers: [this.registry],
      collect() {
        for (const line of lines.all()) this.set({ line: line.id }, line.inFlight);
      },
    });
    const writer = this.writer;
    new Gauge({
      name: 'gateway_usage_writer_queue_depth',
      help: 'Usage records waiting to be written to the database.',
      registers: [this.registry],
      collect() {
        this.set(writer.depth);
      },
    });
    new Counter({
      name: 'gateway_usage_writer_failed_writes_total',
      help: 'Usage batch writes that failed (retried while the database is away; a record the database refuses is set aside).',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(writer.failedWrites);
      },
    });
    const refusals = this.limiter.refusals;
    new Counter({
      name: 'gateway_rate_limited_total',
      help: 'Calls refused with 429 because a rate limit of their key or its owner was reached, by entry point and limit (requests_per_minute, tokens_per_minute, concurrent_requests).',
      labelNames: ['entry', 'limit'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [counter, count] of refusals) {
          const [entry, limit] = counter.split('\u0000');
          this.inc({ entry, limit }, count);
        }
      },
    });
    const replica = this.replica;
    new Gauge({
      name: 'gateway_client_connections',
      help: 'Client TCP connections open on this replica (MAX_CLIENT_CONNECTIONS limits them; a connection refused over it counts until it is closed).',
      registers: [this.registry],
      collect() {
        this.set(replica.connections);
      },
    });
    new Gauge({
      name: 'gateway_in_flight_streams',
      help: 'Streaming calls admitted on this replica whose response is not over (MAX_STREAMS limits them).',
      registers: [this.registry],
      collect() {
        this.set(replica.streams);
      },
    });
    new Counter({
      name: 'gateway_replica_limited_total',
      help: 'Requests refused with 503 because a limit of this replica was reached, by limit (max_client_connections: a request on a connection over MAX_CLIENT_CONNECTIONS, probes aside; max_streams: a streaming call over MAX_STREAMS).',
      labelNames: ['limit'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [limit, count] of Object.entries(replica.refusals)) this.inc({ limit }, count);
      },
    });
    const deliveries = this.alerts.outcomes;
    new Counter({
      name: 'gateway_alert_deliveries_total',
      help: 'Budget alert deliveries this replica attempted, by outcome (delivered: the webhook answered 2xx; failed: retried later).',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ outcome: 'delivered' }, deliveries.delivered);
        this.inc({ outcome: 'failed' }, deliveries.failed);
      },
    });
    const openTasks = () => this.openVideoTasks();
    new Gauge({
      name: 'gateway_video_tasks_open',
      help: 'Video tasks not settled yet, by last seen status (all replicas: read from the database at scrape time; absent when the database does not answer).',
      labelNames: ['status'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const row of await openTasks()) this.set({ status: row.status }, row.count);
      },
    });
  }

  /** Open tasks by status; none when the database fails or is slow, so the scrape still answers. */
  private async openVideoTasks(): Promise<Array<{ status: string; count: number }>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${VIDEO_QUERY_TIMEOUT_MS} ms`)), VIDEO_QUERY_TIMEOUT_MS);
      timer.unref();
    });
    try {
      return await Promise.race([this.dataSource.query(OPEN_VIDEO_TASKS_SQL) as Promise<Array<{ status: string; count: number }>>, timeout]);
    } catch (error) {
      this.logger.warn(`open video tasks not counted: ${String(error)}`);
      return [];
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A counter per usage unit, and each figure's counter by the figure's name. */
function usageCountersOf(registry: Registry): Map<string, LightCounter> {
  const byUnit = new Map(
    USAGE_UNIT_NAMES.map((unit) => [unit, new LightCounter(`gateway_usage_${unit}_total`, USAGE_HELP[unit], ['model', 'figure'], registry)]),
  );
  return new Map(Object.entries(USAGE_UNITS).map(([figure, unit]) => [figure, byUnit.get(unit)!]));
}
