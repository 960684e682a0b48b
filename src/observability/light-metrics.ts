import type { Metric, Registry } from 'prom-client';

/**
 * Counters and histograms fed once per request. prom-client's own `inc`/`observe` check and
 * hash the label set on every call (a dozen calls per request); these keep one
 * plain series object per label set, found once through a Map, so the request path does an
 * addition (a counter) or a bucket search and three additions (a histogram). prom-client's
 * registry still renders them, in its own text format, beside its other metrics.
 *
 * Label values must come from bounded sets (interfaces, models and lines of the configuration,
 * statuses, figure names), never from request data: every label set stays in memory.
 */

type Labels = Record<string, string>;

/** A metric as prom-client's registry renders it (what its own metrics' `get()` returns). */
interface RenderedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>;
}

function checkCount(names: readonly string[], values: readonly string[]): void {
  if (values.length !== names.length) throw new Error(`expected ${names.length} label values (${names.join(', ')}), got ${values.length}`);
}

function labelsOf(names: readonly string[], values: readonly string[]): Labels {
  const labels: Labels = {};
  names.forEach((name, index) => (labels[name] = values[index]));
  return labels;
}

/** A level of the series tree: a Map per label, keyed by its value; the last label's leads to the series. */
type Level<Series> = Map<string, Level<Series> | Series>;

abstract class LightMetric<Series extends { labels: Labels }> {
  /**
   * Series found label value by label value, so that no key string is built (and hashed) per
   * observation: the values are the request's own strings (mostly from the configuration),
   * whose hashes V8 keeps once computed. A joined key would be a new string every time.
   */
  private readonly tree: Level<Series> = new Map();
  private readonly series: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    // The registry renders any object with a name and get(); these are not prom-client classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, in the order of the label names. */
  of(...values: string[]): Series {
    // Checked on every call: a short list would otherwise find an inner Map as its series.
    checkCount(this.labelNames, values);
    const last = values.length - 1;
    let level = this.tree;
    for (let index = 0; index < last; index++) {
      let next = level.get(values[index]) as Level<Series> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[index], next);
      }
      level = next;
    }
    let series = level.get(values[last]) as Series | undefined;
    if (series === undefined) {
      series = this.create(labelsOf(this.labelNames, values));
      level.set(values[last], series);
      this.series.push(series);
    }
    return series;
  }

  reset(): void {
    this.tree.clear();
    this.series.length = 0;
  }

  protected all(): readonly Series[] {
    return this.series;
  }

  protected abstract create(labels: Labels): Series;
}

export interface CounterSeries {
  readonly labels: Labels;
  value: number;
}

export class LightCounter extends LightMetric<CounterSeries> {
  readonly type = 'counter';

  get(): RenderedMetric {
    const values = [...this.all()].map(({ labels, value }) => ({ labels, value }));
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values };
  }

  protected create(labels: Labels): CounterSeries {
    return { labels, value: 0 };
  }
}

export class HistogramSeries {
  /** Observations per bucket, not cumulative (summed when rendered); the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]) bucket++;
    this.counts[bucket] += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class LightHistogram extends LightMetric<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  get(): RenderedMetric {
    const values: RenderedMetric['values'] = [];
    for (const series of this.all()) {
      let cumulative = 0;
      this.bounds.forEach((bound, index) => {
        cumulative += series.counts[index];
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...series.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...series.labels }, value: series.count });
      values.push({ metricName: `${this.name}_sum`, labels: series.labels, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: series.labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }
}
