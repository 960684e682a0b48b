// Issue 4's targets, judged on one run's summary (bench/run.mjs): each figure of the gateway
// against the bare proxy of the same run, with the limit the issue sets. On PostgreSQL every
// limit is 10 % looser ("Same on PostgreSQL, where the ratio may be 10% worse").

/** How much looser a limit is on PostgreSQL. */
const POSTGRES_SLACK = 0.1;

/**
 * One target: the scenarios it applies to, the figure it reads from the gateway's row (its
 * `vs_bare` ratios), and a limit that is either a ceiling (`max`) or a floor (`min`).
 */
const TARGETS = [
  { name: 'chat JSON CPU per call', scenarios: ['chat-c64'], figure: 'cpu_ratio', unit: '×', max: 1.5 },
  { name: 'chat JSON throughput', scenarios: ['chat-c64'], figure: 'throughput_ratio', unit: '×', min: 0.8 },
  { name: 'added latency at c=1 (p50)', scenarios: ['chat-c1'], figure: 'added_p50_ms', unit: ' ms', max: 0.15 },
  { name: 'stream time to first byte, added', scenarios: ['chat-sse-c64', 'messages-sse-c64', 'translated-sse-c64'], figure: 'added_ttfb_ms', unit: ' ms', max: 0.2 },
  { name: 'native stream throughput', scenarios: ['chat-sse-c64', 'messages-sse-c64'], figure: 'throughput_ratio', unit: '×', min: 0.9 },
  { name: 'translated stream CPU per stream', scenarios: ['translated-sse-c64'], figure: 'cpu_ratio', unit: '×', max: 3 },
];

/** Whether a target's limit is a ceiling or a floor. */
const boundOf = (target) => (target.max !== undefined ? 'max' : 'min');

/** A limit as it applies to the run's database. */
function limitOf(target, database) {
  if (database !== 'postgresql') return target[boundOf(target)];
  return boundOf(target) === 'max' ? target.max * (1 + POSTGRES_SLACK) : target.min * (1 - POSTGRES_SLACK);
}

/**
 * Every target against the run: one verdict per target and scenario the run measured (a
 * scenario left out of the run is left out here), and the usage records against the calls.
 * `met` is null when the figure is missing (a probe that was switched off).
 */
export function judge(summary, usage, database) {
  const verdicts = [];
  for (const target of TARGETS) {
    const limit = limitOf(target, database);
    const bound = boundOf(target);
    for (const scenario of target.scenarios) {
      const row = summary.find((r) => r.scenario === scenario && r.target === 'gateway');
      if (!row) continue;
      const value = row.vs_bare?.[target.figure] ?? null;
      const met = value === null ? null : bound === 'max' ? value <= limit : value >= limit;
      verdicts.push({ target: target.name, scenario, label: row.label, value, limit, bound, unit: target.unit, met });
    }
  }
  verdicts.push({
    target: 'a usage record for every call', scenario: null, label: 'the whole run', value: usage.records, limit: usage.calls,
    bound: 'equal', unit: '', met: usage.records === usage.calls,
  });
  return verdicts;
}

/** The verdicts as a markdown table. */
export function targetsTable(verdicts, database) {
  // Figures to two decimals; limits to three where the third is not 0 (0.165 ms on PostgreSQL).
  const number = (x, unit, digits = x.toFixed(2)) => (unit === '×' ? `${digits}×` : unit === ' ms' ? `${x >= 0 ? '+' : ''}${digits} ms` : String(x));
  const limit = (x, unit) => number(x, unit, x.toFixed(3).replace(/0$/, ''));
  const bound = (v) => (v.bound === 'equal' ? `= ${v.limit} calls` : `${v.bound === 'max' ? '≤' : '≥'} ${limit(v.limit, v.unit)}`);
  const lines = [
    `Issue 4's targets on the ${database} database${database === 'postgresql' ? ' (limits 10 % looser)' : ''}: ` +
      `${verdicts.filter((v) => v.met).length} of ${verdicts.length} met.`,
    '',
    '| target | scenario | gateway | limit | |',
    '|---|---|---:|---:|---|',
  ];
  for (const v of verdicts) {
    const value = v.value === null ? '–' : v.bound === 'equal' ? `${v.value} records` : number(v.value, v.unit);
    lines.push(`| ${v.target} | ${v.label} | ${value} | ${bound(v)} | ${v.met === null ? 'not measured' : v.met ? 'met' : 'NOT MET'} |`);
  }
  lines.push('', 'The memory targets (peak RSS with large bodies, RSS after a long mixed load) are `npm run bench:memory`\'s.');
  return lines.join('\n');
}
