import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createPostgresDb, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  randomId,
  silentLogger,
  startTcpProxy,
  testRedis,
  testRedisCoordination,
  waitFor,
} from '@herald/testkit';
import { createPostgresCoordination, migrateQueues } from './coordination.js';
import {
  EventMatchEnqueuer,
  createEventMatchQueue,
  createQueueWorker,
  type EventMatchQueue,
} from './queues.js';

const opened: { queue: EventMatchQueue; redis: Redis }[] = [];

function openQueue(redis = testRedis()): EventMatchQueue {
  const queue = createEventMatchQueue(
    testRedisCoordination(redis, randomId('herald_test_q')),
    silentLogger(),
  );
  opened.push({ queue, redis });
  return queue;
}

afterEach(async () => {
  for (const { queue, redis } of opened.splice(0)) {
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    redis.disconnect();
  }
});

describe('EventMatchEnqueuer', () => {
  it('sends the first request alone and the ones that finish meanwhile as one job', async () => {
    const queue = openQueue();
    const enqueuer = new EventMatchEnqueuer(queue, 2000);
    await queue.waitUntilReady();
    await Promise.all([
      enqueuer.enqueue(['a1']),
      enqueuer.enqueue(['b1', 'b2']),
      enqueuer.enqueue(['c1']),
      enqueuer.enqueue([]),
    ]);
    const jobs = await queue.getJobs(['waiting']);
    const batches = jobs.map((job) => job.data.eventIds).sort((x, y) => x.length - y.length);
    expect(batches).toEqual([['a1'], ['b1', 'b2', 'c1']]);

    // Alone again once nothing is on its way.
    await enqueuer.enqueue(['d1']);
    expect((await queue.getJobCounts('waiting')).waiting).toBe(3);
  });

  it('waits for the writes running beside a commit, and sends their ids with it as one job', async () => {
    const queue = openQueue();
    // A wait longer than any test: only the writes ending can release the enqueues.
    const enqueuer = new EventMatchEnqueuer(queue, 2000, 60_000);
    await queue.waitUntilReady();
    const a = enqueuer.startWrite();
    const b = enqueuer.startWrite();
    const c = enqueuer.startWrite();
    let aDone = false;
    const aEnqueued = a.enqueue(['a1']).then(() => (aDone = true));
    // A write starting after a's commit is not waited for.
    const late = enqueuer.startWrite();
    const bEnqueued = b.enqueue(['b1', 'b2']);
    expect(aDone).toBe(false);
    // A write that fails (or stores nothing) releases the others too.
    c.end();
    await Promise.all([aEnqueued, bEnqueued]);
    const jobs = await queue.getJobs(['waiting']);
    expect(jobs.map((job) => job.data.eventIds)).toEqual([['a1', 'b1', 'b2']]);
    late.end();
  });

  it('waits for the writes beside it at most its wait', async () => {
    const queue = openQueue();
    const enqueuer = new EventMatchEnqueuer(queue, 2000, 20);
    await queue.waitUntilReady();
    const slow = enqueuer.startWrite();
    await enqueuer.startWrite().enqueue(['a1']);
    expect((await queue.getJobs(['waiting'])).map((job) => job.data.eventIds)).toEqual([['a1']]);
    await slow.enqueue(['s1']);
    expect((await queue.getJobCounts('waiting')).waiting).toBe(2);
  });

  it('rejects every request of a group when Redis cannot take it, and is not stuck after', async () => {
    // Nothing listens on port 1: every enqueue fails fast.
    const down = new Redis('redis://127.0.0.1:1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    const enqueuer = new EventMatchEnqueuer(openQueue(down), 200);
    const results = await Promise.allSettled([enqueuer.enqueue(['x1']), enqueuer.enqueue(['x2'])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await expect(enqueuer.enqueue(['x3'])).rejects.toThrow();
  });
});

describe('the queues on Postgres alone', () => {
  /** The queues in `prefix`'s schema, reached at `url`. */
  const coordinationOn = (db: Db, prefix: string, url = TEST_DATABASE_URL) =>
    createPostgresCoordination({ db, url, prefix, logger: silentLogger() });

  it('a queue made before its schema was migrated takes jobs once it is (a service listens first)', async () => {
    const db = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 2 });
    const prefix = randomId('herald_test');
    const coordination = coordinationOn(db, prefix);
    const queue = createEventMatchQueue(coordination, silentLogger());
    try {
      await expect(queue.waitUntilReady()).rejects.toThrow(/not initialized/);
      await migrateQueues(TEST_DATABASE_URL, coordination.queueSchema, silentLogger());
      await queue.add('match-event', { eventIds: ['e1'] }, { jobId: 'event-e1' });
      expect((await queue.getJobCounts('waiting')).waiting).toBe(1);
    } finally {
      await queue.close();
      await coordination.close();
      await db.exec(`DROP SCHEMA IF EXISTS "${coordination.queueSchema}" CASCADE`);
      await db.close();
    }
  });

  it('a worker whose database went away takes jobs again within a second or two of its return', async () => {
    const url = new URL(TEST_DATABASE_URL);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const db = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 2 });
    const prefix = randomId('herald_test');
    const direct = coordinationOn(db, prefix);
    // The worker reaches Postgres through the proxy, which the test cuts and restores.
    const proxied = coordinationOn(db, prefix, proxy.url(TEST_DATABASE_URL));
    await migrateQueues(TEST_DATABASE_URL, direct.queueSchema, silentLogger());
    const queue = createEventMatchQueue(direct, silentLogger());
    const processed: string[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const worker = createQueueWorker<{ eventIds: string[] }>(
      'event-match',
      proxied,
      async (job) => {
        // The first job finishes while the database is away: its completion cannot be written.
        if (job.data.eventIds[0] === 'held') await held;
        processed.push(...job.data.eventIds);
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined);
    try {
      await queue.add('match-event', { eventIds: ['held'] }, { jobId: 'event-held' });
      await waitFor(async () => expect(await queue.getJobCounts('active')).toEqual({ active: 1 }));
      await proxy.cut();
      release();
      await waitFor(() => expect(processed).toContain('held'));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await proxy.restore();
      const restored = performance.now();
      await queue.add('match-event', { eventIds: ['after'] }, { jobId: 'event-after' });
      await waitFor(() => expect(processed).toContain('after'), 30_000);
      // BullMQ's default waits 15 s (runRetryDelay) before it writes the completion again.
      expect(performance.now() - restored).toBeLessThan(5000);
    } finally {
      await worker.close();
      await queue.close();
      await direct.close();
      await proxied.close();
      await db.exec(`DROP SCHEMA IF EXISTS "${direct.queueSchema}" CASCADE`);
      await db.close();
      await proxy.close();
    }
  });
});
