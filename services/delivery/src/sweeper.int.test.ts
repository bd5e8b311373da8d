import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUE_WEBHOOK_DELIVER } from '@herald/contract';
import {
  createEventMatchQueue,
  createMetrics,
  eventMatchJobId,
  type EventMatchQueue,
  type Redis,
} from '@herald/runtime';
import { insertEvents, markEventsMatched, type NewEvent } from '@herald/store';
import { createTestDb, randomId, silentLogger, testRedis, type TestDb } from '@herald/testkit';
import type { DeliverQueue } from './jobs/match-event.js';
import { Sweeper, sweepUnmatchedEvents } from './sweeper.js';

let t: TestDb;
let redis: Redis;
let queue: EventMatchQueue;
const metrics = createMetrics({ defaultMetrics: false });

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  queue = createEventMatchQueue(redis, randomId('herald_test'), silentLogger());
});

afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await t.cleanup();
});

const event = (id: string): NewEvent => ({
  id,
  environment: 'main',
  isEnvironmentPrimary: true,
  entityType: 'item',
  eventType: 'update',
  entityId: 'r1',
  itemTypeId: 'post',
  itemTypeApiKey: 'post',
  occurredAt: new Date(),
  entity: { type: 'item', id: 'r1' },
  previousEntity: null,
  relatedEntities: [],
});

const sweepOptions = {
  registry: metrics.registry,
  graceMs: 0,
  batchSize: 2,
  enqueueTimeoutMs: 5000,
};

describe('the sweeper: unmatched events', () => {
  it('enqueues every stored event not yet matched, once per job id', async () => {
    const ids = ['sw:1', 'sw-2', '12345', 'sw-4', 'sw-5'];
    await insertEvents(t.db, ids.map(event));
    await markEventsMatched(t.db, ['sw-4']);
    const count = await sweepUnmatchedEvents({ ...sweepOptions, db: t.db, queue });
    expect(count).toBe(4);
    // One job per page of batchSize (2) ids.
    for (const page of [
      ['sw:1', 'sw-2'],
      ['12345', 'sw-5'],
    ]) {
      expect((await queue.getJob(eventMatchJobId(page)))?.data).toEqual({ eventIds: page });
    }
    // A second sweep re-adds the same job ids: BullMQ keeps one job per id.
    await sweepUnmatchedEvents({ ...sweepOptions, db: t.db, queue });
    expect(await queue.getJobCountByTypes('waiting')).toBe(2);
    expect(
      await metrics.registry.getSingleMetricAsString('herald_sweeper_events_enqueued_total'),
    ).toMatch(/ 8$/m);
  });

  it('leaves events younger than the grace period to ingest', async () => {
    await insertEvents(t.db, [event('young-1')]);
    await sweepUnmatchedEvents({ ...sweepOptions, graceMs: 60_000, db: t.db, queue });
    expect(await queue.getJob('young-1')).toBeUndefined();
  });

  it('runs periodically once started, and stops', async () => {
    const deliverQueue: DeliverQueue = new Queue(QUEUE_WEBHOOK_DELIVER, {
      connection: redis,
      prefix: `{${randomId('herald_test')}}`,
    });
    const sweeper = new Sweeper({
      db: t.db,
      matchQueue: queue,
      deliverQueue,
      logger: silentLogger(),
      registry: metrics.registry,
      intervalMs: 50,
      afterMs: 60_000,
      eventGraceMs: 0,
      batchSize: 2,
      enqueueTimeoutMs: 5000,
    });
    sweeper.start();
    try {
      await insertEvents(t.db, [event('later-1')]);
      await expect
        .poll(async () =>
          (await queue.getJobs(['waiting'])).some((job) => job.data.eventIds.includes('later-1')),
        )
        .toBe(true);
    } finally {
      await sweeper.stop();
      await deliverQueue.obliterate({ force: true });
      await deliverQueue.close();
    }
  });
});
