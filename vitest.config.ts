import { configDefaults, defineConfig } from 'vitest/config';

/** The fault-injection suite (README "Reliability"): timing-sensitive, so it runs alone. */
const FAULTS = 'services/standalone/src/faults/**/*.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // Each test file deletes the Redis keys of the prefixes it made (testkit's vitest-setup).
    setupFiles: ['./packages/testkit/dist/vitest-setup.js'],
    // The PGlite templates that test databases are copied from, made once per run.
    globalSetup: ['./packages/testkit/dist/vitest-global-setup.js'],
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'herald',
          include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts'],
          exclude: [...configDefaults.exclude, FAULTS],
          // Every integration test isolates itself (fresh schema, random Redis prefix), so files
          // run in parallel; two cores is all this machine has.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: [FAULTS],
          // After every other file (a higher group), alone: its recovery times are measured, and
          // it stops and restarts servers of its own that nothing else must compete with.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
