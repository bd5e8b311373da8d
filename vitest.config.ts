import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The fault-injection suite (docs/reliability.md): one file, mostly waiting on its processes. */
const FAULTS = 'services/standalone/src/faults/**/*.test.ts';

/**
 * Files at once. The fault suite spends most of its ~90 s waiting on the processes it starts,
 * kills and restarts, so it takes a lane of its own beside the two that the rest of the files
 * share on this two-core machine.
 */
const MAX_WORKERS = 3;

/** The fault suite first (the longest file, so the others fill the lanes around it). */
class FaultsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isFaults = (file: TestSpecification): boolean => file.project.name === 'faults';
    return [...sorted.filter(isFaults), ...sorted.filter((file) => !isFaults(file))];
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    // Each test file deletes the Redis keys of the prefixes it made (testkit's vitest-setup), and
    // every answer the tests receive is checked against the OpenAPI document.
    setupFiles: [
      './packages/testkit/dist/vitest-setup.js',
      './services/standalone/test/openapi-responses.setup.ts',
    ],
    hookTimeout: 60_000,
    pool: 'forks',
    sequence: { sequencer: FaultsFirst },
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
          // run in parallel.
          maxWorkers: MAX_WORKERS,
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
          // Beside the other files (one group, so one worker count): it stops and restarts
          // Postgres and Redis servers of its own, never the shared ones the others use.
          maxWorkers: MAX_WORKERS,
        },
      },
    ],
  },
});
