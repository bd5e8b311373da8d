import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  createTestDb,
  randomId,
  silentLogger,
  startTcpProxy,
  testRedis,
  testRedisCoordination,
  type TestDb,
} from '@herald/testkit';
import { createPostgresCoordination, type Coordination } from '../coordination.js';
import { createRedis, type Redis } from '../redis.js';
import { RATE_LIMIT_LEASE_MAX, RateLimiter, type RateLimits } from './rate-limit.js';

/** A producer connection refuses commands until it is ready (enableOfflineQueue: false). */
async function ready(client: Redis): Promise<Redis> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

let redis: Redis;
let testDb: TestDb;
beforeAll(async () => {
  redis = await ready(testRedis());
  testDb = await createTestDb();
});
afterAll(async () => {
  await redis.quit();
  await testDb.cleanup();
});

/** Each store: a coordination on it, and the count it holds for a key. */
const stores = {
  redis: {
    open: (): Coordination => testRedisCoordination(redis),
    counted: (key: string) => redis.get(key),
  },
  postgres: {
    // Only the windows' statements: no queues, no LISTEN.
    open: (): Coordination =>
      createPostgresCoordination({
        db: testDb.db,
        url: TEST_DATABASE_URL,
        prefix: randomId('herald_test'),
        logger: silentLogger(),
      }),
    async counted(key: string) {
      const { rows } = await testDb.db.query<{ counted: string }>(
        'SELECT counted FROM rate_limit_windows WHERE key = $1',
        [key],
      );
      return rows[0]?.counted ?? null;
    },
  },
};

function limits(producer: number): RateLimits {
  return { windowMs: 60_000, perRole: { admin: 1, read_only: 1, producer }, anonymous: 1 };
}

/** A key prefix of this test's own (randomId('herald_test'): deleted after the file). */
const prefix = () => `${randomId('herald_test')}:rl:`;

describe.each(['redis', 'postgres'] as const)('RateLimiter leases (%s)', (mode) => {
  const store = stores[mode];
  let coordination: Coordination;
  beforeAll(() => {
    coordination = store.open();
  });
  afterAll(() => coordination.close());

  it('asks the store once per lease, and answers the lease from memory with exact headers', async () => {
    const keys = prefix();
    const limiter = new RateLimiter(coordination, limits(1000), keys);
    const remaining: number[] = [];
    for (let i = 0; i < 62; i++)
      remaining.push((await limiter.hit('token:1', 'producer'))!.remaining);
    // 1000 / 16 = 62 requests in the first lease: counted in the store at once.
    expect(await store.counted(`${keys}token:1`)).toBe('62');
    expect(remaining).toEqual(Array.from({ length: 62 }, (_, i) => 999 - i));
    const next = await limiter.hit('token:1', 'producer');
    expect(next).toMatchObject({ remaining: 937, exceeded: false });
    // The next lease: 938 left in the window, 938 / 16 = 58.
    expect(await store.counted(`${keys}token:1`)).toBe(String(62 + 58));
  });

  it('leases at most RATE_LIMIT_LEASE_MAX requests', async () => {
    const keys = prefix();
    await new RateLimiter(coordination, limits(1_000_000), keys).hit('token:1', 'producer');
    expect(await store.counted(`${keys}token:1`)).toBe(String(RATE_LIMIT_LEASE_MAX));
  });

  it('never lets more than the limit through across processes, one request at a time near it', async () => {
    const keys = prefix();
    // Three processes' limiters on one store, hitting one token's window together.
    const processes = [0, 1, 2].map(() => new RateLimiter(coordination, limits(200), keys));
    const results = await Promise.all(
      Array.from({ length: 600 }, (_, i) => processes[i % 3]!.hit('token:1', 'producer')),
    );
    const allowed = results.filter((r) => r && !r.exceeded).length;
    expect(allowed).toBeLessThanOrEqual(200);
    // What the others may have leased and not used: under 1/16 of the window each.
    expect(allowed).toBeGreaterThanOrEqual(200 - 3 * Math.ceil(200 / 16));
    expect(results.filter((r) => r?.exceeded)).toHaveLength(600 - allowed);
  });

  it('answers the refusals of a full window from memory until it ends', async () => {
    const keys = prefix();
    const limiter = new RateLimiter(coordination, limits(3), keys);
    for (let i = 0; i < 3; i++) {
      expect(await limiter.hit('token:1', 'producer')).toMatchObject({ exceeded: false });
    }
    for (let i = 0; i < 5; i++) {
      expect(await limiter.hit('token:1', 'producer')).toMatchObject({
        exceeded: true,
        remaining: 0,
      });
    }
    // The first refusal was counted; the others asked nothing.
    expect(await store.counted(`${keys}token:1`)).toBe('4');
  });
});

describe('RateLimiter leases (redis)', () => {
  it('serves a lease it holds while Redis is away, then lets requests through unlimited', async () => {
    const keys = prefix();
    const url = new URL(TEST_REDIS_URL);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 6379) });
    const through = await ready(
      createRedis(proxy.url(TEST_REDIS_URL), 'producer', silentLogger(), {
        retryStrategy: () => null,
      }),
    );
    try {
      const limiter = new RateLimiter(testRedisCoordination(through), limits(160), keys);
      expect(await limiter.hit('token:1', 'producer')).toMatchObject({ remaining: 159 });
      await proxy.cut();
      await expect.poll(() => through.status).toBe('end');
      // 160 / 16 = 10 leased: 9 left, answered with their headers.
      for (let i = 0; i < 9; i++) {
        expect(await limiter.hit('token:1', 'producer')).toMatchObject({ remaining: 158 - i });
      }
      expect(await limiter.hit('token:1', 'producer')).toBeUndefined();
    } finally {
      through.disconnect();
      await proxy.close();
    }
  });
});
