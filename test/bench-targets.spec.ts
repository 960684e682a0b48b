import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm run bench` judges the performance targets on its own run (bench/targets.mjs). The
 * module is ES, so it is called in a child process, as bench/run.mjs calls it.
 */
interface Verdict {
  target: string;
  against: 'bare-proxy' | 'stack-floor';
  scenario: string | null;
  value: number | null;
  limit: number;
  met: boolean | null;
  floor?: { value: number | null; met: boolean | null };
  allowance?: { cpu_us_per_call: number; floor_cpu_us: number; left_us: number; gateway_own_us: number };
}

const TARGETS_MODULE = join(__dirname, '..', 'bench', 'targets.mjs');

function judged(
  summary: unknown[],
  usage: { records: number; calls: number },
  database: string,
  options: { oneCore?: boolean } = {},
): { verdicts: Verdict[]; table: string } {
  const script = `
    const { judge, targetsTable } = await import(${JSON.stringify(TARGETS_MODULE)});
    const [summary, usage, database, options] = JSON.parse(process.argv[1]);
    const verdicts = judge(summary, usage, database, options);
    process.stdout.write(JSON.stringify({ verdicts, table: targetsTable(verdicts, database) }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([summary, usage, database, options])], { encoding: 'utf8' });
  return JSON.parse(out) as { verdicts: Verdict[]; table: string };
}

type Ratios = { cpu_ratio?: number; throughput_ratio?: number; added_p50_ms?: number; added_p99_ms?: number; added_ttfb_ms?: number | null };
type FloorRatios = { cpu_ratio: number; throughput_ratio: number };
interface Row {
  scenario: string;
  label: string;
  target: string;
  vs_bare: Ratios;
  vs_floor?: FloorRatios;
}
const gateway = (scenario: string, vs_bare: Ratios, vs_floor?: FloorRatios): Row => ({ scenario, label: scenario, target: 'gateway', vs_bare, vs_floor });
const bare = (scenario: string): Row => ({
  scenario,
  label: scenario,
  target: 'bare-proxy',
  vs_bare: { cpu_ratio: 1, throughput_ratio: 1, added_p50_ms: 0, added_ttfb_ms: 0 },
});

/** A run whose every figure is exactly at its embedded limit. */
const AT_THE_LIMITS = [
  bare('chat-c1'),
  gateway('chat-c1', { cpu_ratio: 2, throughput_ratio: 0.5, added_p50_ms: 0.15, added_p99_ms: 1 }),
  bare('chat-c64'),
  gateway('chat-c64', { cpu_ratio: 2.5, throughput_ratio: 0.4, added_p50_ms: 9 }, { cpu_ratio: 1.8, throughput_ratio: 1 / 1.8 }),
  gateway('chat-sse-c64', { cpu_ratio: 1.2, throughput_ratio: 0.9, added_ttfb_ms: 0.2 }),
  gateway('messages-sse-c64', { cpu_ratio: 1.2, throughput_ratio: 0.9, added_ttfb_ms: 0.2 }),
  gateway('translated-sse-c64', { cpu_ratio: 3, throughput_ratio: 0.4, added_ttfb_ms: 0.2 }),
];

function verdictOf(verdicts: Verdict[], target: string, scenario: string | null): Verdict {
  const found = verdicts.find((v) => v.target === target && v.scenario === scenario);
  if (!found) throw new Error(`no verdict for ${target} / ${scenario}`);
  return found;
}

describe('bench: performance targets judged on a run', () => {
  it('meets every target at its limit, and counts the usage records against the calls', () => {
    const { verdicts, table } = judged(AT_THE_LIMITS, { records: 10, calls: 10 }, 'embedded');
    expect(verdicts.map((v) => [v.target, v.scenario, v.met])).toEqual([
      ['chat JSON CPU per call', 'chat-c64', true],
      ['chat JSON throughput', 'chat-c64', true],
      ['added latency at c=1 (p50)', 'chat-c1', true],
      ['added latency at c=1 (p99)', 'chat-c1', true],
      ['stream time to first byte, added', 'chat-sse-c64', true],
      ['stream time to first byte, added', 'messages-sse-c64', true],
      ['stream time to first byte, added', 'translated-sse-c64', true],
      ['native stream throughput', 'chat-sse-c64', true],
      ['native stream throughput', 'messages-sse-c64', true],
      ['translated stream CPU per stream', 'translated-sse-c64', true],
      ['a usage record for every call', null, true],
    ]);
    expect(table).toContain('11 of 11 met');
    expect(table).not.toContain('NOT MET');
    expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64').against).toBe('stack-floor');
    expect(verdictOf(verdicts, 'native stream throughput', 'chat-sse-c64').against).toBe('bare-proxy');
    expect(table).toContain("| chat JSON CPU per call | chat-c64 | 1.80× | ≤ 1.80× the floor's | met |");
    expect(table).toContain("| chat JSON throughput | chat-c64 | 0.56× | ≥ 0.556× the floor's | met |");
  });

  it('fails each target just past its limit, on its side', () => {
    const past = AT_THE_LIMITS.map((row) => {
      if (row.target !== 'gateway') return row;
      const v = row.vs_bare;
      const f = row.vs_floor;
      return {
        ...row,
        vs_bare: {
          cpu_ratio: v.cpu_ratio! + 0.01,
          throughput_ratio: v.throughput_ratio! - 0.01,
          added_p50_ms: (v.added_p50_ms ?? 0) + 0.01,
          added_p99_ms: (v.added_p99_ms ?? 0) + 0.01,
          added_ttfb_ms: (v.added_ttfb_ms ?? 0) + 0.01,
        },
        vs_floor: f && { cpu_ratio: f.cpu_ratio + 0.01, throughput_ratio: f.throughput_ratio - 0.01 },
      };
    });
    const { verdicts, table } = judged(past, { records: 9, calls: 10 }, 'embedded');
    expect(verdicts.filter((v) => v.met !== false)).toEqual([]);
    expect(table).toContain('0 of 11 met');
    expect(table).toContain("| chat JSON CPU per call | chat-c64 | 1.81× | ≤ 1.80× the floor's | NOT MET |");
    expect(table).toContain('| added latency at c=1 (p99) | chat-c1 | +1.01 ms | ≤ +1.00 ms | NOT MET |');
    expect(table).toContain('| a usage record for every call | the whole run | 9 records | = 10 calls | NOT MET |');
  });

  it('allows 10 % more on PostgreSQL against the bare proxy; against the floor and at c=1 p99, each database its own limit', () => {
    const looser = AT_THE_LIMITS.map((row) => {
      if (row.target !== 'gateway') return row;
      const v = row.vs_bare;
      return {
        ...row,
        vs_bare: {
          cpu_ratio: v.cpu_ratio! * 1.09,
          throughput_ratio: v.throughput_ratio! * 0.91,
          added_p50_ms: (v.added_p50_ms ?? 0) * 1.09,
          added_p99_ms: v.added_p99_ms,
          added_ttfb_ms: (v.added_ttfb_ms ?? 0) * 1.09,
        },
        vs_floor: row.vs_floor && { cpu_ratio: 1.6, throughput_ratio: 1 / 1.6 },
      };
    });
    expect(
      judged(looser, { records: 1, calls: 1 }, 'embedded')
        .verdicts.filter((v) => v.met)
        .map((v) => v.target),
    ).toEqual(['chat JSON CPU per call', 'chat JSON throughput', 'added latency at c=1 (p99)', 'a usage record for every call']);
    const onPostgres = judged(looser, { records: 1, calls: 1 }, 'postgresql');
    expect(onPostgres.verdicts.filter((v) => !v.met).map((v) => v.target)).toEqual(['chat JSON CPU per call', 'chat JSON throughput']);
    expect(verdictOf(onPostgres.verdicts, 'chat JSON CPU per call', 'chat-c64').limit).toBeCloseTo(1.5);
    expect(verdictOf(onPostgres.verdicts, 'chat JSON throughput', 'chat-c64').limit).toBeCloseTo(1 / 1.5);
    expect(verdictOf(onPostgres.verdicts, 'added latency at c=1 (p99)', 'chat-c1').limit).toBe(1);
    expect(verdictOf(onPostgres.verdicts, 'native stream throughput', 'chat-sse-c64').limit).toBeCloseTo(0.81);
    expect(onPostgres.table).toContain('limits against the bare proxy 10 % looser');
    expect(onPostgres.table).toContain('| added latency at c=1 (p50) | chat-c1 | +0.16 ms | ≤ +0.165 ms | met |');
    expect(onPostgres.table).toContain("| chat JSON CPU per call | chat-c64 | 1.60× | ≤ 1.50× the floor's | NOT MET |");
    expect(onPostgres.table).toContain("| chat JSON throughput | chat-c64 | 0.63× | ≥ 0.667× the floor's | NOT MET |");
  });

  it('judges only what the run measured', () => {
    const run = [bare('chat-c64'), gateway('chat-sse-c64', { cpu_ratio: 1.1, throughput_ratio: 0.95, added_ttfb_ms: null })];
    const { verdicts, table } = judged(run, { records: 3, calls: 3 }, 'embedded');
    expect(verdicts.map((v) => [v.target, v.scenario, v.met])).toEqual([
      ['stream time to first byte, added', 'chat-sse-c64', null],
      ['native stream throughput', 'chat-sse-c64', true],
      ['a usage record for every call', null, true],
    ]);
    expect(table).toContain('| – | ≤ +0.20 ms | not measured |');
  });

  describe('with the stack floor in the run (the default)', () => {
    /** A cell: the figures a run measures, and the ratios to the bare proxy and the floor it derives. */
    const cell = (scenario: string, target: string, rps: number, cpu: number, [bareRps, bareCpu]: number[], [floorRps, floorCpu]: number[]) => ({
      scenario,
      label: scenario,
      target,
      rps,
      cpu_us_per_req: cpu,
      vs_bare: { cpu_ratio: cpu / bareCpu, throughput_ratio: rps / bareRps, added_p50_ms: 0 },
      vs_floor: { cpu_ratio: cpu / floorCpu, throughput_ratio: rps / floorRps },
    });
    const chat = (target: string, rps: number, cpu: number) => cell('chat-c64', target, rps, cpu, [20_000, 50], [15_400, 65]);
    const stream = (target: string, rps: number, cpu: number) => cell('chat-sse-c64', target, rps, cpu, [4_000, 250], [3_900, 290]);
    const run = [
      chat('bare-proxy', 20_000, 50),
      chat('stack-floor', 15_400, 65),
      chat('gateway', 9_000, 110),
      stream('bare-proxy', 4_000, 250),
      stream('stack-floor', 3_900, 290),
      stream('gateway', 3_500, 320),
    ];

    it("judges the chat JSON targets against the floor, and the floor's own figure of the others against their limit", () => {
      const { verdicts, table } = judged(run, { records: 1, calls: 1 }, 'embedded', { oneCore: true });
      expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64')).toMatchObject({ value: 110 / 65, met: true });
      expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64').floor).toBeUndefined();
      expect(verdictOf(verdicts, 'native stream throughput', 'chat-sse-c64').floor).toEqual({ value: 0.975, met: true });
      expect(table).toContain('| target | scenario | gateway | limit | | stack floor alone |');
      expect(table).toContain("| chat JSON CPU per call | chat-c64 | 1.69× | ≤ 1.80× the floor's | met | – |");
      expect(table).toContain("| chat JSON throughput | chat-c64 | 0.58× | ≥ 0.556× the floor's | met | – |");
      expect(table).toContain('| native stream throughput | chat-sse-c64 | 0.88× | ≥ 0.90× | NOT MET | 0.97× met |');
      expect(table).toContain('| a usage record for every call | the whole run | 1 records | = 1 calls | met | – |');
      expect(judged(run, { records: 1, calls: 1 }, 'postgresql').table).toContain(
        "| chat JSON CPU per call | chat-c64 | 1.69× | ≤ 1.50× the floor's | NOT MET | – |",
      );
    });

    it("says what a CPU limit and, on one core, a throughput limit leave for the gateway's own work", () => {
      const { verdicts, table } = judged(run, { records: 1, calls: 1 }, 'postgresql', { oneCore: true });
      // 1.5 x the floor's 65 µs = 97.5 µs per call, which leaves 32.5; the gateway's own work is 110 - 65.
      expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64').allowance).toEqual({
        cpu_us_per_call: 97.5,
        floor_cpu_us: 65,
        left_us: 32.5,
        gateway_own_us: 45,
      });
      // The floor's 15,400 calls/s over 1.5 on one core: 1 s / 10,267 = 97.4 µs per call at most.
      const throughput = verdictOf(verdicts, 'chat JSON throughput', 'chat-c64').allowance!;
      expect(throughput.cpu_us_per_call).toBeCloseTo(97.4, 1);
      expect(table).toContain(
        "- chat JSON CPU per call, chat-c64: at most 97.5 µs per call; the stack floor takes 65.0 µs, which leaves 32.5 µs; the gateway's own work took 45.0 µs",
      );
      // A stream throughput limit of 0.81x the bare proxy's 4,000 on one core: 308.6 µs, 18.6 over the floor's 290.
      expect(table).toContain(
        "- native stream throughput, chat-sse-c64: at most 308.6 µs per call; the stack floor takes 290.0 µs, which leaves 18.6 µs; the gateway's own work took 30.0 µs",
      );
      // On the embedded database's 0.9x: 277.8 µs, under the floor's 290.
      expect(judged(run, { records: 1, calls: 1 }, 'embedded', { oneCore: true }).table).toContain(
        "- native stream throughput, chat-sse-c64: at most 277.8 µs per call; the stack floor takes 290.0 µs, 12.2 µs over it before the gateway does anything; the gateway's own work took 30.0 µs",
      );
    });

    it('gives no throughput allowance when the targets were not pinned to one core; without the floor, no floor column and no chat JSON verdict', () => {
      const unpinned = judged(run, { records: 1, calls: 1 }, 'embedded');
      expect(verdictOf(unpinned.verdicts, 'chat JSON throughput', 'chat-c64').allowance).toBeUndefined();
      expect(verdictOf(unpinned.verdicts, 'chat JSON CPU per call', 'chat-c64').allowance).toBeDefined();
      const withoutFloor = judged(
        run.filter((r) => r.target !== 'stack-floor').map(({ vs_floor: _dropped, ...row }) => row),
        { records: 1, calls: 1 },
        'embedded',
        { oneCore: true },
      );
      expect(withoutFloor.verdicts.some((v) => v.floor || v.allowance)).toBe(false);
      expect(verdictOf(withoutFloor.verdicts, 'chat JSON CPU per call', 'chat-c64').met).toBeNull();
      expect(withoutFloor.table).not.toContain('stack floor alone');
      expect(withoutFloor.table).toContain("| chat JSON CPU per call | chat-c64 | – | ≤ 1.80× the floor's | not measured |");
    });
  });
});
