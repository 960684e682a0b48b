import { Histogram, Registry } from 'prom-client';
import { LightCounter, LightHistogram } from './light-metrics';

const BOUNDS = [0.1, 1, 10];

describe('light metrics', () => {
  it('render a histogram exactly as prom-client renders the same observations', async () => {
    const light = new Registry();
    const reference = new Registry();
    const ours = new LightHistogram('call_seconds', 'Call time.', ['entry'], BOUNDS, light);
    const theirs = new Histogram({ name: 'call_seconds', help: 'Call time.', labelNames: ['entry'], buckets: BOUNDS, registers: [reference] });
    // On a bound, past the last bound, and below the first: `le` means less than or equal.
    for (const [entry, value] of [
      ['chat', 0.1],
      ['chat', 0.05],
      ['chat', 12],
      ['messages', 1],
      ['chat', 1.5],
    ] as const) {
      ours.of(entry).observe(value);
      theirs.labels(entry).observe(value);
    }

    expect(await light.metrics()).toBe(await reference.metrics());
  });

  it('render a counter with its label sets, values added in place', async () => {
    const registry = new Registry();
    const counter = new LightCounter('calls_total', 'Calls.', ['model', 'status'], registry);
    counter.of('m1', '200').value += 1;
    counter.of('m1', '200').value += 2;
    counter.of('m2', '429').value += 1;
    counter.of('m1', '429').value += 5;

    expect(await registry.metrics()).toBe(
      '# HELP calls_total Calls.\n# TYPE calls_total counter\ncalls_total{model="m1",status="200"} 3\ncalls_total{model="m2",status="429"} 1\n' +
        'calls_total{model="m1",status="429"} 5\n',
    );
  });

  it('forget every series on reset, and refuse a wrong number of label values', () => {
    const registry = new Registry();
    const counter = new LightCounter('calls_total', 'Calls.', ['model'], registry);
    const first = counter.of('m1');
    counter.reset();

    expect(counter.of('m1')).not.toBe(first);
    expect(() => counter.of('m1', 'extra')).toThrow('expected 1 label values (model), got 2');
    const pair = new LightCounter('pairs_total', 'Pairs.', ['model', 'status'], registry);
    pair.of('m1', '200');
    expect(() => pair.of('m1')).toThrow('expected 2 label values (model, status), got 1');
  });
});
