import { testPrincipal } from '../../test/support/principal';
import type { DataSource } from 'typeorm';
import type { UsageWriter } from '../metering/usage-writer.service';
import type { LineRegistry } from '../upstream/line-registry';
import type { CallFacts } from './call-facts';
import { GatewayMetrics } from './gateway-metrics';
import { Clock } from '../common/clock';
import { RateLimiter } from '../governance/rate-limiter';
import type { AlertDelivery } from '../governance/alert-delivery';

const FACTS: CallFacts = {
  requestId: 'request-1',
  clientRequestId: null,
  keyPrefix: 'gk-team-',
  owner: 'team-a',
  method: 'POST',
  route: '/v1/messages',
  entry: 'messages',
  model: 'chat-model',
  line: 'line-a',
  translatedTo: 'responses',
  stream: false,
  status: 200,
  errorCode: null,
  durationMs: 50,
  upstreamHeadersMs: 10,
  upstreamMs: 40,
  firstByteMs: 45,
  usage: { input_tokens: 12, cached_input_tokens: 0, output_tokens: 30 },
  costNano: 1_500_000_000n,
};

function metricsWith(
  query: () => Promise<unknown>,
  limiter = new RateLimiter(new Clock()),
  alerts = { outcomes: { delivered: 0, failed: 0 } } as AlertDelivery,
): GatewayMetrics {
  const lines = { all: () => [], isCooling: () => false } as unknown as LineRegistry;
  const writer = { depth: 0, failedWrites: 0 } as unknown as UsageWriter;
  return new GatewayMetrics(lines, writer, { query } as unknown as DataSource, limiter, alerts);
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
    expect(await samples(metrics, 'gateway_usage_total')).toEqual([
      'gateway_usage_total{model="chat-model",figure="input_tokens"} 24',
      'gateway_usage_total{model="chat-model",figure="output_tokens"} 60',
    ]);
    expect(await samples(metrics, 'gateway_cost_total')).toEqual(['gateway_cost_total{model="chat-model"} 3']);
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
