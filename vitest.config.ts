import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The fault-injection suite (docs/reliability.md): its files mostly wait on the processes they
 * start, kill and restart (faults.int.test.ts, the one- and two-process stacks; many.int.test.ts,
 * the many-process one; flow.int.test.ts).
 */
const FAULTS = 'services/standalone/src/faults/**/*.test.ts';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // expect.poll waits as long as testkit's waitFor (WAIT_TIMEOUT_MS), not 1 s: on a busy
    // machine a few passes of a worker take longer than that.
    expect: { poll: { timeout: 20_000 } },
    // Each test file deletes the Redis keys of the prefixes it made (testkit's vitest-setup), and
    // every answer the tests receive is checked against the OpenAPI document.
    setupFiles: [
      './packages/testkit/dist/vitest-setup.js',
      './services/standalone/test/openapi-responses.setup.ts',
    ],
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'herald',
          include: [
            'packages/*/src/**/*.test.ts',
            'services/*/src/**/*.test.ts',
            'scripts/**/*.test.ts',
          ],
          exclude: [...configDefaults.exclude, FAULTS],
          // Every integration test isolates itself (fresh schema, random Redis prefix), so files
          // run in parallel: three at once on this two-core machine, as they mostly wait on the
          // servers and processes they talk to.
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
          // A worker runs its files one after another in one module graph: each file imports
          // what an earlier one loaded already (pg, bullmq, express...), not all of it again. No
          // test mocks modules or stubs globals, and each builds its own app and registry.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: [FAULTS],
          // After the other files, one file at a time: each fault judges how Herald recovers
          // against the pace it kept just before, and runs up to seven Herald processes, Postgres
          // and Redis servers of its own (never the shared ones). Beside other files on two cores
          // their restarts were starved, the pace fell below the load's floor, and stalled
          // processes lost their leases (calls sent twice): failures of the machine, not Herald.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
