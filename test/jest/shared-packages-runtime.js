// Jest's module runtime for `npm test`, with packages loaded once per worker.
//
// Jest evaluates every module again for each test file, in a fresh vm context. For an e2e suite
// that is Nest, TypeORM, swagger and the three vendor SDKs before its first test: the largest
// fixed cost of the suite (README.md "Tests"). Here a package under node_modules is
// loaded by Node's own require and kept for the worker's next test files, while the gateway's
// modules and the tests still load fresh for each file, so no module state of ours crosses
// files. Everything runs in Node's own realm (node-realm-environment.js), as in production: a
// package and the gateway share one `Object`, `Error` and `Reflect`, which class-validator's
// `instanceof` checks and the decorator metadata Nest reads need.
//
// Spies a file put on a package's objects (Logger.prototype, NestFactory) are restored when the
// file ends. A file that fakes timers runs in jest's own sandbox instead (a `@jest-environment
// node` docblock, which this runtime honours by doing what jest-runtime does): fake timers on
// Node's global would stay in the clocks packages keep between files (undici's timer wheel,
// Node's fetch), and a later file's timeouts would never fire.
const vm = require('node:vm');
const Runtime = require('jest-runtime').default;

const PACKAGE = /[\\/]node_modules[\\/]/;

class SharedPackagesRuntime extends Runtime {
  constructor(config, environment, ...rest) {
    super(config, environment, ...rest);
    /** False for a file in jest's own sandbox (a vm context): everything as jest-runtime does it. */
    this.inNodeRealm = environment.global === globalThis;
  }

  requireModule(from, moduleName, options, isRequireActual) {
    if (this.inNodeRealm && moduleName && !options?.isInternalModule && !this._resolver.isCoreModule(moduleName)) {
      const path = this._resolveCjsModule(from, moduleName);
      if (PACKAGE.test(path)) return require(path);
    }
    return super.requireModule(from, moduleName, options, isRequireActual);
  }

  createScriptFromCode(source, filename) {
    if (!this.inNodeRealm) return super.createScriptFromCode(source, filename);
    // `import()` in a test or the gateway's code is Node's own: packages are all it imports.
    const script = new vm.Script(this.wrapCodeInModuleWrapper(source), {
      filename,
      columnOffset: this._fileTransforms.get(filename)?.wrapperLength,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    return { runInContext: (_context, options) => script.runInThisContext(options) };
  }

  teardown() {
    this._moduleMocker.restoreAllMocks();
    super.teardown();
  }
}

module.exports = SharedPackagesRuntime;
