import { aroundAll } from 'vitest';
import { deleteTestRedisKeys } from './index.js';

// vitest's setupFiles entry: every test file leaves the shared Redis as it found it, the keys
// under the Redis prefixes it made (randomId('herald_test')) going once its last test has run
// and its fixtures are closed (around the file, not after it: file fixtures close after afterAll).
// It imports the built index, the module instance the tests import as @herald/testkit.
aroundAll(async (runFile) => {
  await runFile();
  await deleteTestRedisKeys();
});
