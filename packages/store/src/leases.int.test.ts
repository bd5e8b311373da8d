import { describe, expect } from 'vitest';
import { createTestDb, testAttempt, testItemEvent, testWebhookInput } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import {
  createWebhookCalls,
  deleteExpiredLeases,
  deleteWebhook,
  disableWebhook,
  endLease,
  findWebhookCall,
  insertEvents,
  insertWebhook,
  listOrphanedWebhookCalls,
  listStrandedWebhookCalls,
  readDeploymentId,
  recordWebhookCallAttempts,
  releaseWebhookCalls,
  renewLease,
  updateWebhook,
  type Db,
} from '@herald/store';

let n = 0;

const it = integrationTest();

/** A call of a new event to `webhookId`, held by `holder` (null: its job is in Redis). */
async function newCall(db: Db, webhookId: string, holder: string | null): Promise<string> {
  const id = `lease-evt-${n++}`;
  await insertEvents(db, [testItemEvent(id)]);
  const [call] = await createWebhookCalls(
    db,
    [{ event: { id, entityType: 'item', eventType: 'update' }, webhookIds: [webhookId] }],
    holder,
  );
  return call!.id;
}

/** Moves a lease's heartbeat `ms` into the past (a process that stopped beating). */
const ageLease = (db: Db, id: string, ms: number) =>
  db.query(
    `UPDATE delivery_leases SET heartbeat_at = now() - $2 * interval '1 millisecond' WHERE id = $1`,
    [id, ms],
  );

const lease = (id: string) => ({ id, host: 'test', pid: 1 });

describe('leases on held calls', () => {
  it('lists only the pending calls of a lease that ran out, never those of a live one', async ({
    db,
  }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    await renewLease(db, lease('alive'));
    await renewLease(db, lease('dead'));
    await ageLease(db, 'dead', 10_000);
    const alive = await newCall(db, webhook.id, 'alive');
    const dead = await newCall(db, webhook.id, 'dead');
    const finished = await newCall(db, webhook.id, 'dead');
    const unknown = await newCall(db, webhook.id, 'never-registered');
    const inRedis = await newCall(db, webhook.id, null);
    await db.query(`UPDATE webhook_calls SET status = 'success' WHERE id = $1`, [finished]);

    const orphans = await listOrphanedWebhookCalls(db, { leaseMs: 5000, limit: 100 });
    expect(orphans.map((c) => c.id)).toEqual([dead, unknown]);
    expect(orphans[0]!.webhookId).toBe(webhook.id);
    // A process never takes over its own calls, however late its heartbeat.
    const mine = await listOrphanedWebhookCalls(db, { leaseMs: 5000, limit: 100, self: 'dead' });
    expect(mine.map((c) => c.id)).toEqual([unknown]);

    // However old their clock, held calls are not "stranded": a live process owns them.
    const stranded = await listStrandedWebhookCalls(db, {
      before: new Date(Date.now() + 60_000),
      limit: 100,
    });
    expect(stranded.map((c) => c.id)).toContain(inRedis);
    expect(stranded.map((c) => c.id)).not.toContain(alive);
    expect(stranded.map((c) => c.id)).not.toContain(dead);
  });

  it('an outcome ends the hold; a release hands the call to the sweeper, due or not', async ({
    db,
  }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    await renewLease(db, lease('holder'));
    const answered = await newCall(db, webhook.id, 'holder');
    const deferred = await newCall(db, webhook.id, 'holder');
    const abandoned = await newCall(db, webhook.id, 'holder');
    await recordWebhookCallAttempts(db, [
      {
        id: answered,
        attempt: testAttempt({ durationMs: 12.5, requestUrl: 'http://x' }),
      },
    ]);
    expect(await releaseWebhookCalls(db, 'someone-else', [deferred], false)).toBe(0);
    expect(await releaseWebhookCalls(db, 'holder', [deferred], false)).toBe(1);
    expect(await releaseWebhookCalls(db, 'holder', [abandoned], true)).toBe(1);
    const { rows } = await db.query<{ id: string; held_by: string | null }>(
      'SELECT id, held_by FROM webhook_calls WHERE id = ANY($1::bigint[]) ORDER BY id',
      [[answered, deferred, abandoned]],
    );
    expect(rows.map((r) => r.held_by)).toEqual([null, null, null]);
    // Due: listed at once; not due (its job was just added): only after the sweeper's delay.
    const now = await listStrandedWebhookCalls(db, {
      before: new Date(Date.now() - 60_000),
      limit: 100,
    });
    expect(now.map((c) => c.id)).toContain(abandoned);
    expect(now.map((c) => c.id)).not.toContain(deferred);
  });

  it('forgets a lease that ran out only once it holds nothing', async ({ db }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    await renewLease(db, lease('gone-empty'));
    await renewLease(db, lease('gone-holding'));
    await ageLease(db, 'gone-empty', 10_000);
    await ageLease(db, 'gone-holding', 10_000);
    await newCall(db, webhook.id, 'gone-holding');
    await deleteExpiredLeases(db, 5000);
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM delivery_leases WHERE id LIKE 'gone-%' ORDER BY id`,
    );
    expect(rows.map((r) => r.id)).toEqual(['gone-holding']);
    await endLease(db, 'gone-holding');
  });
});

describe('a webhook turned off ends its waiting calls in the same statement', () => {
  async function waiting(db: Db, webhookId: string) {
    const pending = await newCall(db, webhookId, 'x');
    const rescheduled = await newCall(db, webhookId, null);
    const done = await newCall(db, webhookId, null);
    await db.query(
      `UPDATE webhook_calls SET status = 'rescheduled', next_retry_at = now() + interval '1 hour'
       WHERE id = $1`,
      [rescheduled],
    );
    await db.query(`UPDATE webhook_calls SET status = 'success' WHERE id = $1`, [done]);
    return { pending, rescheduled, done };
  }

  async function statesOf(db: Db, calls: { pending: string; rescheduled: string; done: string }) {
    return Promise.all(
      [calls.pending, calls.rescheduled, calls.done].map(async (id) => {
        const call = await findWebhookCall(db, id);
        return [call?.status, call?.nextRetryAt, call?.failureReason];
      }),
    );
  }

  it('on a disable by the API', async ({ db }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    const calls = await waiting(db, webhook.id);
    await updateWebhook(db, webhook.id, { name: 'renamed' });
    expect((await statesOf(db, calls))[0]![0]).toBe('pending');
    await updateWebhook(db, webhook.id, { enabled: false });
    expect(await statesOf(db, calls)).toEqual([
      ['failed', null, 'the webhook was disabled'],
      ['failed', null, 'the webhook was disabled'],
      ['success', null, null],
    ]);
  });

  it('on a disable by a worker (410 Gone), with the reason it gives', async ({ db }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    const calls = await waiting(db, webhook.id);
    await disableWebhook(db, webhook.id, 'answered 410', 'the webhook was disabled (410 Gone)');
    expect((await statesOf(db, calls)).map((s) => s[2])).toEqual([
      'the webhook was disabled (410 Gone)',
      'the webhook was disabled (410 Gone)',
      null,
    ]);
  });

  it('on a delete, and no new call is made for a webhook off or gone', async ({ db }) => {
    const webhook = await insertWebhook(db, testWebhookInput());
    const calls = await waiting(db, webhook.id);
    await deleteWebhook(db, webhook.id);
    expect((await statesOf(db, calls)).map((s) => s[0])).toEqual(['failed', 'failed', 'success']);
    expect((await findWebhookCall(db, calls.pending))?.failureReason).toBe(
      'the webhook was deleted',
    );

    const off = await insertWebhook(db, testWebhookInput({ enabled: false }));
    await insertEvents(db, [testItemEvent('after-off')]);
    const made = await createWebhookCalls(db, [
      {
        event: { id: 'after-off', entityType: 'item', eventType: 'update' },
        webhookIds: [webhook.id, off.id],
      },
    ]);
    expect(made).toEqual([]);
    const { rows } = await db.query(`SELECT 1 FROM webhook_calls WHERE event_id = 'after-off'`);
    expect(rows).toHaveLength(0);
  });
});

describe('the deployment', () => {
  it('has one identity per database, the same at every read', async ({ db }) => {
    const other = await createTestDb('postgres');
    try {
      const ours = await readDeploymentId(db);
      expect(ours).toMatch(/^[0-9a-f-]{36}$/);
      expect(await readDeploymentId(db)).toBe(ours);
      expect(await readDeploymentId(other.db)).not.toBe(ours);
    } finally {
      await other.cleanup();
    }
  });
});
