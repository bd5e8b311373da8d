import { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDb } from '@herald/store';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  createTestDb,
  createTestToken,
  startTcpProxy,
  testDeps,
  testRedis,
  type TestDb,
} from '@herald/testkit';
import type { Redis } from 'ioredis';
import { createApiApp } from './http/create-api-app.js';
import { listen } from './http/listen.js';
import { openRedis } from './boot.js';
import { Lifecycle, closeServer } from './shutdown.js';
import { createLogger } from './logger.js';

let t: TestDb;
let redis: Redis;
let token: string;

beforeAll(async () => {
  t = await createTestDb();
  redis = testRedis();
  token = await createTestToken(t.db, 'admin');
});
afterAll(async () => {
  redis.disconnect();
  await t.cleanup();
});

describe('graceful shutdown', () => {
  it('finishes in-flight requests, refuses new connections, then runs the other hooks', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inFlight = new Promise<void>((resolve) => (entered = resolve));
    const router = Router();
    router.get('/slow', async (_req, res) => {
      entered();
      await released;
      res.json({ data: 'finished' });
    });

    const logger = createLogger({ name: 'test', level: 'silent' });
    const lifecycle = new Lifecycle(logger);
    const steps: string[] = [];
    lifecycle.onShutdown('database', () => {
      steps.push('database');
      return Promise.resolve();
    });
    const deps = { ...testDeps(t.db, redis), lifecycle };
    const { server, url } = await listen(createApiApp(deps, [router]), {
      port: 0,
      host: '127.0.0.1',
      docsUrl: 'https://docs.test/errors',
      logger,
    });
    lifecycle.onShutdown('http', async () => {
      await closeServer(server, 10_000);
      steps.push('http');
    });

    const slow = fetch(`${url}/slow`, { headers: { Authorization: `Bearer ${token}` } });
    await inFlight;
    const shutdown = lifecycle.shutdown('SIGTERM');
    expect(lifecycle.draining).toBe(true);
    await expect
      .poll(() =>
        fetch(`${url}/healthz`).then(
          () => 'open',
          () => 'refused',
        ),
      )
      .toBe('refused');
    expect(steps).toEqual([]);

    release();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: 'finished' });
    await shutdown;
    expect(steps).toEqual(['http', 'database']);
  });

  it('cuts connections still open after the grace period', async () => {
    const router = Router();
    router.get('/hang', () => undefined);
    const logger = createLogger({ name: 'test', level: 'silent' });
    const lifecycle = new Lifecycle(logger);
    const { server, url } = await listen(
      createApiApp({ ...testDeps(t.db, redis), lifecycle }, [router]),
      { port: 0, host: '127.0.0.1', docsUrl: 'https://docs.test/errors', logger },
    );
    lifecycle.onShutdown('http', () => closeServer(server, 200));
    const hanging = fetch(`${url}/hang`, { headers: { Authorization: `Bearer ${token}` } });
    await expect
      .poll(async () => await new Promise<number>((r) => server.getConnections((_e, n) => r(n))))
      .toBe(1);
    await lifecycle.shutdown('SIGTERM');
    await expect(hanging).rejects.toThrow();
  });

  it('readiness says it drains at once, without waiting for a database that does not answer', async () => {
    const target = new URL(TEST_DATABASE_URL);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const silent = createPostgresDb({
      connectionString: proxy.url(TEST_DATABASE_URL),
      maxConnections: 1,
    });
    proxy.blackhole();
    const logger = createLogger({ name: 'test', level: 'silent' });
    const { server, url } = await listen(
      createApiApp({ ...testDeps(silent, redis), lifecycle: { draining: true } }, []),
      { port: 0, host: '127.0.0.1', docsUrl: 'https://docs.test/errors', logger },
    );
    try {
      const res = await fetch(`${url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { data: [{ attributes: { details: unknown } }] };
      // No `checks`: the answer did not wait for Postgres (silent here: its check gives up at 2 s).
      expect(body.data[0].attributes.details).toEqual({ message: 'Shutting down', draining: true });
    } finally {
      await closeServer(server, 0);
      await silent.close();
      await proxy.close();
    }
  });

  it('goes on past a close that waits on a server gone silent, and names it', async () => {
    const target = new URL(TEST_REDIS_URL);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const stream = new PassThrough();
    const lines: string[] = [];
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n')));
    const logger = createLogger({ name: 'test', level: 'warn', destination: stream });
    const lifecycle = new Lifecycle(logger, 300);
    const steps: string[] = [];
    lifecycle.onShutdown('database', () => {
      steps.push('database');
      return Promise.resolve();
    });
    const silent = openRedis(proxy.url(TEST_REDIS_URL), 'producer', logger, lifecycle);
    try {
      if (silent.status !== 'ready') await once(silent, 'ready');
      expect(await silent.ping()).toBe('PONG');
      // Its QUIT is sent and never answered, as by a master killed mid-command.
      proxy.blackhole();
      const started = Date.now();
      await lifecycle.shutdown('SIGTERM');
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(steps).toEqual(['database']);
      const overran = lines.filter((line) => line.includes('did not finish in time'));
      expect(overran).toHaveLength(1);
      expect(JSON.parse(overran[0]!)).toMatchObject({ hook: 'redis-producer', waitedMs: 300 });
    } finally {
      silent.disconnect();
      await proxy.close();
    }
  });

  it('readiness answers 503 while draining', async () => {
    const logger = createLogger({ name: 'test', level: 'silent' });
    const { server, url } = await listen(
      createApiApp({ ...testDeps(t.db, redis), lifecycle: { draining: true } }, []),
      { port: 0, host: '127.0.0.1', docsUrl: 'https://docs.test/errors', logger },
    );
    try {
      const res = await fetch(`${url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as {
        data: [
          { attributes: { code: string; transient: boolean; details: { draining: boolean } } },
        ];
      };
      expect(body.data[0].attributes).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        transient: true,
        details: { draining: true },
      });
    } finally {
      await closeServer(server, 0);
    }
  });
});
