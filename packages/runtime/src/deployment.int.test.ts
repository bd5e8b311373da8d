import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDb,
  randomId,
  testPostgresCoordination,
  testRedis,
  testRedisCoordination,
  type TestDb,
} from '@herald/testkit';
import { readDeploymentId } from '@herald/store';
import { queueSchema, type Coordination } from './coordination.js';
import { DeploymentConflictError, deploymentKey, legacyDeploymentKey } from './deployment.js';
import type { Redis } from './redis.js';

let ours: TestDb;
let theirs: TestDb;
let redis: Redis;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  [ours, theirs] = await Promise.all([createTestDb(), createTestDb()]);
  redis = testRedis();
});

afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await redis.quit();
  await Promise.all([ours.cleanup(), theirs.cleanup()]);
});

/** Each store: a coordination on a prefix, what it holds as the claim, and its loss. */
const stores = {
  redis: {
    open(prefix: string): Promise<Coordination> {
      cleanups.push(() => redis.del(deploymentKey(prefix)));
      return Promise.resolve(testRedisCoordination(redis, prefix));
    },
    claimed: (prefix: string) => redis.get(deploymentKey(prefix)),
    lose: (prefix: string) => redis.del(deploymentKey(prefix)),
  },
  postgres: {
    async open(prefix: string): Promise<Coordination> {
      const { coordination, cleanup } = await testPostgresCoordination(ours.db, prefix);
      cleanups.push(cleanup);
      return coordination;
    },
    async claimed(prefix: string) {
      const { rows } = await ours.db.query<{ comment: string | null }>(
        `SELECT obj_description(oid, 'pg_namespace') AS comment FROM pg_namespace
         WHERE nspname = $1`,
        [queueSchema(prefix)],
      );
      return rows[0]?.comment?.replace(/^herald deployment /, '') ?? null;
    },
    lose: (prefix: string) => ours.db.exec(`COMMENT ON SCHEMA "${queueSchema(prefix)}" IS NULL`),
  },
};

describe.each(['redis', 'postgres'] as const)('a deployment claims its prefix (%s)', (mode) => {
  const store = stores[mode];
  const prefix = randomId('herald_test');
  let coordination: Coordination;
  beforeAll(async () => {
    coordination = await store.open(prefix);
  });

  it('at first start, then again at every start of the same deployment', async () => {
    expect(await coordination.claimDeployment(ours.db)).toBe('written');
    expect(await store.claimed(prefix)).toBe(await readDeploymentId(ours.db));
    expect(await coordination.claimDeployment(ours.db)).toBe('claimed');
  });

  it('refuses another database on the same prefix, naming REDIS_PREFIX', async () => {
    const refused = coordination.claimDeployment(theirs.db);
    // By name: testkit's coordination throws the class of @herald/runtime's build.
    await expect(refused).rejects.toMatchObject({ name: DeploymentConflictError.name });
    await expect(coordination.claimDeployment(theirs.db)).rejects.toThrow(/REDIS_PREFIX/);
    // The first deployment keeps its claim.
    expect(await store.claimed(prefix)).toBe(await readDeploymentId(ours.db));
    // Another prefix is free.
    const other = await store.open(randomId('herald_test'));
    expect(await other.claimDeployment(theirs.db)).toBe('written');
  });

  it('claims again after the store lost its state, and says so', async () => {
    await store.lose(prefix);
    expect(await coordination.claimDeployment(ours.db)).toBe('written');
    expect(await store.claimed(prefix)).toBe(await readDeploymentId(ours.db));
  });
});

describe('a claim under the key of the earlier Herald (redis)', () => {
  it('refuses the prefix when it names another deployment, and is kept when it names this one', async () => {
    const prefix = randomId('herald_test');
    cleanups.push(() => redis.del(deploymentKey(prefix), legacyDeploymentKey(prefix)));
    const coordination = testRedisCoordination(redis, prefix);
    await redis.set(legacyDeploymentKey(prefix), await readDeploymentId(theirs.db));
    await expect(coordination.claimDeployment(ours.db)).rejects.toThrow(
      new RegExp(`delete the key "${legacyDeploymentKey(prefix)}"`),
    );

    await redis.set(legacyDeploymentKey(prefix), await readDeploymentId(ours.db));
    await redis.del(deploymentKey(prefix));
    expect(await coordination.claimDeployment(ours.db)).toBe('written');
    expect(await coordination.claimDeployment(ours.db)).toBe('claimed');
  });
});
