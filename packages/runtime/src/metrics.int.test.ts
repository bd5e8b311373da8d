import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDb, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  randomId,
  serve,
  silentLogger,
  startTcpProxy,
  testRedisCoordination,
  type TcpProxy,
  type TestServer,
} from '@herald/testkit';
import { createPostgresCoordination } from './coordination.js';
import { createOpsApp } from './http/create-api-app.js';
import { createMetrics } from './metrics.js';
import { createRedis, type Redis } from './redis.js';

// Postgres and Redis reached through proxies of the test's own, cut and restored: an outage of
// either as /metrics reports it, without touching the shared servers.
let pgProxy: TcpProxy;
let redisProxy: TcpProxy;
let db: Db;
let redis: Redis;
let server: TestServer;

const proxyTo = (url: string, defaultPort: number) =>
  startTcpProxy({ host: new URL(url).hostname, port: Number(new URL(url).port || defaultPort) });

beforeAll(async () => {
  pgProxy = await proxyTo(TEST_DATABASE_URL, 5432);
  redisProxy = await proxyTo(TEST_REDIS_URL, 6379);
  db = createPostgresDb({ connectionString: pgProxy.url(TEST_DATABASE_URL), maxConnections: 2 });
  const logger = silentLogger();
  redis = createRedis(redisProxy.url(TEST_REDIS_URL), 'producer', logger);
  server = await serve(
    createOpsApp({
      db,
      coordination: testRedisCoordination(redis),
      logger,
      metrics: createMetrics({ defaultMetrics: false }),
      lifecycle: { draining: false },
      docsUrl: 'https://docs.test/errors',
    }),
  );
});

afterAll(async () => {
  await server.close();
  redis.disconnect();
  await db.close();
  await pgProxy.close();
  await redisProxy.close();
});

const scrape = async () => (await fetch(`${server.url}/metrics`)).text();
const up = async (dependency: string) =>
  new RegExp(`^herald_dependency_up\\{dependency="${dependency}"\\} (\\d)$`, 'm').exec(
    await scrape(),
  )?.[1];

describe('/metrics', () => {
  it('says which Herald runs', async () => {
    const { version } = JSON.parse(
      readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(await scrape()).toContain(
      `herald_build_info{version="${version}",node_version="${process.version}"} 1`,
    );
  });

  it('reports Postgres and Redis unreachable while they are, and back once they are', async () => {
    await expect.poll(() => up('postgres')).toBe('1');
    await expect.poll(() => up('redis')).toBe('1');

    await pgProxy.cut();
    expect(await up('postgres')).toBe('0');
    await redisProxy.cut();
    await expect.poll(() => up('redis')).toBe('0');
    expect(await up('postgres')).toBe('0');

    await pgProxy.restore();
    await redisProxy.restore();
    await expect.poll(() => up('postgres'), { timeout: 10_000 }).toBe('1');
    await expect.poll(() => up('redis'), { timeout: 10_000 }).toBe('1');
  });

  it('on Postgres alone reports Postgres only: no Redis is configured to be down', async () => {
    const coordination = createPostgresCoordination({
      db,
      url: TEST_DATABASE_URL,
      prefix: randomId('herald_test'),
      logger: silentLogger(),
    });
    const alone = await serve(
      createOpsApp({
        db,
        coordination,
        logger: silentLogger(),
        metrics: createMetrics({ defaultMetrics: false }),
        lifecycle: { draining: false },
        docsUrl: 'https://docs.test/errors',
      }),
    );
    try {
      const text = await (await fetch(`${alone.url}/metrics`)).text();
      expect(text).toMatch(/^herald_dependency_up\{dependency="postgres"\} 1$/m);
      expect(text).not.toContain('dependency="redis"');
    } finally {
      await alone.close();
      await coordination.close();
    }
  });
});
