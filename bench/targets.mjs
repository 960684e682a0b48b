// The gateway's performance targets, judged on one run's summary (bench/run.mjs): each figure of
// the gateway against the bare proxy of the same run, or, for chat JSON, against the stack floor
// (NestJS on Fastify doing only the bare proxy's work: what the frameworks cost before the gateway
// does anything), with the target's limit. A limit against the bare proxy is 10 % looser on
// PostgreSQL; a limit against the floor and the tail at c=1 name each database's own.

/** How much looser a limit against the bare proxy is on PostgreSQL. */
const POSTGRES_SLACK = 0.1;

/** Chat JSON CPU per call against the stack floor's, per database. */
const CHAT_CPU_OVER_FLOOR = { embedded: 1.8, postgresql: 1.5 };

/**
 * One target: the scenarios it applies to, the figure it reads from the gateway's row (its
 * `vs_bare` ratios, or `vs_floor` with `against: 'floor'`), and a limit that is either a ceiling
 * (`max`) or a floor (`min`): one number (10 % looser on PostgreSQL) or one per database.
 * Throughput against the floor: on the one core every target is pinned to, calls per second are
 * one core-second over the CPU per call, so its limit is the CPU limit's inverse.
 */
const TARGETS = [
  { name: 'chat JSON CPU per call', scenarios: ['chat-c64'], figure: 'cpu_ratio', against: 'floor', unit: '×', max: CHAT_CPU_OVER_FLOOR },
  {
    name: 'chat JSON throughput',
    scenarios: ['chat-c64'],
    figure: 'throughput_ratio',
    against: 'floor',
    unit: '×',
    min: { embedded: 1 / CHAT_CPU_OVER_FLOOR.embedded, postgresql: 1 / CHAT_CPU_OVER_FLOOR.postgresql },
  },
  { name: 'added latency at c=1 (p50)', scenarios: ['chat-c1'], figure: 'added_p50_ms', unit: ' ms', max: 0.15 },
  { name: 'added latency at c=1 (p99)', scenarios: ['chat-c1'], figure: 'added_p99_ms', unit: ' ms', max: { embedded: 1, postgresql: 1 } },
  {
    name: 'stream time to first byte, added',
    scenarios: ['chat-sse-c64', 'messages-sse-c64', 'translated-sse-c64'],
    figure: 'added_ttfb_ms',
    unit: ' ms',
    max: 0.2,
  },
  { name: 'native stream throughput', scenarios: ['chat-sse-c64', 'messages-sse-c64'], figure: 'throughput_ratio', unit: '×', min: 0.9 },
  { name: 'translated stream CPU per stream', scenarios: ['translated-sse-c64'], figure: 'cpu_ratio', unit: '×', max: 3 },
];

/** Whether a target's limit is a ceiling or a floor. */
const boundOf = (target) => (target.max !== undefined ? 'max' : 'min');

/** What a target's ratios are taken against: the bare proxy, or the stack floor. */
const baseOf = (target) => (target.against === 'floor' ? 'stack-floor' : 'bare-proxy');

/** A limit as it applies to the run's database. */
function limitOf(target, database) {
  const limit = target[boundOf(target)];
  if (typeof limit === 'object') return limit[database === 'postgresql' ? 'postgresql' : 'embedded'];
  if (database !== 'postgresql') return limit;
  return boundOf(target) === 'max' ? limit * (1 + POSTGRES_SLACK) : limit * (1 - POSTGRES_SLACK);
}

/** Whether a figure is within a limit, on the limit's side; null when there is no figure. */
const within = (value, limit, bound) => (value === null ? null : bound === 'max' ? value <= limit : value >= limit);

/**
 * What a CPU or throughput limit leaves for the gateway's own work: the most CPU per call the
 * limit allows, less the stack floor's. A CPU limit allows its ratio of its base's CPU per call
 * (the bare proxy's or the floor's). A throughput limit, when every target runs on one pinned
 * core (`oneCore`), allows one core-second over the calls per second the limit asks for: more
 * CPU per call than that and the core cannot serve them, whatever else holds the target back.
 * Null when a row or figure is missing.
 */
function allowanceOf(target, limit, rows, oneCore) {
  const { base, floor, gateway } = rows;
  if (!base || !floor || !gateway) return null;
  const cpuPerCall =
    target.figure === 'cpu_ratio' ? limit * base.cpu_us_per_req : target.figure === 'throughput_ratio' && oneCore ? 1e6 / (limit * base.rps) : null;
  if (cpuPerCall === null || !Number.isFinite(cpuPerCall)) return null;
  return {
    cpu_us_per_call: cpuPerCall,
    floor_cpu_us: floor.cpu_us_per_req,
    left_us: cpuPerCall - floor.cpu_us_per_req,
    gateway_own_us: gateway.cpu_us_per_req - floor.cpu_us_per_req,
  };
}

/**
 * Every target against the run: one verdict per target and scenario the run measured (a
 * scenario left out of the run is left out here), and the usage records against the calls.
 * `met` is null when the figure is missing (a probe that was switched off, or a target against
 * the stack floor in a run without it). When the run has the stack floor (`--floor`, the
 * default), each verdict against the bare proxy also judges the floor's own figure against the
 * same limit (`floor`: can the stack meet it before the gateway does anything?) and, for CPU and
 * throughput limits, each verdict says what the limit leaves for the gateway's own work
 * (`allowance`). `options.oneCore`: every target ran pinned to one core (the run's pinning).
 */
export function judge(summary, usage, database, options = {}) {
  const verdicts = [];
  for (const target of TARGETS) {
    const limit = limitOf(target, database);
    const bound = boundOf(target);
    const ratios = target.against === 'floor' ? 'vs_floor' : 'vs_bare';
    for (const scenario of target.scenarios) {
      const cell = (name) => summary.find((r) => r.scenario === scenario && r.target === name);
      const row = cell('gateway');
      if (!row) continue;
      const value = row[ratios]?.[target.figure] ?? null;
      const verdict = {
        target: target.name,
        scenario,
        label: row.label,
        against: baseOf(target),
        value,
        limit,
        bound,
        unit: target.unit,
        met: within(value, limit, bound),
      };
      const floor = cell('stack-floor');
      if (floor) {
        if (target.against !== 'floor') {
          const floorValue = floor.vs_bare?.[target.figure] ?? null;
          verdict.floor = { value: floorValue, met: within(floorValue, limit, bound) };
        }
        const allowance = allowanceOf(target, limit, { base: cell(baseOf(target)), floor, gateway: row }, options.oneCore === true);
        if (allowance) verdict.allowance = allowance;
      }
      verdicts.push(verdict);
    }
  }
  verdicts.push({
    target: 'a usage record for every call',
    scenario: null,
    label: 'the whole run',
    value: usage.records,
    limit: usage.calls,
    bound: 'equal',
    unit: '',
    met: usage.records === usage.calls,
  });
  return verdicts;
}

/** The verdicts as a markdown table. */
export function targetsTable(verdicts, database) {
  // Figures to two decimals; limits to three where the third is not 0 (0.165 ms on PostgreSQL).
  const number = (x, unit, digits = x.toFixed(2)) => (unit === '×' ? `${digits}×` : unit === ' ms' ? `${x >= 0 ? '+' : ''}${digits} ms` : String(x));
  const limit = (x, unit) => number(x, unit, x.toFixed(3).replace(/0$/, ''));
  const bound = (v) =>
    v.bound === 'equal'
      ? `= ${v.limit} calls`
      : `${v.bound === 'max' ? '≤' : '≥'} ${limit(v.limit, v.unit)}${v.against === 'stack-floor' ? " the floor's" : ''}`;
  const outcome = (met) => (met === null ? 'not measured' : met ? 'met' : 'NOT MET');
  const withFloor = verdicts.some((v) => v.floor);
  const lines = [
    `Performance targets on the ${database} database${database === 'postgresql' ? ' (limits against the bare proxy 10 % looser)' : ''}: ` +
      `${verdicts.filter((v) => v.met).length} of ${verdicts.length} met.`,
    '',
    withFloor ? '| target | scenario | gateway | limit | | stack floor alone |' : '| target | scenario | gateway | limit | |',
    withFloor ? '|---|---|---:|---:|---|---|' : '|---|---|---:|---:|---|',
  ];
  for (const v of verdicts) {
    const value = v.value === null ? '–' : v.bound === 'equal' ? `${v.value} records` : number(v.value, v.unit);
    const floor = !withFloor ? '' : v.floor ? ` ${v.floor.value === null ? '–' : number(v.floor.value, v.unit)} ${outcome(v.floor.met)} |` : ' – |';
    lines.push(`| ${v.target} | ${v.label} | ${value} | ${bound(v)} | ${outcome(v.met)} |${floor}`);
  }
  const allowances = verdicts.filter((v) => v.allowance);
  if (allowances.length) {
    const us = (x) => `${x.toFixed(1)} µs`;
    lines.push(
      '',
      "What each CPU or throughput limit leaves for the gateway's own work, in CPU per call over the stack floor's " +
        '(a throughput limit on one pinned core: one core-second over the calls per second it asks for):',
      '',
    );
    for (const v of allowances) {
      const a = v.allowance;
      lines.push(
        `- ${v.target}, ${v.label}: at most ${us(a.cpu_us_per_call)} per call; the stack floor takes ${us(a.floor_cpu_us)}, ` +
          `${a.left_us >= 0 ? `which leaves ${us(a.left_us)}` : `${us(-a.left_us)} over it before the gateway does anything`}; the gateway's own work took ${us(a.gateway_own_us)}`,
      );
    }
  }
  lines.push('', "The memory targets (peak RSS with large bodies, RSS after a long mixed load) are `npm run bench:memory`'s.");
  return lines.join('\n');
}
