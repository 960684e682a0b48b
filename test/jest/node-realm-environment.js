// The test environment of `npm test`: Node's own global scope instead of a fresh vm context per
// test file (see shared-packages-runtime.js for why). What a suite changes in that scope is put
// back when it ends: the environment variables, process.exit, the console and any global it
// added. Fake timers are refused here: a file that fakes them runs in jest's own sandbox.
const vm = require('node:vm');
const { readFileSync, writeFileSync, existsSync } = require('node:fs');
const { ModuleMocker } = require('jest-mock');
const { LegacyFakeTimers, ModernFakeTimers } = require('@jest/fake-timers');

// What jest-util's installCommonGlobals keeps for Jest's own use; defined once per worker.
if (!Object.prototype.hasOwnProperty.call(globalThis, Symbol.for('jest-native-promise'))) {
  Object.defineProperties(globalThis, {
    [Symbol.for('jest-native-promise')]: { value: Promise },
    [Symbol.for('jest-native-now')]: { value: Date.now.bind(Date) },
    [Symbol.for('jest-native-read-file')]: { value: readFileSync },
    [Symbol.for('jest-native-write-file')]: { value: writeFileSync },
    [Symbol.for('jest-native-exists-file')]: { value: existsSync },
    'jest-symbol-do-not-touch': { value: Symbol },
  });
}

// Jest asks the environment for a vm context; the runtime runs code in Node's own instead.
const unusedContext = vm.createContext();

const SANDBOX_FOR_FAKE_TIMERS =
  "Fake timers on Node's own global would stay in the clocks packages keep between test files: fake them in jest's own sandbox, with a `@jest-environment node` docblock (test/jest/shared-packages-runtime.js).";

/** Refuses fake timers here, with the way to have them. */
class RefusedLegacyFakeTimers extends LegacyFakeTimers {
  useFakeTimers() {
    throw new Error(SANDBOX_FOR_FAKE_TIMERS);
  }
}
class RefusedModernFakeTimers extends ModernFakeTimers {
  useFakeTimers() {
    throw new Error(SANDBOX_FOR_FAKE_TIMERS);
  }
}

class NodeRealmEnvironment {
  constructor(config) {
    const { projectConfig } = config;
    this.global = globalThis;
    this.moduleMocker = new ModuleMocker(globalThis);
    this.fakeTimers = new RefusedLegacyFakeTimers({
      config: projectConfig,
      global: globalThis,
      moduleMocker: this.moduleMocker,
      timerConfig: { idToRef: (id) => ({ id, ref: () => this, unref: () => this }), refToId: (timer) => timer?.id },
    });
    this.fakeTimersModern = new RefusedModernFakeTimers({ config: projectConfig, global: globalThis });
  }

  async setup() {
    this.saved = {
      env: { ...process.env },
      exit: process.exit,
      console: globalThis.console,
      globals: new Set(Reflect.ownKeys(globalThis)),
      stackTraceLimit: Error.stackTraceLimit,
    };
    Error.stackTraceLimit = 100;
  }

  async teardown() {
    this.fakeTimers?.dispose();
    this.fakeTimersModern?.dispose();
    this.fakeTimers = this.fakeTimersModern = null;
    const { env, exit, console, globals, stackTraceLimit } = this.saved;
    for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
    Object.assign(process.env, env);
    process.exit = exit;
    globalThis.console = console;
    for (const key of Reflect.ownKeys(globalThis)) {
      if (!globals.has(key) && Object.getOwnPropertyDescriptor(globalThis, key)?.configurable) delete globalThis[key];
    }
    Error.stackTraceLimit = stackTraceLimit;
  }

  exportConditions() {
    return ['node', 'node-addons'];
  }

  getVmContext() {
    return unusedContext;
  }
}

module.exports = NodeRealmEnvironment;
