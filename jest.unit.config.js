/**
 * The inner loop (`npm run test:unit`): the specs beside the code, without the ones that open a
 * database or start processes. `npm test` runs these and everything else.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/src/**/*.spec.ts'],
  testPathIgnorePatterns: [
    '/node_modules/',
    // PGlite in the test process: a database engine, not a pure module.
    '<rootDir>/src/database/embedded-pool.spec.ts',
    '<rootDir>/src/metering/quota.service.spec.ts',
    '<rootDir>/src/metering/usage-writer.service.spec.ts',
    '<rootDir>/src/admin/spend-audit.spec.ts',
    // Child processes holding and racing for the folder lock.
    '<rootDir>/src/database/data-dir-lock.spec.ts',
  ],
};
