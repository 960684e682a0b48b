/**
 * Browser suites (`npm run test:browser`): the built gateway driven through its console in
 * headless Chromium (Debian's `chromium` package, driven by playwright-core). `npm test` leaves
 * them out because they need that browser; `.ci/run` installs it and runs them.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  // One suite: loading packages once per worker (jest.config.js) saves nothing here.
  testEnvironment: 'node',
  runtime: undefined,
  testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'],
  testTimeout: 120000,
  maxWorkers: 1,
};
