/**
 * Cluster suites (`npm run test:cluster`): built gateway processes on a PostgreSQL cluster the
 * test owns (stopped and started by it), behind nginx. They need Debian's postgresql and nginx
 * packages, so `npm test` leaves them out; `.ci/run` installs both and runs them.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/cluster/**/*.cluster-spec.ts'],
  testTimeout: 120000,
  // One suite at a time: each runs two gateways, nginx and a PostgreSQL server on two cores.
  maxWorkers: 1,
};
