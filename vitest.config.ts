import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The fault-injection suite (docs/reliability.md): its files mostly wait on the processes they
 * start, kill and restart (faults.int.test.ts, the one- and two-process stacks; many.int.test.ts,
 * the many-process one; flow.int.test.ts).
 */
const FAULTS = 'services/standalone/src/faults/**/*.test.ts';

/**
 * Files at once. The fault suite's two long files take a lane each, beside the two that the rest
 * of the files share on this two-core machine (flow.int.test.ts, short, runs in one of those).
 */
const MAX_WORKERS = 4;

/** The fault suite first (the longest files, so the others fill the lanes around them). */
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
