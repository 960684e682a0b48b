/**
 * @jest-environment node
 */
// Fakes timers: in jest's own sandbox (test/jest/shared-packages-runtime.js says why).
import type { FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { testPrincipal } from '../../test/support/principal';
import { METERED_FIGURES } from '../config/metered-figures';
import type { DataSource } from 'typeorm';
import type { UsageWriter } from '../metering/usage-writer.service';
import type { LineRegistry } from '../upstream/line-registry';
import { GatewayMetrics } from './gateway-metrics';
import { Clock } from '../common/clock';
import { RateLimiter } from '../governance/rate-limiter';
import type { AlertDelivery } from '../governance/alert-delivery';
import { ReplicaLimits } from '../governance/replica-limits';
import { USAGE_UNITS } from './usage-units';
import { callFacts } from '../../test/support/call-facts';

const FACTS = callFacts({
  route: '/v1/messages',
  entry: 'messages',
  translatedTo: 'responses',
  durationMs: 50,
  upstreamHeadersMs: 10,
  firstByteMs: 45,
  usage: { input_tokens: 12, cached_input_tokens: 0, output_tokens: 30 },
  costNano: 1_500_000_000n,
});

function metricsWith(
  query: () => Promise<unknown>,
  limiter = new RateLimiter(new Clock()),
  alerts = { outcomes: { delivered: 0, failed: 0 } } as AlertDelivery,
  replica = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 0 }),
): GatewayMetrics {
  const lines = { all: () => [], isCooling: () => false } as unknown as LineRegistry;
  const writer = { depth: 0, failedWrites: 0 } as unknown as UsageWriter;
  return new GatewayMetrics(lines, writer, { query } as unknown as DataSource, limiter, alerts, replica);
}

/** The sample lines of a metric, e.g. `gateway_cost_total{model="chat-model"} 1.5`. */
async function samples(metrics: GatewayMetrics, name: string): Promise<string[]> {
  const text = await metrics.render();
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe(GatewayMetrics.name, () => {
  it('counts a call by its labels, its usage figures above zero, and its cost in currency units', async () => {
    const metrics = metricsWith(async () => []);
    metrics.callEnded(FACTS);
    metrics.callEnded(FACTS);

    expect(await samples(metrics, 'gateway_requests_total')).toEqual([
      'gateway_requests_total{entry="messages",model="chat-model",status="200",translated="true"} 2',
    ]);
    expect(await samples(metrics, 'gateway_usage_tokens_total')).toEqual([
      'gateway_usage_tokens_total{model="chat-model",figure="input_tokens"} 24',
      'gateway_usage_tokens_total{model="chat-model",figure="output_tokens"} 60',
    ]);
    expect(await samples(metrics, 'gateway_cost_total')).toEqual(['gateway_cost_total{model="chat-model"} 3']);
  });

  it('counts each usage figure under the counter of its unit, so no sum adds tokens to images, seconds or characters', async () => {
    const metrics = metricsWith(async () => []);
    metrics.callEnded({ ...FACTS, model: 'image-model', usage: { output_images: 2, input_images: 1, input_text_tokens: 40 } });
    metrics.callEnded({ ...FACTS, model: 'speech-model', usage: { input_characters: 120 } });
    metrics.videoTaskSettled('video-c', 'usage', 'succeeded', { output_seconds: 5, input_seconds: 3, input_image_count: 1 }, 0n);

    expect(await samples(metrics, 'gateway_usage_tokens_total')).toEqual(['gateway_usage_tokens_total{model="image-model",figure="input_text_tokens"} 40']);
    expect(await samples(metrics, 'gateway_usage_images_total')).toEqual([
      'gateway_usage_images_total{model="image-model",figure="output_images"} 2',
      'gateway_usage_images_total{model="image-model",figure="input_images"} 1',
      'gateway_usage_images_total{model="video-c",figure="input_image_count"} 1',
    ]);
    expect(await samples(metrics, 'gateway_usage_seconds_total')).toEqual([
      'gateway_usage_seconds_total{model="video-c",figure="output_seconds"} 5',
      'gateway_usage_seconds_total{model="video-c",figure="input_seconds"} 3',
    ]);
    expect(await samples(metrics, 'gateway_usage_characters_total')).toEqual([
      'gateway_usage_characters_total{model="speech-model",figure="input_characters"} 120',
    ]);
  });

  it('names a unit for every figure a meter reports', () => {
    const figures = new Set([...Object.values(METERED_FIGURES).flat(), 'reasoning_tokens']);

    expect([...figures].filter((figure) => !Object.hasOwn(USAGE_UNITS, figure))).toEqual([]);
  });

  it('shows the version, the Node.js version and the commit it was told of as gateway_build_info 1', async () => {
    const given = process.env.GATEWAY_COMMIT;
    process.env.GATEWAY_COMMIT = '0123abc';
    try {
      const version = (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

      expect(
        await samples(
          metricsWith(async () => []),
          'gateway_build_info',
        ),
      ).toEqual([`gateway_build_info{version="${version}",node_version="${process.versions.node}",commit="0123abc"} 1`]);
      delete process.env.GATEWAY_COMMIT;
      expect(
        await samples(
          metricsWith(async () => []),
          'gateway_build_info',
        ),
      ).toEqual([`gateway_build_info{version="${version}",node_version="${process.versions.node}"} 1`]);
    } finally {
      if (given === undefined) delete process.env.GATEWAY_COMMIT;
      else process.env.GATEWAY_COMMIT = given;
    }
  });

  it('counts a request in flight from its start to its end', async () => {
    const metrics = metricsWith(async () => []);
    metrics.callStarted();
    metrics.callStarted();
    metrics.callEnded(FACTS);

    expect(await samples(metrics, 'gateway_in_flight_requests')).toEqual(['gateway_in_flight_requests 1']);
  });

  it("observes the gateway overhead as the call's duration minus its upstream time", async () => {
    const metrics = metricsWith(async () => []);
    metrics.callEnded(FACTS);

    expect(await samples(metrics, 'gateway_overhead_seconds_sum')).toEqual(['gateway_overhead_seconds_sum{entry="messages"} 0.01']);
    expect(await samples(metrics, 'gateway_upstream_duration_seconds_sum')).toEqual(['gateway_upstream_duration_seconds_sum{line="line-a"} 0.04']);
  });

  it('observes no upstream or overhead time for a request that did not go upstream', async () => {
    const metrics = metricsWith(async () => []);
    metrics.callEnded({ ...FACTS, model: null, line: null, translatedTo: null, upstreamMs: null, upstreamHeadersMs: null, usage: undefined, costNano: 0n });

    expect(await samples(metrics, 'gateway_requests_total')).toEqual([
      'gateway_requests_total{entry="messages",model="none",status="200",translated="false"} 1',
    ]);
    expect(await samples(metrics, 'gateway_overhead_seconds_count')).toEqual([]);
    expect(await samples(metrics, 'gateway_upstream_duration_seconds_count')).toEqual([]);
    expect(await samples(metrics, 'gateway_cost_total')).toEqual([]);
  });

  it('labels a video task charged its reservation while still running "unfinished", not by the upstream\'s status', async () => {
    const metrics = metricsWith(async () => []);
    metrics.videoTaskSettled('video-c', 'reserved', 'Processing-42', undefined, 2_000_000_000n);
    metrics.videoTaskSettled('video-c', 'usage', 'succeeded', { output_seconds: 5 }, 250_000_000n);

    expect(await samples(metrics, 'gateway_video_tasks_settled_total')).toEqual([
      'gateway_video_tasks_settled_total{settlement="reserved",status="unfinished"} 1',
      'gateway_video_tasks_settled_total{settlement="usage",status="succeeded"} 1',
    ]);
    expect(await samples(metrics, 'gateway_cost_total')).toEqual(['gateway_cost_total{model="video-c"} 2.25']);
  });

  it('shows the open video tasks by status', async () => {
    const metrics = metricsWith(async () => [
      { status: 'queued', count: 2 },
      { status: 'running', count: 1 },
    ]);

    expect(await samples(metrics, 'gateway_video_tasks_open')).toEqual([
      'gateway_video_tasks_open{status="queued"} 2',
      'gateway_video_tasks_open{status="running"} 1',
    ]);
  });

  it('counts rate-limit refusals by entry and limit, never by key or owner', async () => {
    const limiter = new RateLimiter(new Clock());
    const metrics = metricsWith(async () => [], limiter);
    const principal = testPrincipal({ keyId: 'key-1', keyLimits: { requests_per_minute: 1, tokens_per_minute: null, concurrent_requests: null } });
    expect(limiter.admit(principal, 'messages')).toEqual(expect.any(Function));
    for (let refused = 0; refused < 2; refused++) expect(() => limiter.admit(principal, 'messages')).toThrow('limit of 1 requests per minute');

    expect(await samples(metrics, 'gateway_rate_limited_total')).toEqual(['gateway_rate_limited_total{entry="messages",limit="requests_per_minute"} 2']);
  });

  it("shows the replica's open client connections and streams, and counts its refusals by limit (both shown from 0)", async () => {
    const replica = new ReplicaLimits({ maxClientConnections: 0, maxStreams: 1 });
    const metrics = metricsWith(async () => [], undefined, undefined, replica);
    expect(await samples(metrics, 'gateway_replica_limited_total')).toEqual([
      'gateway_replica_limited_total{limit="max_client_connections"} 0',
      'gateway_replica_limited_total{limit="max_streams"} 0',
    ]);

    replica.connections = 3;
    replica.openStream({} as FastifyRequest, { closed: false } as ServerResponse);
    expect(() => replica.openStream({} as FastifyRequest, { closed: false } as ServerResponse)).toThrow('most streaming calls');
    replica.connectionRefusal();
    replica.connectionRefusal();

    expect(await samples(metrics, 'gateway_client_connections')).toEqual(['gateway_client_connections 3']);
    expect(await samples(metrics, 'gateway_in_flight_streams')).toEqual(['gateway_in_flight_streams 1']);
    expect(await samples(metrics, 'gateway_replica_limited_total')).toEqual([
      'gateway_replica_limited_total{limit="max_client_connections"} 2',
      'gateway_replica_limited_total{limit="max_streams"} 1',
    ]);
  });

  it('counts budget alert deliveries by outcome', async () => {
    const alerts = { outcomes: { delivered: 0, failed: 0 } } as AlertDelivery;
    const metrics = metricsWith(async () => [], undefined, alerts);
    alerts.outcomes.delivered += 2;
    alerts.outcomes.failed += 1;

    expect(await samples(metrics, 'gateway_alert_deliveries_total')).toEqual([
      'gateway_alert_deliveries_total{outcome="delivered"} 2',
      'gateway_alert_deliveries_total{outcome="failed"} 1',
    ]);
  });

  describe('when the database does not answer a scrape in time', () => {
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'performance', 'hrtime'] }));
    afterEach(() => jest.useRealTimers());

    it('leaves the open video tasks out and answers with the rest', async () => {
      const metrics = metricsWith(() => new Promise(() => undefined));
      metrics.callEnded(FACTS);

      const text = metrics.render();
      await jest.advanceTimersByTimeAsync(2_000);

      expect(await text).toContain('gateway_requests_total{entry="messages"');
      expect(await text).not.toContain('gateway_video_tasks_open{');
    });
  });
});
