import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The fault-injection suite (docs/reliability.md): its files mostly wait on the processes they
 * start, kill and restart (faults.int.test.ts, the one- and two-process stacks; many.int.test.ts,
 * the many-process one; flow.int.test.ts).
 */
const FAULTS = 'services/standalone/src/faults/**/*.test.ts';

/**
 * Files at once. The fault suite's one- and two-process file takes a lane of its own, beside the
 * two that the rest of the files share on this two-core machine.
 */
const MAX_WORKERS = 3;

/** The many-process faults (seven Herald processes and a gateway at once). */
const MANY = /faults\/many\.int\.test\.ts$/;

/**
 * The fault suite first (the longest file, so the others fill the lanes around it), and its
 * many-process file last, when the rest of the suite has (mostly) finished: run beside the other
 * fault file and two more, its seven processes starved the others' restarts on two cores.
 */
class FaultsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isMany = (file: TestSpecification): boolean => MANY.test(file.moduleId);
    const isFaults = (file: TestSpecification): boolean =>
      file.project.name === 'faults' && !isMany(file);
    return [
      ...sorted.filter(isFaults),
      ...sorted.filter((file) => !isFaults(file) && !isMany(file)),
      ...sorted.filter(isMany),
    ];
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
