import { beforeAll, describe, expect, it } from 'vitest';
import { testWebhookInput } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  createWebhookCallMonths,
  dropWebhookCallMonths,
  insertWebhook,
  listWebhookCalls,
} from '@herald/store';

// The delivery log's months (docs/architecture.md, The delivery log by month), made and dropped.

describe('the months of the delivery log', () => {
  const t = suiteTestDb();
  let webhookId: string;
  beforeAll(async () => {
    webhookId = (await insertWebhook(t.db, testWebhookInput())).id;
  });

  const months = async () => {
    const { rows } = await t.db.query<{ month: string }>(
      `SELECT substr(c.relname, 15) AS month FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'webhook_calls'::regclass AND c.relname <> 'webhook_calls_legacy'
       ORDER BY 1`,
    );
    return rows.map((row) => row.month);
  };
  /** A test call (no event) made at `at`, in its month's partition. */
  const call = async (at: string, status: string) =>
    (
      await t.db.query<{ id: string }>(
        `INSERT INTO webhook_calls (id, created_at, webhook_id, entity_type, event_type, status,
           test_event)
         VALUES (herald_webhook_call_id($1), $1, $2, 'item', 'update', $3, '{}') RETURNING id`,
        [new Date(at), webhookId, status],
      )
    ).rows[0]!.id;
  const total = async () =>
    (
      await listWebhookCalls(t.db, {
        limit: 1,
        offset: 0,
        orderBy: { column: 'created_at', desc: false },
      })
    ).totalCount;

  it('makes the months missing, each once, with its bounds, checks and unique index', async () => {
    const before = await months();
    expect(await createWebhookCallMonths(t.db, new Date('2024-11-20T00:00:00Z'), 3)).toBe(3);
    expect(await createWebhookCallMonths(t.db, new Date('2024-12-01T00:00:00Z'), 3)).toBe(1);
    expect(await months()).toEqual(['2024_11', '2024_12', '2025_01', '2025_02', ...before]);
    // In UTC, as the check's bounds are (a constraint's text is in the session's time zone).
    const rows = await t.db.transaction(async (tx) => {
      await tx.query(`SET LOCAL TIME ZONE 'UTC'`);
      const read = await tx.query<{ bound: string; checks: string; unique: string }>(
        `SELECT pg_get_expr(c.relpartbound, c.oid) AS bound,
           (SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k
            WHERE k.conrelid = c.oid AND k.conname = 'webhook_calls_2024_12_month') AS checks,
           (SELECT indexdef FROM pg_indexes
            WHERE indexname = 'webhook_calls_2024_12_event_webhook') AS unique
         FROM pg_class c WHERE c.oid = 'webhook_calls_2024_12'::regclass`,
      );
      return read.rows;
    });
    const first = BigInt(2024 * 12 + 11) << 36n;
    expect(rows[0]!.bound).toBe(`FOR VALUES FROM ('${first}') TO ('${first + (1n << 36n)}')`);
    expect(rows[0]!.checks).toMatch(/created_at >= '2024-12-01 00:00:00\+00'.*'2025-01-01/);
    expect(rows[0]!.unique).toMatch(/^CREATE UNIQUE INDEX .* \(event_id, webhook_id\)$/);
    const attempts = await t.db.query(`SELECT to_regclass('webhook_call_attempts_2024_12') AS t`);
    expect(attempts.rows[0]).toEqual({ t: 'webhook_call_attempts_2024_12' });
    // A call out of its month's bounds has no partition to go to.
    await expect(
      t.db.query(
        `INSERT INTO webhook_calls (id, created_at, webhook_id, entity_type, event_type, test_event)
         VALUES (herald_webhook_call_id('2024-12-05Z'), '2024-11-05Z', $1, 'item', 'update', '{}')`,
        [webhookId],
      ),
    ).rejects.toThrow(/webhook_calls_2024_12_month/);
  });

  it('drops the months past the retention with their counts, but not one a call is still on its way in', async () => {
    const counted = await total();
    await call('2024-11-03T00:00:00Z', 'success');
    await call('2024-11-04T00:00:00Z', 'failed');
    await call('2024-12-03T00:00:00Z', 'success');
    await call('2024-12-04T00:00:00Z', 'pending');
    await call('2025-01-03T00:00:00Z', 'success');
    expect(await total()).toBe(counted + 5);

    expect(await dropWebhookCallMonths(t.db, new Date('2025-01-15T00:00:00Z'))).toEqual({
      months: ['2024-11'],
      calls: 2,
    });
    expect(await months()).toContain('2024_12');
    expect(await months()).not.toContain('2024_11');
    const gone = await t.db.query(`SELECT to_regclass('webhook_call_attempts_2024_11') AS t`);
    expect(gone.rows[0]).toEqual({ t: null });
    const { rows } = await t.db.query<{ month: string }>(
      `SELECT DISTINCT month::text FROM webhook_call_counts WHERE month < '2025-01-01' ORDER BY 1`,
    );
    expect(rows.map((row) => row.month)).toEqual(['2024-12-01']);
    expect(await total()).toBe(counted + 3);

    await t.db.query(`UPDATE webhook_calls SET status = 'failed' WHERE status = 'pending'
      AND created_at < '2025-01-01'`);
    expect(await dropWebhookCallMonths(t.db, new Date('2025-02-01T00:00:00Z'))).toEqual({
      months: ['2024-12', '2025-01'],
      calls: 3,
    });
    expect(await total()).toBe(counted);
    // The legacy partition (migration 021), empty in a new database, is gone too.
    const legacy = await t.db.query(`SELECT to_regclass('webhook_calls_legacy') AS t`);
    expect(legacy.rows[0]).toEqual({ t: null });
  });
});
