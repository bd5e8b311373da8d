/**
 * The `herald_test_…` ids this test file made (randomId): the Redis prefixes deleteTestRedisKeys
 * removes. A module of its own so that vitest-setup can tell, without loading the index, whether
 * there is anything to delete.
 */
export const testIds = new Set<string>();
