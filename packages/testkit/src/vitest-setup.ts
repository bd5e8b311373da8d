import { afterAll } from 'vitest';
import { deleteTestRedisKeys } from './index.js';

// vitest's setupFiles entry: every test file leaves the shared Redis as it found it, the keys
// under the Redis prefixes it made (randomId('herald_test')) going once its last test has run.
// It imports the built index, the module instance the tests import as @herald/testkit.
afterAll(async () => {
  await deleteTestRedisKeys();
});
