import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDb, testAttempt, testWebhookInput, type TestDb } from '@herald/testkit';
import { suiteTestDb } from '@herald/testkit/fixtures';
import {
  createTestWebhookCall,
  createWebhookCalls,
  deleteFinishedWebhookCalls,
  deleteWebhook,
  dropWebhookCall,
  findEvents,
  findWebhookCall,
  findWebhookCalls,
  insertWebhook,
  listWebhookCallAttempts,
  listWebhookCalls,
  markEventsMatched,
  markWebhookCallsEnqueued,
  recordWebhookCallAttempts,
  type Queryable,
  type WebhookCallAttempt,
  type WebhookCallListQuery,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';

/**
 * Index scans of this transaction so far, by index name; a partition's index counts under the
 * partitioned table's (webhook_calls' indexes are one per month).
 */
async function indexScans(tx: Queryable): Promise<Record<string, number>> {
  const { rows } = await tx.query<{ name: string; scans: string }>(
    `SELECT r.relname AS name, sum(pg_stat_get_xact_numscans(c.oid)) AS scans FROM pg_class c
     JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
     WHERE c.relkind = 'i' AND c.relnamespace = current_schema()::regnamespace
     GROUP BY r.relname`,
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
      DO $$
      DECLARE
        month regclass;
      BEGIN
        FOR month IN SELECT inhrelid::regclass FROM pg_inherits
                     WHERE inhparent = 'webhook_calls'::regclass LOOP
          EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', month);
        END LOOP;
      END
      $$;
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
    const lazy = t.connect({ synchronousCommit: false });
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

const attempt = (
  status: 'success' | 'failed' | 'rescheduled',
  lastSentAt: Date,
  nextRetryAt: Date | null = null,
): WebhookCallAttempt =>
  testAttempt({
    status,
    responseStatus: status === 'success' ? 200 : 500,
    failureReason: status === 'success' ? null : 'HTTP 500',
    lastSentAt,
    nextRetryAt,
  });

/** Stored events: [id, entity id, entity type, event type, created_at of their calls]. */
async function insertEvents(
  db: Queryable,
  events: readonly (readonly [string, string, string, string])[],
): Promise<void> {
  await db.query(
    `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
       entity_id, occurred_at, entity)
     SELECT x.id, 'main', true, x.t, x.v, x.entity, now(), '{}'
     FROM json_to_recordset($1::json) AS x(id text, entity text, t text, v text)`,
    [JSON.stringify(events.map(([id, entity, t, v]) => ({ id, entity, t, v })))],
  );
}

const makeCalls = (
  db: Queryable,
  events: readonly (readonly [string, string, string, string])[],
  webhookIds: string[],
) =>
  createWebhookCalls(
    db,
    events.map(([id, , entityType, eventType]) => ({
      event: { id, entityType, eventType },
      webhookIds,
    })),
  );

/** The counts as webhook_call_counts keeps them and as the log has them, by key. */
async function expectCountsAgree(db: Queryable): Promise<void> {
  const key = `webhook_id, entity_type, event_type, status`;
  const kept = await db.query(
    `SELECT ${key}, month, sum(calls)::int AS n FROM webhook_call_counts
     GROUP BY ${key}, month HAVING sum(calls) <> 0 ORDER BY ${key}, month`,
  );
  const logged = await db.query(
    `SELECT ${key}, date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month,
       count(*)::int AS n
     FROM webhook_calls GROUP BY ${key}, 5 ORDER BY ${key}, 5`,
  );
  expect(kept.rows).toEqual(logged.rows);
  expect(logged.rows.length).toBeGreaterThan(0);
}

describe('recorded attempts', () => {
  const t = suiteTestDb('postgres');

  it('keep every field as the attempt had it, a lone surrogate stored as U+FFFD', async () => {
    const webhook = await insertWebhook(t.db, testWebhookInput());
    await insertEvents(t.db, [['rt-1', 'r1', 'item', 'update']]);
    const [call] = await makeCalls(t.db, [['rt-1', 'r1', 'item', 'update']], [webhook.id]);
    // What a receiver or a template can put there: quotes, backslashes, braces, newlines, any
    // Unicode; and an unpaired surrogate (a custom payload's), which is not Unicode.
    const tricky = `{"a": "q\\"uote\\\\", "b": [1, {"c": null}]}\n\t\u00e9 \u{1F600} } ] '`;
    const sent: WebhookCallAttempt = testAttempt({
      status: 'rescheduled',
      trigger: 'retry',
      durationMs: 12.345,
      tripsCircuit: true,
      requestUrl: 'https://example.com/hook?x="1"',
      requestHeaders: { 'content-type': 'application/json', 'x-quote': 'a "b" \\ c' },
      requestPayload: `${tricky} \ud800 end`,
      responseStatus: 503,
      responseHeaders: { 'retry-after': '5', 'x-list': 'a, b' },
      responsePayload: tricky,
      failureReason: 'HTTP 503 \udfff',
      attemptedAutoRetriesCount: 2,
      lastSentAt: new Date('2026-11-28T10:00:00.123Z'),
      nextRetryAt: new Date('2026-11-28T10:05:00.456Z'),
    });
    await recordWebhookCallAttempts(t.db, [{ id: call!.id, attempt: sent }]);
    const stored = await findWebhookCall(t.db, call!.id);
    expect(stored).toMatchObject({
      status: 'rescheduled',
      requestUrl: sent.requestUrl,
      requestHeaders: sent.requestHeaders,
      requestPayload: `${tricky} \ufffd end`,
      responseStatus: 503,
      responseHeaders: sent.responseHeaders,
      responsePayload: tricky,
      failureReason: 'HTTP 503 \ufffd',
      attemptedAutoRetriesCount: 2,
      lastSentAt: sent.lastSentAt,
      nextRetryAt: sent.nextRetryAt,
    });
    const history = await listWebhookCallAttempts(t.db, call!.id, { offset: 0, limit: 10 });
    expect(history?.attempts).toHaveLength(1);
    expect(history?.attempts[0]).toMatchObject({
      trigger: 'retry',
      outcome: 'rescheduled',
      durationMs: 12.345,
      requestHeaders: sent.requestHeaders,
      responseHeaders: sent.responseHeaders,
      responsePayload: tricky,
    });
  });
});

describe.each(['postgres', 'embedded'] as const)('webhook_call_counts (%s)', (kind) => {
  const t = suiteTestDb(kind);

  it('agree with the log after every kind of write', async () => {
    const a = await insertWebhook(t.db, testWebhookInput());
    const b = await insertWebhook(t.db, testWebhookInput());
    const events = [
      ['k1', 'r1', 'item', 'update'],
      ['k2', 'r1', 'item', 'publish'],
      ['k3', 'r2', 'upload', 'create'],
      ['k4', 'r2', 'item', 'update'],
    ] as const;
    await insertEvents(t.db, events);
    const calls = await makeCalls(t.db, events, [a.id, b.id]);
    expect(calls).toHaveLength(8);
    await expectCountsAgree(t.db);
    // Outcomes, several statuses in one statement; a repeat of a status changes nothing.
    const now = new Date();
    const outcomes = ['success', 'failed', 'rescheduled', 'success'] as const;
    await recordWebhookCallAttempts(
      t.db,
      calls.slice(0, 4).map((call, i) => ({ id: call.id, attempt: attempt(outcomes[i]!, now) })),
    );
    await recordWebhookCallAttempts(
      t.db,
      [{ id: calls[0]!.id, attempt: attempt('success', now) }],
      undefined,
      false,
    );
    await expectCountsAgree(t.db);
    await dropWebhookCall(t.db, calls[4]!.id, 'the webhook was disabled');
    await markWebhookCallsEnqueued(t.db, [calls[5]!.id]);
    await expectCountsAgree(t.db);
    const [stored] = await findEvents(t.db, ['k1']);
    await createTestWebhookCall(t.db, a.id, stored!);
    await expectCountsAgree(t.db);
    // The webhook's deletion ends its unfinished calls; retention deletes finished ones; an
    // event's deletion takes its calls with it.
    await deleteWebhook(t.db, b.id);
    await expectCountsAgree(t.db);
    expect(await deleteFinishedWebhookCalls(t.db, new Date(Date.now() + 60_000), 2)).toBe(2);
    await expectCountsAgree(t.db);
    await t.db.query(`DELETE FROM events WHERE id = 'k4'`);
    await expectCountsAgree(t.db);
  });
});

describe('webhook_call_counts under concurrent writers', () => {
  const t = suiteTestDb();

  it('never make a writer wait for another: a key held by one transaction gets a row of its own', async () => {
    const hook = await insertWebhook(t.db, testWebhookInput());
    await insertEvents(t.db, [
      ['w0', 'r9', 'item', 'delete'],
      ['w1', 'r9', 'item', 'delete'],
      ['w2', 'r9', 'item', 'delete'],
    ]);
    // The key has a row ...
    await makeCalls(t.db, [['w0', 'r9', 'item', 'delete']], [hook.id]);
    await t.db.transaction(async (tx) => {
      // ... which this transaction holds until it commits ...
      await makeCalls(tx, [['w1', 'r9', 'item', 'delete']], [hook.id]);
      // ... while another one counts a call of the same key. Were it to wait for the row, it
      // would wait for this transaction, which waits for it: lock_timeout turns that into an
      // error instead of a test that never ends.
      await t.db.transaction(async (other) => {
        await other.query(`SET LOCAL lock_timeout = '5s'`);
        await makeCalls(other, [['w2', 'r9', 'item', 'delete']], [hook.id]);
      });
    });
    const { rows } = await t.db.query<{ shards: number; n: number }>(
      `SELECT count(*)::int AS shards, sum(calls)::int AS n FROM webhook_call_counts
         WHERE webhook_id = $1`,
      [hook.id],
    );
    expect(rows[0]).toEqual({ shards: 2, n: 3 });
    await expectCountsAgree(t.db);
  });
});

describe("the log's hot statements on their month's partitions", () => {
  const t = suiteTestDb();

  it('counts the call from the status it has when the write locks it, not when it began', async () => {
    const hook = await insertWebhook(t.db, testWebhookInput());
    await insertEvents(t.db, [['o1', 'r1', 'item', 'update']]);
    const [call] = await makeCalls(t.db, [['o1', 'r1', 'item', 'update']], [hook.id]);
    let written: Promise<void> | undefined;
    await t.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Another writer ends the call (the webhook was disabled) and holds the row ...
      await dropWebhookCall(tx, call!.id, 'the webhook was disabled');
      // ... while the outcome's statement starts, takes its snapshot (the call pending) and
      // waits for the row.
      written = recordWebhookCallAttempts(
        t.db,
        [{ id: call!.id, attempt: attempt('success', new Date()) }],
        undefined,
        false,
      );
      await expect
        .poll(async () => {
          const blocked = await t.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE $1::int = ANY (pg_blocking_pids(pid))`,
            [rows[0]!.pid],
          );
          return blocked.rows[0]!.n;
        })
        .toBe(1);
    });
    await written;
    // The call went failed → success, and is counted so: pending → success would leave one
    // failed call counted that is not in the log.
    await expectCountsAgree(t.db);
  });

  it("makes calls through the parent when the process's clock says another month", async () => {
    const hook = await insertWebhook(t.db, testWebhookInput());
    const now = Date.now();
    // 40 days back: a month without a partition; 40 days on: a partition that exists, whose
    // bounds refuse a call Postgres makes now.
    for (const [i, days] of [-40, 40].entries()) {
      const id = `clock-${i}`;
      await insertEvents(t.db, [[id, 'r1', 'item', 'update']]);
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(now + days * 86_400_000);
      try {
        expect(await makeCalls(t.db, [[id, 'r1', 'item', 'update']], [hook.id])).toHaveLength(1);
      } finally {
        vi.useRealTimers();
      }
    }
    await expectCountsAgree(t.db);
  });

  it('records the outcomes of calls of two months together, or neither', async () => {
    const hook = await insertWebhook(t.db, testWebhookInput());
    await insertEvents(t.db, [
      ['two-1', 'r1', 'item', 'update'],
      ['two-2', 'r1', 'item', 'update'],
    ]);
    // A call made before the log was partitioned (an id below 2^36: the legacy partition) ...
    await t.db.query(
      `INSERT INTO webhook_calls (id, event_id, webhook_id, entity_type, event_type)
       VALUES (7, 'two-1', $1, 'item', 'update')`,
      [hook.id],
    );
    // ... and one of this month, whose outcome Postgres refuses.
    const [call] = await makeCalls(t.db, [['two-2', 'r1', 'item', 'update']], [hook.id]);
    const bogus = { ...attempt('success', new Date()), status: 'bogus' as 'success' };
    await expect(
      recordWebhookCallAttempts(t.db, [
        { id: '7', attempt: attempt('success', new Date()) },
        { id: call!.id, attempt: bogus },
      ]),
    ).rejects.toThrow(/status_check/);
    const { rows } = await t.db.query<{ attempts: number }>(
      `SELECT attempts_count AS attempts FROM webhook_calls WHERE id = 7`,
    );
    expect(rows[0]!.attempts).toBe(0);
    await expectCountsAgree(t.db);
  });

  it('writes nothing for a call whose month has no partition (retention dropped it)', async () => {
    // The first call id of January 2100 (months since year 0, then the sequence: migration 021).
    const id = ((BigInt(2100 * 12) << 36n) + 1n).toString();
    await expect(
      recordWebhookCallAttempts(t.db, [{ id, attempt: attempt('success', new Date()) }]),
    ).resolves.toBeUndefined();
  });
});

describe.each(['postgres', 'embedded'] as const)('listWebhookCalls (%s)', (kind) => {
  let t: TestDb;
  let a: WebhookRecord;
  let b: WebhookRecord;
  let all: WebhookCallRecord[];
  const base: WebhookCallListQuery = {
    eq: {},
    range: {},
    orderBy: { column: 'created_at', desc: false },
    offset: 0,
    limit: 500,
  };
  const list = (query: Partial<WebhookCallListQuery>, cap?: number) =>
    listWebhookCalls(t.db, { ...base, ...query }, cap);
  const ids = (calls: readonly WebhookCallRecord[]) => calls.map((call) => call.id);

  beforeAll(async () => {
    t = await createTestDb(kind);
    a = await insertWebhook(t.db, testWebhookInput());
    b = await insertWebhook(t.db, testWebhookInput());
    const events = Array.from(
      { length: 12 },
      (_, i) =>
        [
          `ev-${i}`,
          `entity-${i % 3}`,
          i % 4 === 0 ? 'upload' : 'item',
          i % 2 ? 'publish' : 'update',
        ] as const,
    );
    await insertEvents(t.db, events);
    const calls = await makeCalls(t.db, events, [a.id, b.id]);
    // created_at one minute apart, in id order (within this month: its partition's); a third of
    // the calls sent, some to be retried.
    await t.db.query(
      `UPDATE webhook_calls c SET created_at = date_trunc('month', now()) + o.n * interval '1 minute'
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM webhook_calls) o
       WHERE o.id = c.id`,
    );
    await recordWebhookCallAttempts(
      t.db,
      calls
        .filter((_, i) => i % 3 === 0)
        .map((call, i) => ({
          id: call.id,
          attempt: attempt(
            i % 2 ? 'rescheduled' : 'success',
            new Date(Date.UTC(2026, 1, 1, 0, 60 - i)),
            i % 2 ? new Date(Date.UTC(2026, 2, 1, 0, i)) : null,
          ),
        })),
    );
    const [stored] = await findEvents(t.db, ['ev-1']);
    await createTestWebhookCall(t.db, b.id, stored!);
    all = (
      await findWebhookCalls(
        t.db,
        (await t.db.query<{ id: string }>('SELECT id FROM webhook_calls')).rows.map((r) => r.id),
      )
    ).sort((x, y) => Number(x.id) - Number(y.id));
    expect(all).toHaveLength(25);
  }, 60_000);
  afterAll(async () => {
    await t.cleanup();
  });

  it('counts exactly, from the counts alone, by webhook, entity type, event type and status', async () => {
    const filters: WebhookCallListQuery['eq'][] = [
      {},
      { webhook_id: a.id },
      { status: 'pending' },
      { entity_type: 'upload' },
      { event_type: 'publish', webhook_id: b.id },
      { webhook_id: 'nope' },
      { status: 'failed' },
    ];
    for (const eq of filters) {
      const expected = all.filter((call) =>
        Object.entries(eq ?? {}).every(
          ([key, value]) =>
            ({
              webhook_id: call.webhookId,
              status: call.status,
              entity_type: call.entityType,
              event_type: call.eventType,
            })[key] === value,
        ),
      );
      const page = await list({ eq, limit: 3 }, 0);
      expect({ eq, total: page.totalCount, exact: page.exact }).toEqual({
        eq,
        total: expected.length,
        exact: true,
      });
      expect(ids(page.calls)).toEqual(ids(expected).slice(0, 3));
    }
  });

  it('filters by event id and by entity id, a test call by the event it carries', async () => {
    const byEvent = await list({ eq: { event_id: 'ev-1' } });
    expect(byEvent.calls.map((call) => [call.eventId, call.webhookId, !!call.testEvent])).toEqual([
      ['ev-1', a.id, false],
      ['ev-1', b.id, false],
      ['ev-1', b.id, true],
    ]);
    expect(byEvent).toMatchObject({ totalCount: 3, exact: true });
    const byEntity = await list({
      eq: { entity_id: 'entity-1' },
      orderBy: { column: 'webhook_id', desc: true },
    });
    // ev-1, ev-4, ev-7, ev-10 and the test call of ev-1.
    expect(byEntity.calls.map((call) => call.eventId).sort()).toEqual([
      'ev-1',
      'ev-1',
      'ev-1',
      'ev-10',
      'ev-10',
      'ev-4',
      'ev-4',
      'ev-7',
      'ev-7',
    ]);
    expect(byEntity.calls.map((call) => call.webhookId)).toEqual([
      ...Array(5).fill(b.id),
      ...Array(4).fill(a.id),
    ]);
    expect(byEntity).toMatchObject({ totalCount: 9, exact: true });
    expect(await list({ eq: { event_id: 'nope' } })).toEqual({
      calls: [],
      totalCount: 0,
      exact: true,
    });
    expect(await list({ eq: { entity_id: 'entity-1', event_id: 'ev-4' } })).toMatchObject({
      totalCount: 2,
    });
  });

  it('counts up to the cap exactly, and past it answers a bound never below the truth', async () => {
    const range = (n: number) => ({
      created_at: { gt: all[0]!.createdAt, lt: all[n + 1]!.createdAt },
    });
    // n calls strictly between the first and the (n+2)th.
    expect(await list({ range: range(5) }, 5)).toMatchObject({ totalCount: 5, exact: true });
    const over = await list({ range: range(6), limit: 2 }, 5);
    expect(over.exact).toBe(false);
    // The bound: the calls of the range's month (all of them, the test call too).
    expect(over.totalCount).toBe(25);
    // ids are counted as any filter, and bounded by how many were asked for.
    const asked = await list(
      {
        ids: all
          .slice(0, 7)
          .map((c) => c.id)
          .concat(['0', 'x']),
      },
      5,
    );
    expect(asked).toMatchObject({ totalCount: 7, exact: false });
    // The official client's paged iterator: the first page's total_count, then every offset below
    // it. Nothing is missed, whatever the cap.
    for (const cap of [0, 3, 6, 100]) {
      const first = await list({ range: range(6), limit: 2 }, cap);
      const seen = [...first.calls];
      for (let offset = 2; offset < first.totalCount; offset += 2) {
        seen.push(...(await list({ range: range(6), limit: 2, offset }, cap)).calls);
      }
      expect(ids(seen)).toEqual(ids(all.slice(1, 7)));
      expect(first.totalCount).toBeGreaterThanOrEqual(6);
    }
  });

  it('orders every way, missing dates last, through every kind of page statement', async () => {
    const columns = ['created_at', 'last_sent_at', 'next_retry_at', 'webhook_id'] as const;
    const value = (call: WebhookCallRecord, column: (typeof columns)[number]) =>
      ({
        created_at: call.createdAt.getTime(),
        last_sent_at: call.lastSentAt?.getTime() ?? null,
        next_retry_at: call.nextRetryAt?.getTime() ?? null,
        webhook_id: Number(call.webhookId),
      })[column];
    // Without a filter, with one the counts answer, and with one counted call by call (whose
    // calls are found first, then sorted).
    const filters: [Partial<WebhookCallListQuery>, (call: WebhookCallRecord) => boolean][] = [
      [{}, () => true],
      [{ eq: { webhook_id: b.id } }, (call) => call.webhookId === b.id],
      [
        { range: { created_at: { gt: all[2]!.createdAt } } },
        (call) => call.createdAt > all[2]!.createdAt,
      ],
    ];
    for (const column of columns) {
      for (const desc of [false, true]) {
        for (const [filter, keep] of filters) {
          const expected = all.filter(keep).sort((x, y) => {
            const [vx, vy] = [value(x, column), value(y, column)];
            if (vx !== vy) {
              if (vx === null) return 1;
              if (vy === null) return -1;
              return desc ? vy - vx : vx - vy;
            }
            return desc ? Number(y.id) - Number(x.id) : Number(x.id) - Number(y.id);
          });
          for (const [offset, limit] of [
            [0, 500],
            [0, 4],
            [5, 4],
            [9, 30],
          ] as const) {
            const page = await list({ ...filter, orderBy: { column, desc }, offset, limit });
            expect({ column, desc, filter, offset, ids: ids(page.calls) }).toEqual({
              column,
              desc,
              filter,
              offset,
              ids: ids(expected).slice(offset, offset + limit),
            });
          }
        }
      }
    }
  });
});
