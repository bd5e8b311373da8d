import { aroundAll } from 'vitest';
import { fileEndTasks } from './file-end.js';
import { testIds } from './test-ids.js';

// vitest's setupFiles entry: every test file leaves the shared Redis as it found it, the keys
// under the Redis prefixes it made (randomId('herald_test')) going once its last test has run
// and its fixtures are closed (around the file, not after it: file fixtures close after afterAll).
// It imports the built modules, the instances the tests import as @herald/testkit; the index (and
// with it the Redis client) only when there are keys to delete: most unit tests never load it.
// Then what the file's helpers left to undo (fileEndTasks: the embedded PostgreSQL its tests
// shared).
aroundAll(async (runFile) => {
  await runFile();
  for (const task of [...fileEndTasks.values()]) await task();
  if (testIds.size === 0) return;
  const { deleteTestRedisKeys } = await import('./index.js');
  await deleteTestRedisKeys();
});
