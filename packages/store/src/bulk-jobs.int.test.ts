import { describe, expect, it } from 'vitest';
import { testWebhookInput } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  addReplayItems,
  cancelBulkJob,
  claimBulkJob,
  createBulkJob,
  emitNotices,
  endBulkJob,
  findBulkJob,
  finishBulkJobItems,
  insertWebhook,
  listReplayCandidates,
  renewLease,
  resumeBulkJob,
  selectBulkResendCalls,
  takeBulkJobItems,
  takeReplayCall,
} from '@herald/store';

// A bulk job's statements, one after another as a delivery process runs them (the delivery
// tests run them end to end on Postgres), on both databases: the embedded default too.
describe.each(['postgres', 'embedded'] as const)('bulk jobs on %s', (kind) => {
  const t = suiteTestDb(kind);

  const lease = { id: 'lease-a', host: 'test', pid: 1 };
  const addEvents = (prefix: string, count: number, at = '2026-11-01T00:00:00Z') =>
    t.db.query(
      `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
         entity_id, occurred_at, entity, matched_at)
       SELECT $1 || i, 'main', true, 'upload', 'update', 'u-' || i,
         $3::timestamptz - (($2 - i) * interval '1 minute'),
         jsonb_build_object('type', 'upload', 'id', 'u-' || i), now()
       FROM generate_series(1, $2) AS i`,
      [prefix, count, at],
    );

  /** A new webhook and a replay job for it over the events after `gt`, once `addEvents` added them. */
  async function replayOf(prefix: string, count: number, at: string, gt: string) {
    await renewLease(t.db, lease);
    const webhook = await insertWebhook(t.db, testWebhookInput());
    await addEvents(prefix, count, at);
    const job = await createBulkJob(t.db, {
      kind: 'replay',
      webhookId: webhook.id,
      filter: { occurred_at: { gt } },
      ratePerSecond: null,
    });
    return { webhook, job };
  }

  it('selects, takes, finishes and takes over a bulk resend; a cancel stops it', async () => {
    await renewLease(t.db, lease);
    const webhook = await insertWebhook(t.db, testWebhookInput());
    await addEvents('r-', 5);
    await t.db.query(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status)
       SELECT 'r-' || i, $1, 'upload', 'update', CASE WHEN i = 5 THEN 'success' ELSE 'failed' END
       FROM generate_series(1, 5) AS i`,
      [webhook.id],
    );
    const job = await createBulkJob(t.db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id, status: 'failed' },
      ratePerSecond: null,
    });
    const claimed = await claimBulkJob(t.db, lease.id, 60_000, []);
    expect(claimed).toMatchObject({ id: job.id, state: 'running', matched: null });
    // Held by a live lease: not another process's to take, nor this one's again.
    expect(await claimBulkJob(t.db, 'lease-b', 60_000, [])).toBeNull();
    expect(await claimBulkJob(t.db, lease.id, 60_000, [job.id])).toBeNull();

    expect(
      await selectBulkResendCalls(t.db, job.id, { webhook_id: webhook.id, status: 'failed' }),
    ).toBe(4);
    const first = await takeBulkJobItems(t.db, job.id, lease.id, 3);
    expect(first?.map((item) => item.position)).toEqual(['1', '2', '3']);
    // Items 1 and 2 finished; 3 was being sent when its process "died".
    await finishBulkJobItems(
      t.db,
      job.id,
      lease.id,
      [
        { position: '1', outcome: 'succeeded' },
        { position: '2', outcome: 'skipped' },
      ],
      12.5,
    );
    // Item 3's call got its attempt recorded before the death: taken over, it is finished.
    await t.db.query(
      `INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
         request_url, request_headers)
       VALUES ($1, 1, 'bulk_resend', 'success', now(), 'http://x', '{}')`,
      [first![2]!.callId],
    );
    await resumeBulkJob(t.db, job.id, 'bulk_resend');
    expect(await findBulkJob(t.db, job.id)).toMatchObject({
      matched: 4,
      succeeded: 2,
      skipped: 1,
      observedRate: 12.5,
    });
    const rest = await takeBulkJobItems(t.db, job.id, lease.id, 10);
    expect(rest?.map((item) => item.position)).toEqual(['4']);
    await finishBulkJobItems(t.db, job.id, lease.id, [{ position: '4', outcome: 'failed' }], null);
    expect(await takeBulkJobItems(t.db, job.id, lease.id, 10)).toEqual([]);
    expect(await endBulkJob(t.db, job.id, lease.id, { state: 'completed' })).toMatchObject({
      state: 'completed',
      succeeded: 2,
      failed: 1,
      skipped: 1,
    });
    // Its end is told once.
    const notices = await emitNotices(t.db, { failingAfter: 0 });
    expect(notices).toHaveLength(1);

    const other = await createBulkJob(t.db, {
      kind: 'bulk_resend',
      webhookId: null,
      filter: {},
      ratePerSecond: 5,
    });
    await claimBulkJob(t.db, lease.id, 60_000, []);
    expect((await cancelBulkJob(t.db, other.id))?.state).toBe('cancelled');
    // The process running it finds it is no longer its own at its next batch.
    expect(await takeBulkJobItems(t.db, other.id, lease.id, 10)).toBeNull();
  });

  it('selects a replay page by page in occurrence order and makes its calls once', async () => {
    // p-1 occurred first (23:55), p-6 last (00:00); the range leaves out p-1 and p-2.
    const { webhook, job } = await replayOf(
      'p-',
      6,
      '2026-12-01T00:00:00Z',
      '2026-11-30T23:56:30Z',
    );
    await claimBulkJob(t.db, lease.id, 60_000, []);
    const range = { gt: '2026-11-30T23:56:30Z' };
    const page = await listReplayCandidates(t.db, {
      range,
      after: null,
      entityTypes: ['upload'],
      limit: 2,
    });
    expect(page.map((event) => event.id)).toEqual(['p-3', 'p-4']);
    expect(await addReplayItems(t.db, job.id, lease.id, ['p-3', 'p-4'], page[1]!, false)).toBe(
      true,
    );
    const after = (await findBulkJob(t.db, job.id))!.selectAfter;
    const next = await listReplayCandidates(t.db, {
      range,
      after,
      entityTypes: ['upload'],
      limit: 2,
    });
    expect(next.map((event) => event.id)).toEqual(['p-5', 'p-6']);
    expect(await addReplayItems(t.db, job.id, lease.id, ['p-6'], next[1]!, true)).toBe(true);
    expect(await findBulkJob(t.db, job.id)).toMatchObject({ matched: 3, selected: 3 });

    const items = await takeBulkJobItems(t.db, job.id, lease.id, 10);
    expect(items?.map((item) => item.eventId)).toEqual(['p-3', 'p-4', 'p-6']);
    const made = await takeReplayCall(t.db, job.id, items![0]!.position, 'p-3', webhook.id);
    expect(made).toMatchObject({ newCall: true });
    // Taken again (the job taken over): the same call, no second one.
    await t.db.query('UPDATE bulk_job_items SET call_id = NULL WHERE job_id = $1', [job.id]);
    const again = await takeReplayCall(t.db, job.id, items![0]!.position, 'p-3', webhook.id);
    expect(again).toEqual({ callId: made!.callId, newCall: false });
    // Never swept: its first attempt is the job's.
    const { rows } = await t.db.query<{ swept: boolean }>(
      `SELECT enqueued_at = 'infinity' AS swept FROM webhook_calls WHERE id = $1`,
      [made!.callId],
    );
    expect(rows).toEqual([{ swept: true }]);
  });

  it('cancelling a replay ends the new calls whose first attempt never went', async () => {
    const { webhook, job } = await replayOf(
      'c-',
      2,
      '2027-01-01T00:00:00Z',
      '2026-12-31T23:58:30Z',
    );
    // The earlier tests' jobs still running are this process's already.
    const { rows: earlier } = await t.db.query<{ id: string }>(
      "SELECT id FROM bulk_jobs WHERE state = 'running'",
    );
    const claimed = await claimBulkJob(
      t.db,
      lease.id,
      60_000,
      earlier.map((row) => row.id),
    );
    expect(claimed?.id).toBe(job.id);
    expect(await addReplayItems(t.db, job.id, lease.id, ['c-1', 'c-2'], null, true)).toBe(true);
    const items = await takeBulkJobItems(t.db, job.id, lease.id, 10);
    // c-1's call was sent (an attempt recorded on it); c-2's was made, then its process died.
    const sent = await takeReplayCall(t.db, job.id, items![0]!.position, 'c-1', webhook.id);
    await t.db.query(
      `UPDATE webhook_calls SET status = 'success', attempts_count = 1 WHERE id = $1`,
      [sent!.callId],
    );
    const unsent = await takeReplayCall(t.db, job.id, items![1]!.position, 'c-2', webhook.id);
    expect((await cancelBulkJob(t.db, job.id))?.state).toBe('cancelled');
    const { rows } = await t.db.query<{ id: string; status: string; failure_reason: string }>(
      'SELECT id, status, failure_reason FROM webhook_calls WHERE id = ANY($1) ORDER BY id',
      [[sent!.callId, unsent!.callId]],
    );
    expect(rows).toEqual([
      { id: sent!.callId, status: 'success', failure_reason: null },
      { id: unsent!.callId, status: 'failed', failure_reason: 'the replay was cancelled' },
    ]);
  });
});
