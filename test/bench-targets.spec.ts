import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm run bench` judges issue 4's targets on its own run (bench/targets.mjs). The module is
 * ES, so it is called in a child process, as bench/run.mjs calls it.
 */
interface Verdict {
  target: string;
  scenario: string | null;
  value: number | null;
  limit: number;
  met: boolean | null;
}

const TARGETS_MODULE = join(__dirname, '..', 'bench', 'targets.mjs');

function judged(summary: unknown[], usage: { records: number; calls: number }, database: string): { verdicts: Verdict[]; table: string } {
  const script = `
    const { judge, targetsTable } = await import(${JSON.stringify(TARGETS_MODULE)});
    const [summary, usage, database] = JSON.parse(process.argv[1]);
    const verdicts = judge(summary, usage, database);
    process.stdout.write(JSON.stringify({ verdicts, table: targetsTable(verdicts, database) }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([summary, usage, database])], { encoding: 'utf8' });
  return JSON.parse(out) as { verdicts: Verdict[]; table: string };
}

type Ratios = { cpu_ratio?: number; throughput_ratio?: number; added_p50_ms?: number; added_ttfb_ms?: number | null };
const gateway = (scenario: string, vs_bare: Ratios) => ({ scenario, label: scenario, target: 'gateway', vs_bare });
const bare = (scenario: string) => ({ scenario, label: scenario, target: 'bare-proxy', vs_bare: { cpu_ratio: 1, throughput_ratio: 1, added_p50_ms: 0, added_ttfb_ms: 0 } });

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

describe('bench: issue 4 targets judged on a run', () => {
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
      return { ...row, vs_bare: { cpu_ratio: v.cpu_ratio! + 0.01, throughput_ratio: v.throughput_ratio! - 0.01, added_p50_ms: (v.added_p50_ms ?? 0) + 0.01, added_ttfb_ms: (v.added_ttfb_ms ?? 0) + 0.01 } };
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
      return { ...row, vs_bare: { cpu_ratio: v.cpu_ratio! * 1.09, throughput_ratio: v.throughput_ratio! * 0.91, added_p50_ms: (v.added_p50_ms ?? 0) * 1.09, added_ttfb_ms: (v.added_ttfb_ms ?? 0) * 1.09 } };
    });
    expect(judged(looser, { records: 1, calls: 1 }, 'embedded').verdicts.filter((v) => v.met).map((v) => v.target)).toEqual(['a usage record for every call']);
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
});
