import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from 'bullmq';
import { QUEUE_WEBHOOK_DELIVER } from '@herald/contract';
import {
  createEventMatchQueue,
  createMetrics,
  eventMatchJobId,
  type DeliverQueue,
  type EventMatchQueue,
  type Redis,
} from '@herald/runtime';
import {
  createWebhookCallMonths,
  insertEvents,
  insertWebhook,
  listWebhookCalls,
  markEventsMatched,
  monthStart,
  renewLease,
  type NewEvent,
} from '@herald/store';
import {
  createTestDb,
  randomId,
  silentLogger,
  testItemEvent,
  testRedis,
  testRedisCoordination,
  testWebhookInput,
  type TestDb,
} from '@herald/testkit';
import { deliveryMetrics } from '../../metrics.js';
import { Sweeper, sweepUnmatchedEvents, type SweeperOptions } from './sweeper.js';

let t: TestDb;
let redis: Redis;
let queue: EventMatchQueue;
const metrics = createMetrics({ defaultMetrics: false });

beforeAll(async () => {
  t = await createTestDb('postgres');
  redis = testRedis();
  queue = createEventMatchQueue(testRedisCoordination(redis), silentLogger());
});

afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  await redis.quit();
  await t.cleanup();
});

const event = (id: string): NewEvent => testItemEvent(id);

/** A deliver queue of the test's own (a random prefix), for the sweeper to put calls on. */
const newDeliverQueue = (): DeliverQueue =>
  new Queue(QUEUE_WEBHOOK_DELIVER, { connection: redis, prefix: `{${randomId('herald_test')}}` });

/** A sweeper on the test's database, queues and metrics; `options` are what the test is about. */
const newSweeper = (
  deliverQueue: DeliverQueue,
  options: Omit<
    SweeperOptions,
    | 'db'
    | 'matchQueue'
    | 'deliverQueue'
    | 'logger'
    | 'registry'
    | 'enqueueTimeoutMs'
    | 'pruneIntervalMs'
    | 'leaseMs'
  >,
) =>
  new Sweeper({
    db: t.db,
    matchQueue: queue,
    deliverQueue,
    logger: silentLogger(),
    registry: metrics.registry,
    enqueueTimeoutMs: 5000,
    pruneIntervalMs: 3_600_000,
    leaseMs: 3000,
    ...options,
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
    expect(count).toEqual({ added: 4, queued: 0 });
    // One job per page of batchSize (2) ids.
    for (const page of [
      ['sw:1', 'sw-2'],
      ['12345', 'sw-5'],
    ]) {
      expect((await queue.getJob(eventMatchJobId(page)))?.data).toEqual({ eventIds: page });
    }
    // A second sweep finds their jobs still waiting: it adds nothing, and counts nothing.
    expect(await sweepUnmatchedEvents({ ...sweepOptions, db: t.db, queue })).toEqual({
      added: 0,
      queued: 4,
    });
    expect(await queue.getJobCountByTypes('waiting')).toBe(2);
    expect(
      await metrics.registry.getSingleMetricAsString('herald_sweeper_events_enqueued_total'),
    ).toMatch(/ 4$/m);
    await queue.drain();
    await markEventsMatched(t.db, ['sw:1', 'sw-2', '12345', 'sw-5']);
  });

  it('replaces a job that finished under the same id while its events stayed unmatched', async () => {
    // A match job out of attempts (a long outage) or completed without matching: BullMQ ignores
    // an add under the id of a job it still keeps, so the sweeper must replace it.
    const ids = ['fin-1', 'fin-2'];
    await insertEvents(t.db, ids.map(event));
    const jobId = eventMatchJobId(ids);
    const connection = testRedis('worker');
    const failing = new Worker(queue.name, () => Promise.reject(new Error('some bug')), {
      connection,
      prefix: queue.opts.prefix!,
      autorun: false,
    });
    try {
      await queue.add('match-event', { eventIds: ids }, { jobId, attempts: 1 });
      void failing.run();
      await expect.poll(() => queue.getJobState(jobId)).toBe('failed');
    } finally {
      await failing.close();
      await connection.quit();
    }
    expect(await sweepUnmatchedEvents({ ...sweepOptions, db: t.db, queue })).toEqual({
      added: 2,
      queued: 0,
    });
    expect(await queue.getJobState(jobId)).toBe('waiting');
    expect((await queue.getJob(jobId))?.attemptsMade).toBe(0);
    await queue.drain();
    await markEventsMatched(t.db, ids);
  });

  it('leaves events younger than the grace period to ingest', async () => {
    await insertEvents(t.db, [event('young-1')]);
    await sweepUnmatchedEvents({ ...sweepOptions, graceMs: 60_000, db: t.db, queue });
    expect(await queue.getJob('young-1')).toBeUndefined();
  });

  it('runs periodically once started, and stops', async () => {
    const deliverQueue = newDeliverQueue();
    const sweeper = newSweeper(deliverQueue, {
      intervalMs: 50,
      afterMs: 60_000,
      eventGraceMs: 0,
      batchSize: 2,
      retentionMs: null,
      healthyForMs: () => 0,
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

describe('the sweeper: webhook calls', () => {
  const DAY = 86_400_000;
  let deliverQueue: DeliverQueue;
  let webhookId: string;

  beforeAll(async () => {
    deliverQueue = newDeliverQueue();
    const webhook = await insertWebhook(t.db, testWebhookInput());
    webhookId = webhook.id;
  });

  afterAll(async () => {
    await deliverQueue.obliterate({ force: true });
    await deliverQueue.close();
  });

  interface CallSetup {
    status: string;
    /** Age of the call. */
    days?: number;
    /** Since its job was added (pending), or since its retry was due (rescheduled). */
    minutesWaiting?: number;
    retries?: number;
  }

  /**
   * A call per entry, set up as described (made `days` ago: in that month's partition, with
   * that month's id); returns the call ids by event id.
   */
  async function calls(entries: Record<string, CallSetup>) {
    const names = Object.keys(entries);
    await insertEvents(t.db, names.map(event));
    await markEventsMatched(t.db, names);
    const made = new Map<string, string>();
    for (const [eventId, setup] of Object.entries(entries)) {
      const { status, days = 0, minutesWaiting = 0, retries = 0 } = setup;
      const createdAt = new Date(Date.now() - days * DAY);
      await createWebhookCallMonths(t.db, createdAt, 1);
      // As recordWebhookCallAttempts leaves them: a rescheduled call's clock is its next retry.
      const { rows } = await t.db.query<{ id: string }>(
        `INSERT INTO webhook_calls (id, created_at, event_id, webhook_id, entity_type, event_type,
           status, enqueued_at, attempted_auto_retries_count, next_retry_at)
         VALUES (herald_webhook_call_id($1), $1, $2, $3, 'item', 'update', $4,
           now() - make_interval(mins => $5), $6,
           CASE WHEN $4 = 'rescheduled' THEN now() - make_interval(mins => $5) END)
         RETURNING id`,
        [createdAt, eventId, webhookId, status, minutesWaiting, retries],
      );
      made.set(eventId, rows[0]!.id);
    }
    return made;
  }

  const remaining = async (ids: Map<string, string>) => {
    const { rows } = await t.db.query<{ event_id: string }>(
      `SELECT event_id FROM webhook_calls WHERE id = ANY($1::bigint[]) ORDER BY event_id`,
      [[...ids.values()]],
    );
    return rows.map((row) => row.event_id);
  };

  const sweeper = (
    retentionMs: number | null,
    {
      intervalMs = 60_000,
      afterMs = 60 * DAY,
      pruneStatementsPerPass,
      healthyForMs = 0,
      claimDeployment,
    }: {
      intervalMs?: number;
      afterMs?: number;
      pruneStatementsPerPass?: number;
      healthyForMs?: number;
      claimDeployment?: SweeperOptions['claimDeployment'];
    } = {},
  ) =>
    newSweeper(deliverQueue, {
      intervalMs,
      afterMs,
      eventGraceMs: 60 * DAY,
      batchSize: 2,
      retentionMs,
      healthyForMs: () => healthyForMs,
      ...(pruneStatementsPerPass ? { pruneStatementsPerPass } : {}),
      ...(claimDeployment ? { claimDeployment } : {}),
    });

  /** herald_sweeper_calls_enqueued_total{reason} so far. */
  const sweptCalls = async (reason: string) =>
    (await deliveryMetrics(metrics.registry).sweptCalls.get()).values.find(
      (v) => v.labels.reason === reason,
    )?.value ?? 0;

  it('re-enqueues a whole backlog of stranded calls in one pass, page after page', async () => {
    const ids = await calls({
      'str-pending-1': { status: 'pending', minutesWaiting: 120 },
      'str-pending-2': { status: 'pending', minutesWaiting: 90 },
      'str-pending-3': { status: 'pending', minutesWaiting: 60 },
      'str-retry-1': { status: 'rescheduled', minutesWaiting: 100, retries: 1 },
      'str-retry-2': { status: 'rescheduled', minutesWaiting: 30, retries: 3 },
      'str-pending-fresh': { status: 'pending', minutesWaiting: 0 },
      'str-retry-later': { status: 'rescheduled', minutesWaiting: -30, retries: 1 },
      'str-done': { status: 'success', minutesWaiting: 120 },
    });
    const id = (name: string) => ids.get(name)!;
    // Five stranded calls, two per page: three pages in one pass.
    const counted = await sweptCalls('stranded');
    const { calls: count } = await sweeper(null, { afterMs: 60_000 }).sweep();
    expect(count).toBe(5);
    expect(await sweptCalls('stranded')).toBe(counted + 5);
    const jobIds = (await deliverQueue.getJobs(['waiting'])).map((job) => job.id).sort();
    expect(jobIds).toEqual(
      [
        `call-${id('str-pending-1')}`,
        `call-${id('str-pending-2')}`,
        `call-${id('str-pending-3')}`,
        `call-${id('str-retry-1')}-r2`,
        `call-${id('str-retry-2')}-r4`,
      ].sort(),
    );
    // Their clocks restarted: the next pass leaves them to the jobs just added.
    expect((await sweeper(null, { afterMs: 60_000 }).sweep()).calls).toBe(0);
  });

  it('re-enqueues every call held by no process at once when Redis lost its keys', async () => {
    const ids = await calls({
      'lost-pending': { status: 'pending', minutesWaiting: 0 },
      'lost-retry-due': { status: 'rescheduled', minutesWaiting: 0, retries: 2 },
      // Its retry is ten minutes ahead: Redis lost the delayed job that stood for it.
      'lost-retry-ahead': { status: 'rescheduled', minutesWaiting: -10, retries: 1 },
    });
    const id = (name: string) => ids.get(name)!;
    const jobIds = async () => (await deliverQueue.getJobs(['waiting'])).map((job) => job.id);
    // Their jobs were added a moment ago: an ordinary pass leaves them to those jobs ...
    await sweeper(null, { afterMs: 60_000 }).sweep();
    expect(await jobIds()).not.toContain(`call-${id('lost-pending')}`);
    // ... but after a flush those jobs are gone (so are those of the calls of earlier tests), and
    // so are the match jobs of events just accepted.
    await insertEvents(t.db, [event('lost-unmatched')]);
    const [stranded, lost] = [await sweptCalls('stranded'), await sweptCalls('redis_lost')];
    const { calls: count } = await sweeper(null, { afterMs: 60_000 }).sweep({ redisLost: true });
    expect(count).toBeGreaterThanOrEqual(3);
    expect(await sweptCalls('redis_lost')).toBe(lost + count);
    expect(await sweptCalls('stranded')).toBe(stranded);
    const matchJobs = await queue.getJobs(['waiting']);
    expect(matchJobs.some((job) => job.data.eventIds.includes('lost-unmatched'))).toBe(true);
    await queue.drain();
    await markEventsMatched(t.db, ['lost-unmatched']);
    expect(await jobIds()).toEqual(
      expect.arrayContaining([`call-${id('lost-pending')}`, `call-${id('lost-retry-due')}-r3`]),
    );
    // The retry still ahead is a job again, delayed to its own time (not found only once it is
    // overdue by DELIVERY_SWEEP_AFTER_MS).
    const ahead = await deliverQueue.getJob(`call-${id('lost-retry-ahead')}-r2`);
    expect(await ahead?.getState()).toBe('delayed');
    expect(ahead!.timestamp + ahead!.delay).toBeGreaterThan(Date.now() + 9 * 60_000);
    expect(ahead!.timestamp + ahead!.delay).toBeLessThanOrEqual(Date.now() + 10 * 60_000);
    await deliverQueue.drain(true);
  });

  it('makes such a pass by itself when the deployment claim finds its key gone', async () => {
    const ids = await calls({ 'lost-started': { status: 'pending', minutesWaiting: 0 } });
    const claims: ('claimed' | 'written')[] = ['written'];
    const started = sweeper(null, {
      afterMs: 60_000,
      claimDeployment: () => Promise.resolve(claims.shift() ?? 'claimed'),
    });
    started.start();
    try {
      await expect
        .poll(async () => (await deliverQueue.getJobs(['waiting'])).map((job) => job.id))
        .toContain(`call-${ids.get('lost-started')!}`);
    } finally {
      await started.stop();
    }
    await deliverQueue.drain();
  });

  it('takes over the calls of a dead process at once, and never those of a live one', async () => {
    const ids = await calls({
      'held-alive': { status: 'pending', minutesWaiting: 600 },
      'held-dead-1': { status: 'pending', minutesWaiting: 0 },
      'held-dead-2': { status: 'pending', minutesWaiting: 0 },
      'held-dead-3': { status: 'pending', minutesWaiting: 0 },
    });
    const id = (name: string) => ids.get(name)!;
    await renewLease(t.db, { id: 'lease-alive', host: 'h', pid: 1 });
    await renewLease(t.db, { id: 'lease-dead', host: 'h', pid: 2 });
    await t.db.query(
      `UPDATE delivery_leases SET heartbeat_at = now() - interval '1 minute' WHERE id = 'lease-dead'`,
    );
    const hold = (name: string, lease: string) =>
      t.db.query('UPDATE webhook_calls SET held_by = $2 WHERE id = $1', [id(name), lease]);
    await hold('held-alive', 'lease-alive');
    for (const name of ['held-dead-1', 'held-dead-2', 'held-dead-3'])
      await hold(name, 'lease-dead');

    // Not until this process has renewed its own lease for a whole lease: after an outage every
    // live process first gets the time to renew.
    expect((await sweeper(null, { afterMs: 60_000, healthyForMs: 2999 }).sweep()).orphans).toBe(0);
    const pass = await sweeper(null, { afterMs: 60_000, healthyForMs: 3000 }).sweep();
    // Three orphans, two per page; the live process's call waited ten hours and stays its own.
    expect(pass).toEqual({ events: 0, orphans: 3, calls: 0 });
    const jobIds = (await deliverQueue.getJobs(['waiting'])).map((job) => job.id);
    expect(jobIds).toEqual(
      expect.arrayContaining(
        ['held-dead-1', 'held-dead-2', 'held-dead-3'].map((n) => `call-${id(n)}`),
      ),
    );
    expect(jobIds).not.toContain(`call-${id('held-alive')}`);
    const { rows } = await t.db.query<{ held_by: string | null }>(
      'SELECT held_by FROM webhook_calls WHERE id = ANY($1::bigint[]) ORDER BY id',
      [[...ids.values()]],
    );
    expect(rows.map((r) => r.held_by)).toEqual(['lease-alive', null, null, null]);
    // The dead lease held nothing any more: forgotten.
    const leases = await t.db.query<{ id: string }>('SELECT id FROM delivery_leases ORDER BY id');
    expect(leases.rows.map((r) => r.id)).toEqual(['lease-alive']);
    await deliverQueue.drain();
  });

  /** The months webhook_calls has a partition for (YYYY_MM). */
  const months = async () => {
    const { rows } = await t.db.query<{ month: string }>(
      `SELECT substr(c.relname, 15) AS month FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'webhook_calls'::regclass ORDER BY 1`,
    );
    return rows.map((row) => row.month);
  };
  const monthOf = (daysAgo: number) => {
    const at = new Date(Date.now() - daysAgo * DAY);
    return `${at.getUTCFullYear()}_${String(at.getUTCMonth() + 1).padStart(2, '0')}`;
  };
  /** What a pruning at `retentionMs` keeps: every month not wholly past it, and unfinished calls. */
  const kept = (entries: Record<string, CallSetup>, retentionMs: number) => {
    const first = monthStart(new Date(Date.now() - retentionMs));
    return Object.entries(entries)
      .filter(
        ([, { status, days = 0 }]) =>
          status === 'pending' ||
          status === 'rescheduled' ||
          Date.now() - days * DAY >= first.getTime(),
      )
      .map(([eventId]) => eventId)
      .sort();
  };
  const totalCount = async () =>
    (
      await listWebhookCalls(
        t.db,
        { limit: 1, offset: 0, orderBy: { column: 'created_at', desc: false } },
        0,
      )
    ).totalCount;

  it('drops whole months past the retention, keeps a month a call is still on its way in, and the rest', async () => {
    const entries: Record<string, CallSetup> = {
      'ret-ok-1': { status: 'success', days: 400 },
      'ret-failed-1': { status: 'failed', days: 100 },
      // A month with a call still on its way: the month stays, its finished calls go one by one.
      'ret-pending': { status: 'pending', days: 160 },
      'ret-ok-2': { status: 'success', days: 160 },
      'ret-rescheduled': { status: 'rescheduled', days: 50 },
      // Around the retention: kept or not by their month, whatever the day.
      'ret-failed-2': { status: 'failed', days: 45 },
      'ret-ok-3': { status: 'success', days: 31 },
      'ret-recent': { status: 'success', days: 29 },
      'ret-today': { status: 'success', days: 0 },
    };
    const before = await totalCount();
    const ids = await calls(entries);
    expect(await totalCount()).toBe(before + 9);
    const pruned = () =>
      metrics.registry.getSingleMetricAsString('herald_delivery_log_pruned_total');
    // Without a retention nothing goes.
    expect(await sweeper(null).prune()).toBe(0);
    expect(await remaining(ids)).toHaveLength(9);
    expect(await pruned()).toMatch(/ 0$/m);

    const expected = kept(entries, 30 * DAY);
    const gone = 9 - expected.length;
    expect(await sweeper(30 * DAY).prune()).toBe(gone);
    expect(await remaining(ids)).toEqual(expected);
    expect(expected).toEqual(expect.arrayContaining(['ret-pending', 'ret-recent', 'ret-today']));
    expect(expected).not.toContain('ret-ok-2');
    // Whole months dropped (the counts with them), the one with a pending call kept.
    const left = await months();
    expect(left).not.toContain(monthOf(400));
    expect(left).not.toContain(monthOf(100));
    expect(left).toContain(monthOf(160));
    expect(left).toContain(monthOf(0));
    expect(await totalCount()).toBe(before + expected.length);
    expect(await pruned()).toMatch(new RegExp(` ${gone}$`, 'm'));
    expect(await sweeper(30 * DAY).prune()).toBe(0);

    // Once its last call ended, the month goes at the next pass.
    await t.db.query(`UPDATE webhook_calls SET status = 'failed' WHERE id = $1`, [
      ids.get('ret-pending'),
    ]);
    expect(await sweeper(30 * DAY).prune()).toBe(1);
    expect(await months()).not.toContain(monthOf(160));
    expect(await totalCount()).toBe(before + expected.length - 1);
  });

  it('prunes once started, without waiting for the first interval', async () => {
    const ids = await calls({
      'ret-start-old': { status: 'success', days: 70 },
      'ret-start-new': { status: 'success', days: 0 },
    });
    const running = sweeper(7 * DAY, { intervalMs: 3_600_000 });
    running.start();
    try {
      await expect.poll(() => remaining(ids)).toEqual(['ret-start-new']);
    } finally {
      await running.stop();
    }
  });

  it('stops a pruning at its statement cap and goes on at the next passes', async () => {
    const names = ['cap-1', 'cap-2', 'cap-3', 'cap-4', 'cap-5'];
    // What earlier tests left to prune goes first (on a loaded machine a month's drop there can
    // miss its lock_timeout and leave its calls to the row-by-row pruning), so that the counts
    // below are this test's calls alone.
    while ((await sweeper(7 * DAY).prune()) > 0);
    // Their month holds a pending call: it stays, and they go one by one.
    await calls({ 'cap-pending': { status: 'pending', days: 250 } });
    const ids = await calls(
      Object.fromEntries(names.map((n) => [n, { status: 'failed', days: 250 }])),
    );
    // Two statements of two rows, then the rest at the next call.
    const capped = sweeper(7 * DAY, { pruneStatementsPerPass: 2 });
    expect(await capped.prune()).toBe(4);
    expect(await remaining(ids)).toHaveLength(1);
    expect(await capped.prune()).toBe(1);

    // Started: a pass of one statement every 50 ms, though the pruning interval is an hour.
    const more = await calls(
      Object.fromEntries(names.map((n) => [`${n}-again`, { status: 'success', days: 250 }])),
    );
    const running = sweeper(7 * DAY, { intervalMs: 50, pruneStatementsPerPass: 1 });
    running.start();
    try {
      await expect.poll(() => remaining(more)).toEqual([]);
    } finally {
      await running.stop();
    }
  });

  it('makes the partitions of this month and the next two at every pass', async () => {
    const inTwoMonths = new Date(Date.now());
    inTwoMonths.setUTCDate(1);
    inTwoMonths.setUTCMonth(inTwoMonths.getUTCMonth() + 2);
    const name = `${inTwoMonths.getUTCFullYear()}_${String(inTwoMonths.getUTCMonth() + 1).padStart(2, '0')}`;
    await t.db.query(`DROP TABLE webhook_call_attempts_${name}`);
    await t.db.query(`DROP TABLE webhook_calls_${name}`);
    expect(await months()).not.toContain(name);
    await sweeper(null).prune();
    expect(await months()).toContain(name);
  });
});

describe('the sweeper: webhooks failing too long', () => {
  it('disables them once started, and tells every process', async () => {
    const deliverQueue = newDeliverQueue();
    const webhook = await insertWebhook(t.db, testWebhookInput());
    // Every attempt failed for six days, and nobody touched the webhook since.
    await t.db.query(
      `INSERT INTO webhook_health (webhook_id, last_failure_at, failure_streak, failing_since)
       VALUES ($1, now(), 40, now() - interval '6 days')`,
      [webhook.id],
    );
    await t.db.query(`UPDATE webhooks SET updated_at = now() - interval '6 days' WHERE id = $1`, [
      webhook.id,
    ]);
    const told: { id: string; reason: string }[] = [];
    const sweeper = newSweeper(deliverQueue, {
      intervalMs: 60_000,
      afterMs: 60_000,
      eventGraceMs: 0,
      batchSize: 100,
      retentionMs: null,
      healthyForMs: () => 0,
      disableAfterFailingMs: 5 * 86_400_000,
      onDisabled: (disabled) => {
        told.push(disabled);
        return Promise.resolve();
      },
    });
    sweeper.start();
    try {
      await expect.poll(() => told.map((w) => w.id)).toEqual([webhook.id]);
      const { rows } = await t.db.query<{ enabled: boolean; disabled_reason: string }>(
        'SELECT enabled, disabled_reason FROM webhooks WHERE id = $1',
        [webhook.id],
      );
      expect(rows[0]).toEqual({ enabled: false, disabled_reason: told[0]!.reason });
    } finally {
      await sweeper.stop();
      await deliverQueue.obliterate({ force: true });
      await deliverQueue.close();
    }
  });
});
