import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb, randomId, testRedis, type TestDb } from '@herald/testkit';
import { readDeploymentId } from '@herald/store';
import { DeploymentConflictError, claimDeployment, deploymentKey } from './deployment.js';
import type { Redis } from './redis.js';

let ours: TestDb;
let theirs: TestDb;
let redis: Redis;
const prefix = randomId('herald_test');

beforeAll(async () => {
  [ours, theirs] = await Promise.all([createTestDb(), createTestDb()]);
  redis = testRedis();
});

afterAll(async () => {
  await redis.del(deploymentKey(prefix));
  await redis.quit();
  await Promise.all([ours.cleanup(), theirs.cleanup()]);
});

describe('a deployment claims its Redis prefix', () => {
  it('at first start, then again at every start of the same deployment', async () => {
    expect(await claimDeployment(ours.db, redis, prefix)).toBe('written');
    expect(await redis.get(deploymentKey(prefix))).toBe(await readDeploymentId(ours.db));
    expect(await claimDeployment(ours.db, redis, prefix)).toBe('claimed');
  });

  it('refuses another database on the same prefix, naming REDIS_PREFIX', async () => {
    const refused = claimDeployment(theirs.db, redis, prefix);
    await expect(refused).rejects.toBeInstanceOf(DeploymentConflictError);
    await expect(claimDeployment(theirs.db, redis, prefix)).rejects.toThrow(/REDIS_PREFIX/);
    // The first deployment keeps its claim.
    expect(await redis.get(deploymentKey(prefix))).toBe(await readDeploymentId(ours.db));
    // Another prefix is free.
    const other = randomId('herald_test');
    expect(await claimDeployment(theirs.db, redis, other)).toBe('written');
    await redis.del(deploymentKey(other));
  });

  it('claims again after Redis lost its keys, and says so', async () => {
    await redis.del(deploymentKey(prefix));
    expect(await claimDeployment(ours.db, redis, prefix)).toBe('written');
    expect(await redis.get(deploymentKey(prefix))).toBe(await readDeploymentId(ours.db));
  });
});
