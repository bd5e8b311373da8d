import { aroundAll } from 'vitest';
import { testIds } from './test-ids.js';

// vitest's setupFiles entry: every test file leaves the shared Redis as it found it, the keys
// under the Redis prefixes it made (randomId('herald_test')) going once its last test has run
// and its fixtures are closed (around the file, not after it: file fixtures close after afterAll).
// It imports the built modules, the instances the tests import as @herald/testkit; the index (and
// with it the Redis client) only when there are keys to delete: most unit tests never load it.
aroundAll(async (runFile) => {
  await runFile();
  if (testIds.size === 0) return;
  const { deleteTestRedisKeys } = await import('./index.js');
  await deleteTestRedisKeys();
});
