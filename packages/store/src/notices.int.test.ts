import { describe, expect, it } from 'vitest';
import { testWebhookInput } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import { createBulkJob, emitNotices, insertWebhook } from '@herald/store';

// emitNotices (notices.ts): each change told once, whoever looks, however often.
describe('notices', () => {
  const t = suiteTestDb();

  const setHealth = (webhookId: string, streak: number, openFor: number | null = null) =>
    t.db.query(
      `INSERT INTO webhook_health (webhook_id, failure_streak, circuit_open_until)
       VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (webhook_id) DO UPDATE SET failure_streak = EXCLUDED.failure_streak,
         circuit_open_until = EXCLUDED.circuit_open_until`,
      [webhookId, streak, openFor],
    );
  const kinds = async (ids: string[]) =>
    (
      await t.db.query<{ event_type: string; entity_id: string }>(
        `SELECT event_type, entity_id FROM events WHERE id = ANY($1) ORDER BY event_type`,
        [ids],
      )
    ).rows.map((row) => `${row.event_type}:${row.entity_id}`);

  it('tells failing at the threshold, not below, once; recovered at the next success', async () => {
    const a = (await insertWebhook(t.db, testWebhookInput())).id;
    await setHealth(a, 2);
    expect(await emitNotices(t.db, { failingAfter: 3 })).toEqual([]);
    await setHealth(a, 3, 60_000);
    expect(await kinds(await emitNotices(t.db, { failingAfter: 3 }))).toEqual([
      `circuit_opened:${a}`,
      `failing:${a}`,
    ]);
    await setHealth(a, 9, 60_000);
    expect(await emitNotices(t.db, { failingAfter: 3 })).toEqual([]);
    // A failure streak that goes down but not to 0 (cannot happen without a success, but the
    // rule is: only a success ends it) keeps it failing.
    await setHealth(a, 1, null);
    expect(await emitNotices(t.db, { failingAfter: 3 })).toEqual([]);
    await setHealth(a, 0);
    expect(await kinds(await emitNotices(t.db, { failingAfter: 3 }))).toEqual([`recovered:${a}`]);
    // failingAfter 0: no failing notices at all (circuits still).
    await setHealth(a, 50);
    expect(await emitNotices(t.db, { failingAfter: 0 })).toEqual([]);
  });

  it('tells each change once when processes look at the same time', async () => {
    const webhooks = await Promise.all(
      Array.from({ length: 20 }, () => insertWebhook(t.db, testWebhookInput())),
    );
    for (const webhook of webhooks) await setHealth(webhook.id, 5);
    await createBulkJob(t.db, {
      kind: 'bulk_resend',
      webhookId: null,
      filter: {},
      ratePerSecond: null,
    }).then((job) =>
      t.db.query("UPDATE bulk_jobs SET state = 'completed' WHERE id = $1", [job.id]),
    );
    const looks = await Promise.all(
      Array.from({ length: 6 }, () => emitNotices(t.db, { failingAfter: 5 })),
    );
    const told = await kinds(looks.flat());
    const ours = new Set(webhooks.map((webhook) => `failing:${webhook.id}`));
    expect(told.filter((k) => ours.has(k))).toHaveLength(20);
    expect(new Set(told).size).toBe(told.length);
    expect(told.filter((k) => k.startsWith('bulk_job_finished'))).toHaveLength(1);
  });
});
