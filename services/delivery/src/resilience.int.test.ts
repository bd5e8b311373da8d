import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { MATCH_EVENT_JOB, QUEUE_EVENT_MATCH, eventJobId } from '@herald/contract';
import { createRedis, type Redis } from '@herald/runtime';
import {
  createBulkJob,
  findBulkJob,
  insertEvents,
  insertWebhook,
  type Db,
  type NewEvent,
} from '@herald/store';
import {
  PrivateRedis,
  createTestDb,
  randomId,
  silentLogger,
  type TestDb,
  waitFor,
} from '@herald/testkit';
import {
  itemEvent,
  spawnDeliveryProcess,
  startReceiver,
  webhookInput,
  type Receiver,
} from './harness.test-support.js';

// "Nothing lost" (docs/architecture.md, Why it holds under faults): the built delivery service runs as a child process
// against this file's schema and a redis-server of its own (so FLUSHDB touches nothing shared).
let redisServer: PrivateRedis;
let testDb: TestDb;
let db: Db;
let redis: Redis;
let prefix: string;
let matchQueue: Queue;
const children = new Set<ChildProcess>();

function startDelivery(): ChildProcess {
  const { child } = spawnDeliveryProcess({
    schema: testDb.schema!,
    prefix,
    redisUrl: redisServer.url,
    env: {
      LOG_LEVEL: 'silent',
      DELIVERY_TIMEOUT_MS: '1000',
      DELIVERY_CONNECT_TIMEOUT_MS: '500',
      DELIVERY_RETRY_SCHEDULE_MS: '300,300,300',
      DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: '1000',
      DELIVERY_CONCURRENCY: '50',
      DELIVERY_JOB_LOCK_MS: '2000',
      DELIVERY_SWEEP_INTERVAL_MS: '300',
      DELIVERY_SWEEP_AFTER_MS: '1500',
      // The FLUSHDB test's receiver fails every call once, 100 in a row: the circuit breaker
      // (circuit.int.test.ts) would rightly hold them all for its minute-long cool-down.
      DELIVERY_CIRCUIT_FAILURES: '0',
    },
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

async function emit(events: NewEvent[], enqueue = true): Promise<void> {
  await insertEvents(db, events);
  if (!enqueue) return;
  await matchQueue.add(
    MATCH_EVENT_JOB,
    { eventIds: events.map((e) => e.id) },
    { jobId: eventJobId(events[0]!.id), removeOnComplete: true, removeOnFail: true },
  );
}

async function statusCounts(webhookId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ status: string; n: string }>(
    'SELECT status, count(*) AS n FROM webhook_calls WHERE webhook_id = $1 GROUP BY status',
    [webhookId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** Distinct webhook-ids received (a call answered after a kill may legitimately arrive twice). */
const distinctCalls = (receiver: Receiver): number =>
  new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size;

beforeAll(async () => {
  redisServer = await PrivateRedis.create();
  testDb = await createTestDb();
  db = testDb.db;
  prefix = randomId('herald_test');
  redis = createRedis(redisServer.url, 'producer', silentLogger());
  matchQueue = new Queue(QUEUE_EVENT_MATCH, { connection: redis, prefix: `{${prefix}}` });
});

afterAll(async () => {
  for (const child of children) await stop(child, 'SIGKILL');
  await matchQueue.close();
  await redis.quit();
  await redisServer.destroy();
  await testDb.cleanup();
});

/** A webhook on the receiver, a delivery process, and `count` events emitted for it. */
async function deliverEvents(receiver: Receiver, name: string, count: number) {
  const webhook = await insertWebhook(db, webhookInput(receiver.url, { name: randomId(name) }));
  const child = startDelivery();
  const events = Array.from({ length: count }, () => itemEvent());
  await emit(events);
  return { webhook, child, events };
}

/** Waits until `total` calls of the webhook have succeeded. */
async function waitForSuccesses(webhookId: string, total: number): Promise<void> {
  await waitFor(
    async () => {
      const counts = await statusCounts(webhookId);
      if (counts['success'] !== total) throw new Error(JSON.stringify(counts));
    },
    { timeout: 45_000, interval: 200 },
  );
}

/** A test's time: its child processes' starts and its waits (up to 45 s each), on a busy machine. */
const TEST_TIMEOUT_MS = 120_000;

describe('nothing lost', () => {
  it(
    'every call completes after kill -9 of the delivery process mid-batch',
    async () => {
      // Answers after 30 ms, so that the batch is still in flight when the process dies.
      const receiver = await startReceiver((_req, res) => setTimeout(() => res.end('ok'), 30));
      try {
        const { webhook, child: first, events } = await deliverEvents(receiver, 'kill', 300);
        await waitFor(
          () => {
            if (receiver.requests.length < 30) throw new Error('not started');
          },
          { timeout: 30_000, interval: 10 },
        );
        await stop(first, 'SIGKILL');
        const receivedAtKill = distinctCalls(receiver);
        expect(receivedAtKill).toBeLessThan(events.length);

        startDelivery();
        await waitForSuccesses(webhook.id, events.length);
        expect(distinctCalls(receiver)).toBe(events.length);
        const { rows } = await db.query<{ n: string }>(
          'SELECT count(*) AS n FROM events WHERE matched_at IS NULL',
        );
        expect(Number(rows[0]!.n)).toBe(0);
      } finally {
        for (const child of children) await stop(child, 'SIGTERM');
        await receiver.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a bulk resend carries on after kill -9 mid-job: 100 %, each call sent by the job once',
    async () => {
      let down = true;
      const receiver = await startReceiver((_req, res) => {
        if (down) res.writeHead(500).end('down');
        else setTimeout(() => res.end('ok'), 10);
      });
      try {
        await db.query('DELETE FROM webhooks');
        const name = randomId('bulk');
        const webhook = await insertWebhook(
          db,
          webhookInput(receiver.url, { name, autoRetry: false }),
        );
        const first = startDelivery();
        const events = Array.from({ length: 200 }, () => itemEvent());
        await emit(events);
        await waitFor(
          async () => {
            const counts = await statusCounts(webhook.id);
            if (counts['failed'] !== events.length) throw new Error(JSON.stringify(counts));
          },
          { timeout: 45_000, interval: 100 },
        );

        down = false;
        const since = Date.now();
        const fromJob = () => receiver.requests.filter((request) => request.at >= since);
        // 200 calls at 100/s: two seconds of sending, killed after about half of one.
        const job = await createBulkJob(db, {
          kind: 'bulk_resend',
          webhookId: webhook.id,
          filter: { webhook_id: webhook.id, status: 'failed' },
          ratePerSecond: 100,
        });
        await waitFor(
          () => {
            if (fromJob().length < 40) throw new Error('not started');
          },
          { timeout: 30_000, interval: 5 },
        );
        await stop(first, 'SIGKILL');
        const atKill = fromJob().length;
        expect(atKill).toBeLessThan(events.length);
        // What the job had sent by then, and which of those it had recorded: only the others may
        // go again (however far the recording lagged behind the sending on a busy machine).
        const sentAtKill = new Set(
          fromJob().map((request) => String(request.headers['webhook-id'])),
        );
        const { rows: recorded } = await db.query<{ call_id: string }>(
          `SELECT a.call_id FROM webhook_call_attempts a JOIN webhook_calls c ON c.id = a.call_id
         WHERE c.webhook_id = $1 AND a.trigger = 'bulk_resend'`,
          [webhook.id],
        );
        const recordedAtKill = new Set(recorded.map((row) => row.call_id));

        // Another process takes the job over once the dead one's lease ran out.
        startDelivery();
        await waitFor(
          async () => expect((await findBulkJob(db, job.id))?.state).toBe('completed'),
          {
            timeout: 45_000,
            interval: 200,
          },
        );
        expect(await findBulkJob(db, job.id)).toMatchObject({
          matched: 200,
          succeeded: 200,
          failed: 0,
          skipped: 0,
        });
        expect(await statusCounts(webhook.id)).toEqual({ success: 200 });
        const counts = new Map<string, number>();
        for (const request of fromJob()) {
          const id = String(request.headers['webhook-id']);
          counts.set(id, (counts.get(id) ?? 0) + 1);
        }
        expect(counts.size).toBe(200);
        // Sent twice only if in flight at the kill: sent, its outcome not yet recorded. Every call
        // has exactly one attempt of the job's (a call whose attempt was recorded before the kill
        // is not sent again, which would record a second), and was received at most twice.
        const { rows: attempts } = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM webhook_call_attempts a JOIN webhook_calls c ON c.id = a.call_id
         WHERE c.webhook_id = $1 AND a.trigger = 'bulk_resend' GROUP BY a.call_id`,
          [webhook.id],
        );
        expect(attempts).toHaveLength(200);
        expect(attempts.every((row) => row.n === '1')).toBe(true);
        expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
        // Sent twice: sent before the kill, its outcome not recorded by then. At 100/s with 10 ms
        // answers, a few calls (more when the machine is busy and the writes lag).
        const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
        const inFlightAtKill = [...sentAtKill].filter((id) => !recordedAtKill.has(id));
        expect(inFlightAtKill).toEqual(expect.arrayContaining(twice));
        expect(twice.length).toBeLessThan(atKill);
      } finally {
        for (const child of children) await stop(child, 'SIGTERM');
        await receiver.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'every call completes after Redis loses its state (FLUSHDB), retries and unmatched events included',
    async () => {
      // Each call fails once (a retry job is then delayed in Redis), then succeeds.
      const failedOnce = new Set<string>();
      const receiver = await startReceiver((req, res) => {
        const id = String(req.headers['webhook-id']);
        if (failedOnce.has(id)) {
          res.end('ok');
        } else {
          failedOnce.add(id);
          res.writeHead(500).end('try again');
        }
      });
      try {
        await db.query('DELETE FROM webhooks');
        const { webhook, child, events } = await deliverEvents(receiver, 'flush', 100);
        await waitFor(
          () => {
            if (failedOnce.size < 20) throw new Error('not started');
          },
          { timeout: 30_000, interval: 10 },
        );
        await redis.flushdb();
        // Events stored while Redis was away never got a job at all.
        const orphans = Array.from({ length: 20 }, () => itemEvent());
        await emit(orphans, false);

        const total = events.length + orphans.length;
        await waitForSuccesses(webhook.id, total);
        const { rows } = await db.query<{ n: string }>(
          'SELECT count(*) AS n FROM webhook_calls WHERE webhook_id = $1 AND attempted_auto_retries_count >= 1',
          [webhook.id],
        );
        expect(Number(rows[0]!.n)).toBe(total);
        await stop(child, 'SIGTERM');
        expect(child.exitCode).toBe(0);
      } finally {
        await receiver.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});
