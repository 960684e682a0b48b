import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The gateway runs with glibc's allocator tuned (docs/operations.md "Memory"): `npm start`, the Docker
 * image and the bench scripts, which measure the gateway as it is deployed, must name the same
 * tuning.
 */
describe('allocator tuning', () => {
  const root = join(__dirname, '..');
  const read = (file: string) => readFileSync(join(root, file), 'utf8');
  const tunablesIn = (text: string): string[] => [...text.matchAll(/glibc\.malloc\.[a-z_]+=\d+(?::glibc\.malloc\.[a-z_]+=\d+)*/g)].map((match) => match[0]);

  const fromPackage = tunablesIn(JSON.parse(read('package.json')).scripts.start as string);
  const fromDocker = tunablesIn(
    read('Dockerfile')
      .split('\n')
      .filter((line) => line.startsWith('ENV '))
      .join('\n'),
  );
  const fromBench = tunablesIn(read('bench/gateway-env.mjs'));
  const fromSharedHarnessRecipe = tunablesIn(read('bench/README.md'));

  it('npm start sets two arenas and a 128 KiB mmap threshold unless GLIBC_TUNABLES is set', () => {
    const start = JSON.parse(read('package.json')).scripts.start as string;
    expect(start).toMatch(/^GLIBC_TUNABLES=\$\{GLIBC_TUNABLES-glibc\.[^}]+\} node dist\/src\/main\.js$/);
    expect(fromPackage).toEqual(['glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072']);
  });

  it('the Docker image and the bench scripts use the same tuning', () => {
    expect(fromDocker).toEqual(fromPackage);
    expect(fromBench).toEqual(fromPackage);
  });

  it('the recipe for the shared harness starts the gateway with the same tuning', () => {
    expect(fromSharedHarnessRecipe).toEqual(fromPackage);
  });
});
