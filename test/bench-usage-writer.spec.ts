import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * `npm run bench:usage-writer` drives the built usage writer (`dist/`, which `npm test` builds
 * first) with hand-made collaborators, so a change of the writer's constructor or of a usage
 * record's fields breaks it without a type error anywhere. A small run on the embedded engine
 * keeps it working: the script checks every record and the daily totals itself and exits
 * non-zero when one is missing.
 */
const SCRIPT = join(__dirname, '..', 'bench', 'usage-writer.mjs');

describe('bench: the usage writer benchmark', () => {
  it('stores every record it enqueues, in batches, on the embedded engine', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [SCRIPT, '--embedded', '--records', '300', '--batch-size', '50'], {
      cwd: join(__dirname, '..'),
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^300 usage records on embedded PGlite \(memory\): [\d.]+ s, \d+ records\/s \(batches of 50, \d+ cores\)$/m);
  }, 90_000);
});
