/** Unit specs sit beside the code (src/**\/*.spec.ts); e2e suites in test/ boot the real app. */
module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // Transpile only: `npm test` type-checks the whole project with tsc before jest runs.
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.spec.json' }] },
  testTimeout: 30000,
  maxWorkers: 2,
};
