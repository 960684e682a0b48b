import { runInThisContext } from 'node:vm';
import { Agent } from 'undici';

/**
 * The test runtime of `npm test` (test/jest/): files run in Node's own realm, packages come from
 * Node's require (kept for the worker's next files), fake timers are refused there, and the
 * workers run without V8's WebAssembly code collector.
 */
describe('the test runtime', () => {
  it("runs a test file in Node's own realm", () => {
    expect(globalThis).toBe(runInThisContext('globalThis'));
  });

  it("gives a package from Node's own module cache, where the worker's next files find it", () => {
    // Node's cache, not jest's: the module class of the worker's own entry module has it.
    const nodeCache = (process.mainModule!.constructor as unknown as { _cache: Record<string, NodeJS.Module | undefined> })._cache;
    expect(nodeCache[require.resolve('undici')]?.exports.Agent).toBe(Agent);
  });

  it("refuses fake timers, naming the sandbox's docblock", () => {
    expect(() => jest.useFakeTimers()).toThrow(/@jest-environment node/);
  });

  it("runs without V8's WebAssembly code collector (jest.config.js says why)", () => {
    expect(process.execArgv).toContain('--no-wasm-code-gc');
  });
});
