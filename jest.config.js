/** Unit specs sit beside the code (src/**\/*.spec.ts); e2e suites in test/ boot the real app. */
const { tmpdir } = require('node:os');
const { join } = require('node:path');

// The gateway and command processes the suites start (about a hundred a run) inherit this and
// keep Node's compiled code between starts, so each start spends less CPU compiling modules.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'model-gateway-test-compile-cache');

module.exports = {
  rootDir: '.',
  // Node's own realm, with packages loaded once per worker instead of once per test file; the
  // gateway's modules and the tests still load fresh for each file (test/jest/).
  testEnvironment: '<rootDir>/test/jest/node-realm-environment.js',
  runtime: '<rootDir>/test/jest/shared-packages-runtime.js',
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // Transpile only, with swc: `npm test` type-checks the whole project with tsc before jest
  // runs. The options mirror tsconfig.json (ES2022 classes without define semantics, legacy
  // decorators with the metadata Nest's injection reads).
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          target: 'es2022',
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
          keepClassNames: true,
        },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
  testTimeout: 30000,
  // `npm run jest` starts Node with --no-wasm-code-gc, which the workers inherit. A worker opens
  // and closes hundreds of embedded databases (PGlite, WebAssembly, each in a thread of its
  // own), and freeing their unused code from several threads can trip a check in Node 24's V8
  // (`jit_page_->allocations_.erase(addr) == 1` in ThreadIsolation::UnregisterWasmAllocation)
  // and kill the worker. Without the code collector a module's code is freed with the module.
  maxWorkers: 2,
};
