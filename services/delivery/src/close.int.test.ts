import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import { createLogger, createRedis, createRedisCoordination } from '@herald/runtime';
import { TEST_REDIS_URL, randomId, silentLogger, startTcpProxy } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { testSettings } from './harness.test-support.js';
import { startDelivery } from './workers.js';

const it = integrationTest();

// A Redis that stops answering while the delivery runs (its connections go through a TCP proxy
// that drops everything: a master killed mid-command looks the same to the client until the OS
// gives up on the connection, minutes later). SIGTERM must still stop the process.
it('stops within its bound when Redis goes silent, naming the steps that waited', async ({
  db,
}) => {
  const target = new URL(TEST_REDIS_URL);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
  const url = proxy.url(TEST_REDIS_URL);
  const redis = createRedis(url, 'producer', silentLogger());
  const subscribers: ReturnType<typeof createRedis>[] = [];
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n')));
  try {
    if (redis.status !== 'ready') await once(redis, 'ready');
    const coordination = createRedisCoordination({
      redis,
      target: url,
      prefix: randomId('herald_test'),
      createSubscriber: () => {
        const subscriber = createRedis(url, 'worker', silentLogger());
        subscribers.push(subscriber);
        return subscriber;
      },
    });
    const settings = testSettings({ timeoutMs: 500, jobLockMs: 1000 });
    const runtime = await startDelivery(
      {
        db,
        coordination,
        logger: createLogger({ name: 'test', level: 'warn', destination: stream }),
        registry: new Registry(),
      },
      settings,
    );
    proxy.blackhole();
    const started = Date.now();
    await runtime.close();
    const took = Date.now() - started;
    expect(took).toBeLessThan(runtime.closeWithinMs);
    const waited = lines
      .filter((line) => line.includes('did not finish in time'))
      .map((line) => (JSON.parse(line) as { step: string }).step);
    // BullMQ's Worker.close() waits for its blocking connection's last command.
    expect(waited).toContain('queue workers');
  } finally {
    redis.disconnect();
    for (const subscriber of subscribers) subscriber.disconnect();
    await proxy.close();
  }
});
