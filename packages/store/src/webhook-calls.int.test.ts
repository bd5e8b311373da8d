import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, createTestDb, testWebhookInput, type TestDb } from '@herald/testkit';
import {
  createPostgresDb,
  createWebhookCalls,
  dropWebhookCall,
  findWebhookCall,
  insertWebhook,
  markEventsMatched,
  type Queryable,
} from '@herald/store';

/** Index scans of this transaction so far, by index name. */
async function indexScans(tx: Queryable): Promise<Record<string, number>> {
  const { rows } = await tx.query<{ name: string; scans: string }>(
    `SELECT c.relname AS name, pg_stat_get_xact_numscans(c.oid) AS scans FROM pg_class c
     WHERE c.relkind = 'i' AND c.relnamespace = current_schema()::regnamespace`,
  );
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.scans)]));
}

const insertEvent = (tx: Queryable, id: string) =>
  tx.query(
    `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
       entity_id, occurred_at, entity)
     VALUES ($1, 'main', true, 'item', 'update', 'r1', now(), '{}')`,
    [id],
  );

describe('webhook_calls statements with a backlog', () => {
  let t: TestDb;
  let webhookId: string;

  beforeAll(async () => {
    t = await createTestDb('postgres');
    const webhook = await insertWebhook(t.db, testWebhookInput());
    webhookId = webhook.id;
    // Statistics read while everything was matched and answered (a quiet system) ...
    await t.db.exec(`
      ALTER TABLE events SET (autovacuum_enabled = false);
      ALTER TABLE webhook_calls SET (autovacuum_enabled = false);
      INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
        entity_id, occurred_at, entity, matched_at)
      SELECT 'done-' || g, 'main', true, 'item', 'update', 'r' || g, now(), '{}', now()
      FROM generate_series(1, 2000) g;
      INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status)
      SELECT 'done-' || g, ${Number(webhookId)}, 'item', 'update', 'success'
      FROM generate_series(1, 2000) g;
      ANALYZE events;
      ANALYZE webhook_calls;
    `);
    // ... then a backlog: events not matched yet, calls not answered yet.
    await t.db.exec(`
      INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
        entity_id, occurred_at, entity)
      SELECT 'backlog-' || g, 'main', true, 'item', 'update', 'r' || g, now(), '{}'
      FROM generate_series(1, 20000) g;
      INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type)
      SELECT 'backlog-' || g, ${Number(webhookId)}, 'item', 'update'
      FROM generate_series(1, 20000) g;
    `);
  }, 60_000);

  afterAll(async () => {
    await t.cleanup();
  });

  it('matching and dropping look rows up by key, not by scanning the backlog', async () => {
    const scans = await t.db.transaction(async (tx) => {
      await insertEvent(tx, 'fresh-1');
      await insertEvent(tx, 'fresh-2');
      const calls = await createWebhookCalls(tx, [
        {
          event: { id: 'fresh-1', entityType: 'item', eventType: 'update' },
          webhookIds: [webhookId],
        },
      ]);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.webhook?.id).toBe(webhookId);
      // A repeat makes nothing and returns nothing: the call belongs to whoever made it.
      const repeat = await createWebhookCalls(tx, [
        {
          event: { id: 'fresh-1', entityType: 'item', eventType: 'update' },
          webhookIds: [webhookId],
        },
      ]);
      expect(repeat).toEqual([]);
      expect(await markEventsMatched(tx, ['fresh-2'])).toBe(1);
      expect(await markEventsMatched(tx, ['fresh-2'])).toBe(0);
      await dropWebhookCall(tx, calls[0]!.id, 'the webhook was deleted');
      return { scans: await indexScans(tx), callId: calls[0]!.id };
    });
    // The partial indexes (the sweeper's) were not scanned: each such scan reads the whole
    // backlog (20,000 entries here) to find one row.
    expect(scans.scans['events_unmatched'] ?? 0).toBe(0);
    expect(scans.scans['webhook_calls_unfinished'] ?? 0).toBe(0);
    expect(scans.scans['events_pkey']).toBeGreaterThan(0);
    const dropped = await findWebhookCall(t.db, scans.callId);
    expect(dropped?.status).toBe('failed');
    expect(dropped?.failureReason).toBe('the webhook was deleted');
  });

  it('gives every call its webhook, one record per webhook, and none to a webhook off or gone', async () => {
    const other = await insertWebhook(t.db, testWebhookInput());
    const off = await insertWebhook(t.db, testWebhookInput({ enabled: false }));
    const match = (id: string) => ({
      event: { id, entityType: 'item', eventType: 'update' },
      // The caller's index may be behind: the webhooks' rows decide.
      webhookIds: [webhookId, other.id, off.id, '999999'],
    });
    const calls = await t.db.transaction(async (tx) => {
      await insertEvent(tx, 'fan-1');
      await insertEvent(tx, 'fan-2');
      return createWebhookCalls(tx, [match('fan-1'), match('fan-2')]);
    });
    expect(calls.map((call) => [call.eventId, call.webhookId, call.webhook?.id ?? null])).toEqual([
      ['fan-1', webhookId, webhookId],
      ['fan-1', other.id, other.id],
      ['fan-2', webhookId, webhookId],
      ['fan-2', other.id, other.id],
    ]);
    expect(calls[2]!.webhook).toBe(calls[0]!.webhook);
    expect(calls[1]!.webhook?.signingSecret).toBe(other.signingSecret);
  });

  it('commits the calls it makes durably, even on a pool that does not wait for the WAL', async () => {
    // The workers' pool runs with synchronous_commit=off; a crash that forgot calls already sent
    // would match their events again under new call ids (new webhook-ids). Postgres applies the
    // setting in effect when the transaction commits.
    const lazy = createPostgresDb({
      connectionString: TEST_DATABASE_URL,
      searchPath: t.schema!,
      synchronousCommit: false,
      maxConnections: 1,
    });
    try {
      const setting = await lazy.transaction(async (tx) => {
        await insertEvent(tx, 'durable-1');
        const before = await tx.query<{ s: string }>(
          `SELECT current_setting('synchronous_commit') AS s`,
        );
        expect(before.rows[0]!.s).toBe('off');
        await createWebhookCalls(tx, [
          {
            event: { id: 'durable-1', entityType: 'item', eventType: 'update' },
            webhookIds: [webhookId],
          },
        ]);
        const { rows } = await tx.query<{ s: string }>(
          `SELECT current_setting('synchronous_commit') AS s`,
        );
        return rows[0]!.s;
      });
      expect(setting).toBe('on');
    } finally {
      await lazy.close();
    }
  });
});
