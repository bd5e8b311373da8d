import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  MATCH_JOB_EVENTS_MAX,
  type DeliverJobData,
  type EventMatchJobData,
} from '@herald/contract';
import {
  createTestDb,
  silentLogger,
  startRedisCluster,
  testClusterCoordination,
  waitFor,
  type RedisCluster,
  type TestDb,
} from '@herald/testkit';
import type { RedisCoordination, Subscription } from './coordination.js';
import { deploymentKey } from './deployment.js';
import {
  createDeliverQueue,
  createEventMatchQueue,
  createQueueWorker,
  enqueueDeliveries,
  enqueueEventMatches,
  enqueueRetry,
  queuePrefix,
} from './queues.js';
import { createRedisCluster } from './redis.js';
import { sendEach, webhookKey } from './redis-slots.js';

// Every queue and Redis structure of packages/runtime on a Redis Cluster of the file's own (3
// masters, 3 replicas): no command, script or MULTI crosses slots (CROSSSLOT would fail it).

let cluster: RedisCluster;
let coordination: RedisCoordination;
let closeCoordination: () => Promise<void>;
let t: TestDb;

beforeAll(async () => {
  [cluster, t] = await Promise.all([startRedisCluster(), createTestDb()]);
  ({ coordination, close: closeCoordination } = await testClusterCoordination(cluster));
});

afterAll(async () => {
  await closeCoordination?.();
  await cluster?.stop();
  await t?.cleanup();
});

describe('the queues on a Redis Cluster', () => {
  it('take jobs from producers and run them on workers, each queue in one slot', async () => {
    const logger = silentLogger();
    const matchQueue = createEventMatchQueue(coordination, logger);
    const deliverQueue = createDeliverQueue(coordination, logger);
    const workerRedis = createRedisCluster(cluster.target, 'worker', logger);
    const matched: string[] = [];
    const delivered: DeliverJobData[] = [];
    const matchWorker = createQueueWorker<EventMatchJobData>(
      matchQueue.name,
      coordination,
      (job) => {
        matched.push(...job.data.eventIds);
        return Promise.resolve();
      },
      { concurrency: 4 },
      workerRedis,
    );
    const deliverWorker = createQueueWorker<DeliverJobData>(
      deliverQueue.name,
      coordination,
      (job) => {
        delivered.push(job.data);
        return Promise.resolve();
      },
      { concurrency: 4 },
      workerRedis,
    );
    try {
      // More ids than one job takes: several jobs in one MULTI (addBulk).
      const ids = Array.from({ length: MATCH_JOB_EVENTS_MAX + 5 }, (_, i) => `evt-${i}`);
      await enqueueEventMatches(matchQueue, ids, 5000);
      await enqueueDeliveries(
        deliverQueue,
        ['a', 'b', 'c'].map((id) => ({ id: `call-${id}`, webhookId: `hook-${id}` })),
        () => 50,
      );
      await enqueueRetry(deliverQueue, { id: 'call-d', webhookId: 'hook-d' }, 1, 100);
      await waitFor(() => expect(matched.sort()).toEqual(ids.sort()));
      await waitFor(() =>
        expect(delivered.map((data) => data.callId).sort()).toEqual([
          'call-a',
          'call-b',
          'call-c',
          'call-d',
        ]),
      );
      // Both queues' keys share the prefix's hash tag: one slot, whatever the queue.
      const slots = await Promise.all(
        [`{${coordination.prefix}}:${matchQueue.name}:wait`, `{${coordination.prefix}}:x`].map(
          (key) => coordination.redis.cluster('KEYSLOT', key),
        ),
      );
      expect(new Set(slots).size).toBe(1);
    } finally {
      await Promise.all([matchWorker.close(), deliverWorker.close()]);
      await Promise.all([
        matchQueue.obliterate({ force: true }),
        deliverQueue.obliterate({ force: true }),
      ]);
      await Promise.all([matchQueue.close(), deliverQueue.close()]);
      workerRedis.disconnect();
    }
  });
});

describe("Herald's own keys on a Redis Cluster", () => {
  it('put each webhook in one slot, the webhooks spread over the masters', async () => {
    const prefix = coordination.prefix;
    const masters = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const id = `hook-${i}`;
      const keys = ['rate-sent', 'rate-queue', 'in-flight'].map((name) =>
        webhookKey(prefix, name, id),
      );
      const slots = await Promise.all(
        keys.map((key) => coordination.redis.cluster('KEYSLOT', key)),
      );
      expect(new Set(slots).size).toBe(1);
      masters.add((await cluster.masterOf(keys[0]!)).port);
    }
    expect(masters.size).toBe(3);
  });

  it('sends commands on keys of every master in one call (sendEach)', async () => {
    const keys = Array.from({ length: 20 }, (_, i) =>
      webhookKey(coordination.prefix, 'probe', `hook-${i}`),
    );
    const written = await sendEach(
      coordination.redis,
      keys,
      (key) => key,
      (pipeline, key) => pipeline.set(key, key, 'PX', 60_000),
    );
    expect(written).toEqual(keys.map(() => [null, 'OK']));
    const read = await sendEach(
      coordination.redis,
      keys,
      (key) => key,
      (pipeline, key) => pipeline.get(key),
    );
    expect(read).toEqual(keys.map((key) => [null, key]));
  });

  it("leases the HTTP rate limit's windows, and claims the deployment (a MULTI on one key)", async () => {
    const windows = await Promise.all(
      ['admin:a', 'admin:b', 'producer:c', 'anonymous:d'].map((key) =>
        coordination.leaseRequests(`${coordination.prefix}:rate-limit:${key}`, 3000, 10, 4, 0.5),
      ),
    );
    for (const window of windows) expect(window).toMatchObject({ counted: 4, granted: 4 });
    expect(await coordination.claimDeployment(t.db)).toBe('written');
    expect(await coordination.claimDeployment(t.db)).toBe('claimed');
    expect(await coordination.redis.exists(deploymentKey(coordination.prefix))).toBe(1);
  });

  it("keeps the claim on the queues' master: flushing that master alone is a loss the claim sees", async () => {
    const queueKey = `${queuePrefix(coordination.prefix)}:deliver:wait`;
    const slotOf = async (key: string): Promise<string> =>
      cluster.cliByKey('CLUSTER', 'KEYSLOT', key);
    expect(await slotOf(deploymentKey(coordination.prefix))).toBe(await slotOf(queueKey));
    await coordination.claimDeployment(t.db);
    expect(await coordination.claimDeployment(t.db)).toBe('claimed');
    const master = await cluster.masterOf(queueKey);
    expect(await cluster.cli(master, 'FLUSHALL')).toBe('OK');
    expect(await coordination.claimDeployment(t.db)).toBe('written');
  });
});

describe('pub/sub on a Redis Cluster', () => {
  it('a subscriber hears what is published on any node', async () => {
    const heard: string[] = [];
    const channel = `${coordination.prefix}:webhooks-changed`;
    const subscription: Subscription = await coordination.subscribe(
      channel,
      (message) => heard.push(message),
      () => undefined,
    );
    const direct = cluster.nodes.map(
      (node) => new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true }),
    );
    try {
      await coordination.publish(channel, 'through the cluster client');
      // Straight to each node, masters and replicas: the cluster bus carries it to the others.
      for (const [i, redis] of direct.entries()) await redis.publish(channel, `on node ${i}`);
      await waitFor(() =>
        expect(heard.sort()).toEqual(
          ['through the cluster client', ...cluster.nodes.map((_, i) => `on node ${i}`)].sort(),
        ),
      );
    } finally {
      await subscription.close();
      for (const redis of direct) redis.disconnect();
    }
  });
});

// Last: it kills a node of the file's cluster.
describe('a subscription on a Redis Cluster whose node is lost', () => {
  it('is made again on another node, and says that messages may have been missed', async () => {
    const heard: string[] = [];
    let reconnects = 0;
    const channel = `${coordination.prefix}:lost-node`;
    const subscription = await coordination.subscribe(
      channel,
      (message) => heard.push(message),
      () => reconnects++,
    );
    try {
      await coordination.publish(channel, 'before');
      await waitFor(() => expect(heard).toEqual(['before']));
      // The node the subscription is on: the one counting a subscriber of the channel.
      const counts = await Promise.all(
        cluster.nodes.map((node) => cluster.cli(node, 'PUBSUB', 'NUMSUB', channel)),
      );
      const index = counts.findIndex((reply) => reply.split('\n')[1] === '1');
      expect(index).toBeGreaterThanOrEqual(0);
      await cluster.kill(cluster.nodes[index]!);
      await cluster.waitUntilHealthy();
      await waitFor(() => expect(reconnects).toBeGreaterThan(0));
      // Published until heard: the new subscription may take a moment to be made.
      await waitFor(async () => {
        await coordination.publish(channel, 'after');
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(heard).toContain('after');
      });
    } finally {
      await subscription.close();
    }
  });
});
