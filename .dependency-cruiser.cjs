/**
 * Import rules of the source tree (`npm run lint:deps`, run by CI). The folders are the
 * architecture (docs/architecture.md); these rules keep them from growing into each other.
 */
const FEATURES = '^src/(admin|auth|catalog|chat|console|forwarding|health|images|metering|observability|speech|translation|upstream|video)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle makes load order matter and hides which module owns what.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'translation-stands-alone',
      severity: 'error',
      comment: 'Protocol translation is pure: wire formats in, wire formats out, nothing of the gateway.',
      from: { path: '^src/translation/' },
      to: { path: '^src/', pathNot: '^src/translation/' },
    },
    {
      name: 'base-imports-no-feature',
      severity: 'error',
      comment: 'common/, config/ and request-body/ sit under every feature and import none of them.',
      from: { path: '^src/(common|config|request-body)/' },
      to: { path: FEATURES },
    },
    {
      name: 'console-page-speaks-only-http',
      severity: 'error',
      comment: 'The console page (console/) runs in the browser and knows the server only by its admin API.',
      from: { path: '^console/' },
      to: { path: '^(src|test|scripts)/' },
    },
    {
      name: 'server-does-not-import-the-page',
      severity: 'error',
      comment: 'The server serves the built page (dist/console) and never imports its sources.',
      from: { path: '^(src|scripts)/' },
      to: { path: '^console/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '__fixtures__' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
