// Builds the operator console (console/) into dist/console: one script, one style sheet and the
// page, bundled and minified by esbuild. Run by `npm run build`.
import { build } from 'esbuild';
import { copyFile, mkdir, readFile, rm } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console');

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await build({
  entryPoints: [
    { in: join(root, 'console', 'src', 'main.tsx'), out: 'app' },
    { in: join(root, 'console', 'styles.css'), out: 'app' },
  ],
  outdir: out,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
await copyFile(join(root, 'console', 'index.html'), join(out, 'index.html'));
const script = await readFile(join(out, 'app.js'));
console.log(`console: dist/console/app.js ${(gzipSync(script).length / 1024).toFixed(0)} KiB gzipped`);
