import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb, testItemEvent, type TestDb } from '@herald/testkit';
import { createPostgresDb, type Db } from './db.js';
import { insertEvents } from './events.js';
import { createWebhookCalls, deleteFinishedWebhookCalls } from './webhook-calls/write.js';
import {
  findWebhookCalls,
  listWebhookCallAttempts,
  listWebhookCalls,
} from './webhook-calls/list.js';
import { dropWebhookCallMonths } from './webhook-calls/partitions.js';
import { findWebhook } from './webhooks.js';
import { loadMigrations, migrate, splitStatements } from './migrate.js';
import { findEnvironment, findPrimaryEnvironment } from './environments.js';
import { createToken, findTokenByHash, hashToken, listTokens, revokeToken } from './tokens.js';

describe('splitStatements', () => {
  it('splits on top-level semicolons only', () => {
    const sql = `CREATE TABLE a (x text DEFAULT 'a;b'); -- c;d
CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;
SELECT 'it''s; fine'`;
    expect(splitStatements(sql)).toEqual([
      "CREATE TABLE a (x text DEFAULT 'a;b')",
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql',
      "SELECT 'it''s; fine'",
    ]);
  });
});

describe.each(['postgres', 'embedded'] as const)('the store on %s', (kind) => {
  const opened: TestDb[] = [];
  const open = async () => {
    const t = await createTestDb(kind);
    opened.push(t);
    return t.db;
  };
  afterAll(async () => {
    for (const t of opened) await t.cleanup();
  });

  /** A database migrated by `migrate` here up to (not including) `version`, or all the way. */
  const openBefore = async (version = Number.POSITIVE_INFINITY): Promise<Db> => {
    const before = (await loadMigrations()).filter((m) => m.version < version);
    const t = await createTestDb(kind);
    opened.push(t);
    await t.db.exec(`DROP SCHEMA ${t.schema!} CASCADE; CREATE SCHEMA ${t.schema!}`);
    await migrate(t.db, before);
    return t.db;
  };

  it('applies every migration once and records it', async () => {
    const db = await openBefore();
    const all = await loadMigrations();
    const { rows } = await db.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    expect(rows.map((r) => r.version)).toEqual(all.map((m) => m.version));
    expect(await migrate(db)).toEqual([]);
  }, 120_000);

  it('has the main environment with locales ["en"] after the first migration', async () => {
    const db = await open();
    expect(await findPrimaryEnvironment(db)).toEqual({
      id: 'main',
      locales: ['en'],
      isPrimary: true,
    });
    expect(await findEnvironment(db, 'nope')).toBeNull();
  });

  it('rolls a failing migration back whole', async () => {
    const db = await open();
    const broken = [
      { version: 9999, name: '9999_broken', sql: 'CREATE TABLE t1 (x int); SELECT nope' },
    ];
    await expect(migrate(db, broken)).rejects.toThrow();
    const { rowCount } = await db.query(
      "SELECT 1 FROM information_schema.tables WHERE table_name = 't1' AND table_schema = current_schema()",
    );
    expect(rowCount).toBe(0);
  });

  it('008 redacts the credential headers of calls already logged, and adds redact_headers', async () => {
    const db = await openBefore(8);
    const { rows: hooks } = await db.query<{ id: string }>(
      `INSERT INTO webhooks (name, url, headers, events, signing_secret)
       VALUES ('old', 'https://example.com/hook', '{}', '[]', 'whsec_x') RETURNING id`,
    );
    const events = [testItemEvent('evt-1'), testItemEvent('evt-2'), testItemEvent('evt-3')];
    await insertEvents(db, events);
    const logged = {
      'Content-Type': 'application/json',
      'User-Agent': 'Herald/1',
      'X-Api-Key': 'key-123',
      Authorization: 'Bearer ***',
      Cookie: 'sid=abc',
      'X-Team': 'content',
      'webhook-id': '1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,abc',
    };
    const insertCall = async (eventId: string, headers: unknown) =>
      (
        await db.query<{ id: string }>(
          `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, request_headers)
           VALUES ($1, $2, 'item', 'update', $3::json) RETURNING id`,
          [eventId, hooks[0]!.id, headers === null ? null : JSON.stringify(headers)],
        )
      ).rows[0]!.id;
    const full = await insertCall('evt-1', logged);
    // The old redaction kept the first word of a value without a scheme: a bare key, whole.
    const bare = await insertCall('evt-2', { Authorization: 'sk_live_123 ***' });
    const pending = await insertCall('evt-3', null);

    expect(await migrate(db)).toContain('008_redact_credential_headers');
    const headersOf = async (id: string) =>
      (
        await db.query<{ request_headers: Record<string, string> | null }>(
          'SELECT request_headers FROM webhook_calls WHERE id = $1',
          [id],
        )
      ).rows[0]!.request_headers;
    const redacted = await headersOf(full);
    expect(redacted).toEqual({ ...logged, 'X-Api-Key': '***', Cookie: '***' });
    expect(Object.keys(redacted!)).toEqual(Object.keys(logged));
    expect(await headersOf(bare)).toEqual({ Authorization: '***' });
    expect(await headersOf(pending)).toBeNull();
    expect((await findWebhook(db, hooks[0]!.id))?.redactHeaders).toEqual([]);
  });

  it('009 gives each call already attempted its last attempt as attempt 1', async () => {
    const db = await openBefore(9);
    await insertEvents(db, [testItemEvent('evt-a'), testItemEvent('evt-b')]);
    const sentAt = new Date('2026-01-02T03:04:05.000Z');
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status,
         request_url, request_headers, request_payload, response_status, response_payload,
         attempted_auto_retries_count, last_sent_at)
       VALUES ('evt-a', 1, 'item', 'update', 'failed', 'https://example.com/hook',
               '{"webhook-id":"1"}', '{"a":1}', 500, 'boom', 2, $1),
              ('evt-b', 1, 'item', 'update', 'pending', NULL, NULL, NULL, NULL, NULL, 0, NULL)
       RETURNING id`,
      [sentAt],
    );
    const [attempted, pending] = rows.map((row) => row.id);
    expect(await migrate(db)).toContain('009_webhook_call_attempts');
    const history = await listWebhookCallAttempts(db, attempted!, { offset: 0, limit: 10 });
    expect(history).toEqual({
      totalCount: 1,
      attempts: [
        {
          callId: attempted,
          number: 1,
          trigger: 'retry',
          outcome: 'failed',
          startedAt: sentAt,
          durationMs: null,
          requestUrl: 'https://example.com/hook',
          requestHeaders: { 'webhook-id': '1' },
          requestPayload: '{"a":1}',
          responseStatus: 500,
          responseHeaders: null,
          responsePayload: 'boom',
          failureReason: null,
        },
      ],
    });
    expect(await listWebhookCallAttempts(db, pending!, { offset: 0, limit: 10 })).toEqual({
      totalCount: 0,
      attempts: [],
    });
  });

  it('021 makes the log monthly in place: calls keep their ids, attempts and counts; new ones go to their month', async () => {
    const db = await openBefore(21);
    // Written as the code of the time wrote them (today's statements need today's schema).
    const { rows: hooks } = await db.query<{ id: string }>(
      `INSERT INTO webhooks (name, url, headers, events, signing_secret)
       VALUES ('hook', 'https://example.com/hook', '{}', '[]', 'whsec_x') RETURNING id`,
    );
    const hook = { id: hooks[0]!.id };
    await insertEvents(
      db,
      ['old-a', 'old-b', 'old-c', 'new-a'].map((id) => testItemEvent(id)),
    );
    const matchOf = (...ids: string[]) =>
      ids.map((id) => ({
        event: { id, entityType: 'item', eventType: 'update' },
        webhookIds: [hook.id],
      }));
    const { rows: old } = await db.query<{ id: string }>(
      `WITH made AS (
         INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status,
           last_sent_at, request_url, request_headers, request_payload, response_status,
           attempts_count)
         SELECT e, $1, 'item', 'update', s, now(), 'https://example.com/hook', '{}', '{}', 200,
           CASE WHEN s = 'pending' THEN 0 ELSE 1 END
         FROM unnest(ARRAY['old-a', 'old-b', 'old-c'], ARRAY['success', 'failed', 'pending'])
           AS x (e, s)
         RETURNING id, status, last_sent_at),
       attempted AS (
         INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
           duration_ms, request_url, request_headers, response_status)
         SELECT id, 1, 'first', status, last_sent_at, 12, 'https://example.com/hook', '{}', 200
         FROM made WHERE status <> 'pending')
       SELECT id FROM made ORDER BY id`,
      [hook.id],
    );
    await db.query(`UPDATE events SET matched_at = now() WHERE id LIKE 'old-%'`);
    const ids = old.map((call) => call.id);
    const page = { offset: 0, limit: 10 };
    const list = () =>
      listWebhookCalls(db, { ...page, orderBy: { column: 'created_at', desc: false } });
    // Read as the code of the time read them: today's statements name later migrations' columns.
    const snapshot = async () => ({
      calls: (
        await db.query(
          `SELECT id, event_id, webhook_id, entity_type, event_type, status, created_at,
             request_url, request_headers, request_payload, response_status, last_sent_at,
             attempts_count
           FROM webhook_calls WHERE id = ANY($1::bigint[]) ORDER BY id`,
          [ids],
        )
      ).rows,
      attempts: (await db.query('SELECT * FROM webhook_call_attempts ORDER BY call_id, number'))
        .rows,
      counted: (await db.query('SELECT sum(calls)::int AS n FROM webhook_call_counts')).rows,
    });
    const before = await snapshot();
    expect(before.counted).toEqual([{ n: 3 }]);

    expect(await migrate(db)).toContain('021_partition_webhook_calls');
    expect(await snapshot()).toEqual(before);
    const listed = await list();
    expect(listed.calls.map((call) => call.id)).toEqual(ids);
    expect(listed.totalCount).toBe(3);
    expect((await findWebhookCalls(db, ids)).map((call) => call.eventIds)).toEqual(
      ['old-a', 'old-b', 'old-c'].map((id) => [id]),
    );
    expect((await listWebhookCallAttempts(db, ids[0]!, page))?.attempts).toHaveLength(1);
    // A date range reads only its months, and the calls logged before, which are in every month.
    const since = await listWebhookCalls(db, {
      ...page,
      orderBy: { column: 'created_at', desc: true },
      range: { created_at: { gt: new Date(Date.now() - 3_600_000) } },
    });
    expect(since.calls.map((call) => call.id).sort()).toEqual([...ids].sort());
    const partitionOf = async (id: string) =>
      (
        await db.query<{ partition: string }>(
          'SELECT tableoid::regclass::text AS partition FROM webhook_calls WHERE id = $1',
          [id],
        )
      ).rows[0]?.partition;
    expect(await partitionOf(ids[0]!)).toBe('webhook_calls_legacy');
    // An event matched before makes no second call: its call is in another partition than a
    // new one would be, so no unique index could tell.
    expect(await createWebhookCalls(db, matchOf('old-a'))).toEqual([]);
    expect((await list()).totalCount).toBe(3);

    // The row-by-row retention empties the legacy partition (attempts too), then it is dropped.
    await db.query(`UPDATE webhook_calls SET status = 'failed' WHERE id = $1`, [ids[2]]);
    expect(await deleteFinishedWebhookCalls(db, new Date(), 10)).toBe(3);
    const attempts = await db.query('SELECT 1 FROM webhook_call_attempts');
    expect(attempts.rowCount).toBe(0);
    expect(await dropWebhookCallMonths(db, new Date(0))).toEqual({ months: [], calls: 0 });
    const legacy = await db.query<{ name: string | null }>(
      `SELECT to_regclass('webhook_calls_legacy')::text AS name`,
    );
    expect(legacy.rows[0]!.name).toBeNull();
    expect((await list()).totalCount).toBe(0);

    // A new call: an id of this month, in this month's partition.
    const [made] = await createWebhookCalls(db, matchOf('new-a'));
    const now = new Date();
    const month = BigInt(now.getUTCFullYear() * 12 + now.getUTCMonth());
    expect(BigInt(made!.id) >> 36n).toBe(month);
    expect(Number(made!.id)).toBeLessThan(Number.MAX_SAFE_INTEGER);
    expect(await partitionOf(made!.id)).toBe(
      `webhook_calls_${now.getUTCFullYear()}_${String(now.getUTCMonth() + 1).padStart(2, '0')}`,
    );
    expect((await list()).totalCount).toBe(1);
  });

  it('026 redacts the credentials in the URLs of calls and attempts already logged', async () => {
    const db = await openBefore(26);
    const { rows: hooks } = await db.query<{ id: string }>(
      `INSERT INTO webhooks (name, url, headers, events, signing_secret)
       VALUES ('hook', 'https://example.com/hook', '{}', '[]', 'whsec_x') RETURNING id`,
    );
    await insertEvents(
      db,
      ['u-1', 'u-2', 'u-3', 'u-4', 'u-5'].map((id) => testItemEvent(id)),
    );
    // The examples of packages/payload/src/redact-url.test.ts, whose rule this copies.
    const urls = [
      'https://example.com/hook?token=abc&page=2',
      'https://example.com/h?API_KEY=k&access%5Ftoken=t&code=c&xcode=1&sig=s&q=a+b%20c&empty=&token=&flag',
      'https://user:p@ss@example.com:8443/hook?page=2',
      'https://e.com/token=1/x?a=1&secret=2#token=3?key=4',
    ];
    const { rows } = await db.query<{ id: string }>(
      `WITH made AS (
         INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status,
           request_url, last_sent_at)
         SELECT e, $1, 'item', 'update', 'success', u, now()
         FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x (e, u, n)
         ORDER BY n
         RETURNING id, request_url, last_sent_at),
       attempted AS (
         INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
           request_url, request_headers)
         SELECT id, 1, 'first', 'success', last_sent_at, request_url, '{}' FROM made)
       SELECT id FROM made ORDER BY id`,
      [hooks[0]!.id, ['u-1', 'u-2', 'u-3', 'u-4'], urls],
    );
    const pending = await db.query<{ id: string }>(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type)
       SELECT 'u-5', $1, 'item', 'update' RETURNING id`,
      [hooks[0]!.id],
    );

    expect(await migrate(db)).toContain('026_redact_credential_query');
    const logged = [
      'https://example.com/hook?token=***&page=2',
      'https://example.com/h?API_KEY=***&access%5Ftoken=***&code=***&xcode=1&sig=***&q=a+b%20c&empty=&token=&flag',
      'https://user:***@example.com:8443/hook?page=2',
      'https://e.com/token=1/x?a=1&secret=***#token=3?key=4',
    ];
    const ids = rows.map((row) => row.id);
    const calls = await db.query<{ request_url: string }>(
      'SELECT request_url FROM webhook_calls WHERE id = ANY($1::bigint[]) ORDER BY id',
      [ids],
    );
    expect(calls.rows.map((row) => row.request_url)).toEqual(logged);
    const attempts = await db.query<{ request_url: string }>(
      'SELECT request_url FROM webhook_call_attempts ORDER BY call_id',
    );
    expect(attempts.rows.map((row) => row.request_url)).toEqual(logged);
    const unsent = await db.query('SELECT request_url FROM webhook_calls WHERE id = $1', [
      pending.rows[0]!.id,
    ]);
    expect(unsent.rows).toEqual([{ request_url: null }]);
  });

  it('stores tokens as hashes and revokes them', async () => {
    const db = await open();
    const { token, record } = await createToken(db, { name: 'ci', role: 'producer' });
    expect(token).toMatch(/^hrld_[A-Za-z0-9_-]{32}$/);
    const { rows } = await db.query<{ token_hash: string }>('SELECT token_hash FROM api_tokens');
    expect(rows.map((r) => r.token_hash)).toEqual([hashToken(token)]);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect((await findTokenByHash(db, hashToken(token)))?.role).toBe('producer');
    expect(await revokeToken(db, record.id)).toMatchObject({ ok: true });
    expect(await revokeToken(db, record.id)).toEqual({ ok: false, reason: 'not_found' });
    expect(await findTokenByHash(db, hashToken(token))).toBeNull();
    expect(await listTokens(db)).toEqual([]);
  });
});

describe('migrations on Postgres under concurrency', () => {
  it('apply once when several processes start together', async () => {
    const t = await createTestDb('postgres');
    try {
      // Back to an empty schema (every migration's tables, not only the foundation's).
      await t.db.exec(`DROP SCHEMA ${t.schema!} CASCADE; CREATE SCHEMA ${t.schema!}`);
      const replicas = Array.from({ length: 4 }, () =>
        createPostgresDb({
          connectionString:
            process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test',
          searchPath: t.schema!,
          maxConnections: 2,
        }),
      );
      const applied = await Promise.all(replicas.map((db) => migrate(db)));
      await Promise.all(replicas.map((db) => db.close()));
      const all = await loadMigrations();
      expect(applied.flat().sort()).toEqual(all.map((m) => m.name).sort());
    } finally {
      await t.cleanup();
    }
  });
});
