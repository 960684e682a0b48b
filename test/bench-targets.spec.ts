import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm run bench` judges the performance targets on its own run (bench/targets.mjs). The
 * module is ES, so it is called in a child process, as bench/run.mjs calls it.
 */
interface Verdict {
  target: string;
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

type Ratios = { cpu_ratio?: number; throughput_ratio?: number; added_p50_ms?: number; added_ttfb_ms?: number | null };
const gateway = (scenario: string, vs_bare: Ratios) => ({ scenario, label: scenario, target: 'gateway', vs_bare });
const bare = (scenario: string) => ({
  scenario,
  label: scenario,
  target: 'bare-proxy',
  vs_bare: { cpu_ratio: 1, throughput_ratio: 1, added_p50_ms: 0, added_ttfb_ms: 0 },
});

/** A run whose every figure is exactly at its embedded limit. */
const AT_THE_LIMITS = [
  bare('chat-c1'),
  gateway('chat-c1', { cpu_ratio: 2, throughput_ratio: 0.5, added_p50_ms: 0.15 }),
  bare('chat-c64'),
  gateway('chat-c64', { cpu_ratio: 1.5, throughput_ratio: 0.8, added_p50_ms: 9 }),
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
      ['stream time to first byte, added', 'chat-sse-c64', true],
      ['stream time to first byte, added', 'messages-sse-c64', true],
      ['stream time to first byte, added', 'translated-sse-c64', true],
      ['native stream throughput', 'chat-sse-c64', true],
      ['native stream throughput', 'messages-sse-c64', true],
      ['translated stream CPU per stream', 'translated-sse-c64', true],
      ['a usage record for every call', null, true],
    ]);
    expect(table).toContain('10 of 10 met');
    expect(table).not.toContain('NOT MET');
  });

  it('fails each target just past its limit, on its side', () => {
    const past = AT_THE_LIMITS.map((row) => {
      if (row.target !== 'gateway') return row;
      const v = row.vs_bare;
      return {
        ...row,
        vs_bare: {
          cpu_ratio: v.cpu_ratio! + 0.01,
          throughput_ratio: v.throughput_ratio! - 0.01,
          added_p50_ms: (v.added_p50_ms ?? 0) + 0.01,
          added_ttfb_ms: (v.added_ttfb_ms ?? 0) + 0.01,
        },
      };
    });
    const { verdicts, table } = judged(past, { records: 9, calls: 10 }, 'embedded');
    expect(verdicts.filter((v) => v.met !== false)).toEqual([]);
    expect(table).toContain('0 of 10 met');
    expect(table).toContain('| chat JSON CPU per call | chat-c64 | 1.51× | ≤ 1.50× | NOT MET |');
    expect(table).toContain('| a usage record for every call | the whole run | 9 records | = 10 calls | NOT MET |');
  });

  it('allows 10 % more on PostgreSQL', () => {
    const looser = AT_THE_LIMITS.map((row) => {
      if (row.target !== 'gateway') return row;
      const v = row.vs_bare;
      return {
        ...row,
        vs_bare: {
          cpu_ratio: v.cpu_ratio! * 1.09,
          throughput_ratio: v.throughput_ratio! * 0.91,
          added_p50_ms: (v.added_p50_ms ?? 0) * 1.09,
          added_ttfb_ms: (v.added_ttfb_ms ?? 0) * 1.09,
        },
      };
    });
    expect(
      judged(looser, { records: 1, calls: 1 }, 'embedded')
        .verdicts.filter((v) => v.met)
        .map((v) => v.target),
    ).toEqual(['a usage record for every call']);
    const onPostgres = judged(looser, { records: 1, calls: 1 }, 'postgresql');
    expect(onPostgres.verdicts.every((v) => v.met)).toBe(true);
    expect(verdictOf(onPostgres.verdicts, 'chat JSON CPU per call', 'chat-c64').limit).toBeCloseTo(1.65);
    expect(verdictOf(onPostgres.verdicts, 'native stream throughput', 'chat-sse-c64').limit).toBeCloseTo(0.81);
    expect(onPostgres.table).toContain('limits 10 % looser');
    expect(onPostgres.table).toContain('| added latency at c=1 (p50) | chat-c1 | +0.16 ms | ≤ +0.165 ms | met |');
    expect(onPostgres.table).toContain('| chat JSON CPU per call | chat-c64 | 1.64× | ≤ 1.65× | met |');
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

  describe('with the stack floor in the run (--floor)', () => {
    /** A chat c=64 cell: the figures a run measures, and the ratios to the bare proxy it derives. */
    const cell = (target: string, rps: number, cpu: number, bareRps = 20_000, bareCpu = 50) => ({
      scenario: 'chat-c64',
      label: 'chat JSON c=64',
      target,
      rps,
      cpu_us_per_req: cpu,
      vs_bare: { cpu_ratio: cpu / bareCpu, throughput_ratio: rps / bareRps, added_p50_ms: 0 },
    });
    const run = [cell('bare-proxy', 20_000, 50), cell('stack-floor', 15_400, 65), cell('gateway', 9_000, 110)];

    it("judges the floor's own figure against the same limit", () => {
      const { verdicts, table } = judged(run, { records: 1, calls: 1 }, 'embedded', { oneCore: true });
      expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64').floor).toEqual({ value: 1.3, met: true });
      expect(verdictOf(verdicts, 'chat JSON throughput', 'chat-c64').floor).toEqual({ value: 0.77, met: false });
      expect(table).toContain('| target | scenario | gateway | limit | | stack floor alone |');
      expect(table).toContain('| chat JSON CPU per call | chat JSON c=64 | 2.20× | ≤ 1.50× | NOT MET | 1.30× met |');
      expect(table).toContain('| chat JSON throughput | chat JSON c=64 | 0.45× | ≥ 0.80× | NOT MET | 0.77× NOT MET |');
      expect(table).toContain('| a usage record for every call | the whole run | 1 records | = 1 calls | met | – |');
    });

    it("says what a CPU limit and, on one core, a throughput limit leave for the gateway's own work", () => {
      const { verdicts, table } = judged(run, { records: 1, calls: 1 }, 'postgresql', { oneCore: true });
      // 1.65 x 50 µs = 82.5 µs per call; the floor's 65 leave 17.5; the gateway's own work is 110 - 65.
      expect(verdictOf(verdicts, 'chat JSON CPU per call', 'chat-c64').allowance).toEqual({
        cpu_us_per_call: 82.5,
        floor_cpu_us: 65,
        left_us: 17.5,
        gateway_own_us: 45,
      });
      // 0.72 x 20,000 calls/s on one core: 1 s / 14,400 = 69.4 µs per call at most.
      const throughput = verdictOf(verdicts, 'chat JSON throughput', 'chat-c64').allowance!;
      expect(throughput.cpu_us_per_call).toBeCloseTo(69.44, 2);
      expect(throughput.left_us).toBeCloseTo(4.44, 2);
      expect(table).toContain(
        "- chat JSON CPU per call, chat JSON c=64: at most 82.5 µs per call; the stack floor takes 65.0 µs, which leaves 17.5 µs; the gateway's own work took 45.0 µs",
      );
      expect(table).toContain(
        "- chat JSON throughput, chat JSON c=64: at most 69.4 µs per call; the stack floor takes 65.0 µs, which leaves 4.4 µs; the gateway's own work took 45.0 µs",
      );
      // On the embedded database's 0.8x: 62.5 µs, under the floor's 65.
      expect(judged(run, { records: 1, calls: 1 }, 'embedded', { oneCore: true }).table).toContain(
        "- chat JSON throughput, chat JSON c=64: at most 62.5 µs per call; the stack floor takes 65.0 µs, 2.5 µs over it before the gateway does anything; the gateway's own work took 45.0 µs",
      );
    });

    it('gives no throughput allowance when the targets were not pinned to one core, and no floor column without the floor', () => {
      const unpinned = judged(run, { records: 1, calls: 1 }, 'embedded');
      expect(verdictOf(unpinned.verdicts, 'chat JSON throughput', 'chat-c64').allowance).toBeUndefined();
      expect(verdictOf(unpinned.verdicts, 'chat JSON CPU per call', 'chat-c64').allowance).toBeDefined();
      const withoutFloor = judged(
        run.filter((r) => r.target !== 'stack-floor'),
        { records: 1, calls: 1 },
        'embedded',
        { oneCore: true },
      );
      expect(withoutFloor.verdicts.some((v) => v.floor || v.allowance)).toBe(false);
      expect(withoutFloor.table).not.toContain('stack floor');
    });
  });
});
