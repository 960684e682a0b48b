import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * A full `npm run bench` goes on to the long-stream scenarios after its table
 * (bench/long-run.mjs decides, bench/run.mjs runs bench/long-streams.mjs). The module is ES, so
 * it is called in a child process.
 */
const BENCH = join(__dirname, '..', 'bench');

function longArgs(opt: Record<string, string | boolean>, out = '/r/run'): string[] | null {
  const script = `
    const { longStreamsArgs } = await import(${JSON.stringify(join(BENCH, 'long-run.mjs'))});
    const [opt, out] = JSON.parse(process.argv[1]);
    process.stdout.write(JSON.stringify(longStreamsArgs(opt, out)));`;
  const text = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([opt, out])], { encoding: 'utf8' });
  return JSON.parse(text) as string[] | null;
}

describe('npm run bench and the long streams', () => {
  it('a full run goes on to them, writing under its own results folder', () => {
    expect(longArgs({ pin: 'auto', loadgen: 'auto', floor: true })).toEqual(['--out', '/r/run/long-streams', '--pin', 'auto']);
  });

  it('hands them the same database, the same embedded folder and the same pinning, nothing else', () => {
    const args = longArgs({
      'database-url': 'postgres://u@127.0.0.1:5432/db',
      'data-dir': 'memory',
      pin: 'off',
      duration: '5',
      reps: '3',
      chunks: '40',
    });
    expect(args).toEqual(['--out', '/r/run/long-streams', '--database-url', 'postgres://u@127.0.0.1:5432/db', '--data-dir', 'memory', '--pin', 'off']);
  });

  it('a short run (--quick, or chosen scenarios) leaves them out unless --long asks', () => {
    expect(longArgs({ quick: true })).toBeNull();
    expect(longArgs({ scenarios: 'chat-c1' })).toBeNull();
    expect(longArgs({ quick: true, long: true })).toEqual(['--out', '/r/run/long-streams']);
    expect(longArgs({ scenarios: 'chat-c1', long: true })).toEqual(['--out', '/r/run/long-streams']);
  });

  it('--no-long leaves them out of a full run', () => {
    expect(longArgs({ long: false })).toBeNull();
  });

  it('run.mjs takes --long and --no-long', () => {
    for (const flag of ['--long', '--no-long']) {
      const help = execFileSync(process.execPath, [join(BENCH, 'run.mjs'), flag, '--help'], { encoding: 'utf8' });
      expect(help).toContain('--no-long');
    }
  });
});
