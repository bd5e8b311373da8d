import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Every integration test isolates itself (fresh schema, random Redis prefix), so files run in
    // parallel; two cores is all this machine has.
    maxWorkers: 2,
  },
});
