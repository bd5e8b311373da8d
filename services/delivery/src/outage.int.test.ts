import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MATCH_EVENT_JOB, QUEUE_EVENT_MATCH } from '@herald/contract';
import { eventMatchJobId, queuePrefix } from '@herald/runtime';
import { createPostgresDb, insertEvents, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  createTestDb,
  startReceiver,
  startTcpProxy,
  type Receiver,
  type TcpProxy,
  type TestDb,
} from '@herald/testkit';
import {
  addWebhook,
  callOf,
  itemEvent,
  startPipeline,
  webhookInput,
  type Pipeline,
} from './harness.test-support.js';

// Postgres goes away under a running delivery pipeline: its connections go through a TCP proxy
// that the tests cut and restore (the shared server is never touched).
let testDb: TestDb;
let proxy: TcpProxy;
let throughProxy: Db;
let pipeline: Pipeline;
let receiver: Receiver;
let onRequest: () => void = () => undefined;
let webhookId: string;

beforeAll(async () => {
  testDb = await createTestDb();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port) });
  throughProxy = createPostgresDb({
    connectionString: proxy.url(TEST_DATABASE_URL),
    searchPath: testDb.schema!,
    maxConnections: 5,
  });
  // A match job's whole retry budget is two attempts 10 ms apart: any outage outlasts it.
  pipeline = await startPipeline(throughProxy, {
    matchRetries: { attempts: 2, backoffMs: 10 },
    leaseMs: 1500,
  });
  receiver = await startReceiver((_received, res) => {
    onRequest();
    res.writeHead(200).end();
  });
  webhookId = (await addWebhook(testDb.db, pipeline, webhookInput(receiver.url))).id;
});

afterAll(async () => {
  await proxy.restore();
  await pipeline.close();
  await throughProxy.close();
  await proxy.close();
  await receiver.close();
  await testDb.cleanup();
});

/** Stores an event (directly, not through the proxy) and enqueues its match with the defaults. */
async function emit(): Promise<{ eventId: string; jobId: string }> {
  const event = itemEvent();
  await insertEvents(testDb.db, [event]);
  const jobId = eventMatchJobId([event.id]);
  await pipeline.runtime.matchQueue.add(MATCH_EVENT_JOB, { eventIds: [event.id] }, { jobId });
  return { eventId: event.id, jobId };
}

/** Requests the receiver got for the call of `eventId` (none while the call does not exist). */
async function requestsFor(eventId: string): Promise<number> {
  const call = await callOf(testDb.db, eventId, webhookId).catch(() => undefined);
  if (!call) return 0;
  return receiver.requests.filter((request) => request.headers['webhook-id'] === call.id).length;
}

describe('Postgres away under the delivery workers', () => {
  it('a match job waits out an outage longer than its retry budget, spending no attempt', async () => {
    await proxy.cut();
    const { eventId, jobId } = await emit();
    const matchQueue = pipeline.runtime.matchQueue;
    // Looked at more times than it has attempts, and still not final.
    await expect
      .poll(async () => (await matchQueue.getJob(jobId))?.attemptsStarted ?? 0, { timeout: 15_000 })
      .toBeGreaterThan(3);
    const job = await matchQueue.getJob(jobId);
    expect(job?.attemptsMade).toBe(0);
    expect(['delayed', 'waiting', 'active']).toContain(await job?.getState());

    await proxy.restore();
    await expect.poll(() => requestsFor(eventId), { timeout: 15_000 }).toBe(1);
    expect(
      await pipeline.registry.getSingleMetricAsString('herald_jobs_waiting_for_database_total'),
    ).toMatch(/queue="event-match"} [1-9]/);
  });

  it('a job put off for the database comes back at its first answer, before its own wait ends', async () => {
    await proxy.cut();
    const { eventId, jobId } = await emit();
    const { coordination } = pipeline;
    if (coordination.kind !== 'redis') throw new Error('the pipeline runs on Redis');
    const delayed = `${queuePrefix(coordination.prefix)}:${QUEUE_EVENT_MATCH}:delayed`;
    // Looked at until its own wait is seconds long (the backoff doubles to 5 s): when it is due,
    // as BullMQ keeps it (the delayed set's score is the due time × 0x1000).
    let dueAt = 0;
    await expect
      .poll(
        async () => {
          const score = await coordination.redis.zscore(delayed, jobId);
          dueAt = score === null ? 0 : Math.floor(Number(score) / 0x1000);
          return dueAt - Date.now();
        },
        { timeout: 30_000, interval: 20 },
      )
      .toBeGreaterThan(2500);
    const resumed = async (): Promise<number> =>
      (await pipeline.registry.getSingleMetric('herald_jobs_resumed_after_database_total')?.get())
        ?.values[0]?.value ?? 0;
    const before = await resumed();

    await proxy.restore();
    await expect.poll(() => requestsFor(eventId), { timeout: 15_000 }).toBe(1);
    const call = await callOf(testDb.db, eventId, webhookId);
    const sentAt = receiver.requests.find((r) => r.headers['webhook-id'] === call.id)!.at;
    expect(sentAt).toBeLessThan(dueAt);
    expect(await resumed()).toBeGreaterThan(before);
  });

  it('an outcome the database cannot take is written once it returns, never sent again', async () => {
    // The receiver answers, and at that moment Postgres goes away for a second.
    onRequest = () => {
      onRequest = () => undefined;
      void proxy.cut().then(() => setTimeout(() => void proxy.restore(), 1000));
    };
    const { eventId } = await emit();
    await expect
      .poll(async () => (await callOf(testDb.db, eventId, webhookId)).status, {
        timeout: 15_000,
      })
      .toBe('success');
    expect(await requestsFor(eventId)).toBe(1);
  });

  it('a match job whose events are not in the database is retried, then failed, never completed', async () => {
    const jobId = eventMatchJobId(['not-here-1', 'not-here-2']);
    await pipeline.runtime.matchQueue.add(
      MATCH_EVENT_JOB,
      { eventIds: ['not-here-1', 'not-here-2'] },
      { jobId },
    );
    await expect.poll(() => pipeline.runtime.matchQueue.getJobState(jobId)).toBe('failed');
    const job = await pipeline.runtime.matchQueue.getJob(jobId);
    expect(job?.attemptsMade).toBe(2);
    expect(job?.failedReason).toMatch(/2 of the job's 2 events are not in this database/);
    expect(
      await pipeline.registry.getSingleMetricAsString('herald_match_events_missing_total'),
    ).toMatch(/ 4$/m);
    await job?.remove();
  });
});
