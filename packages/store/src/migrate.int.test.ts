import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '@herald/testkit';
import { createPostgresDb } from './db.js';
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

describe.each(['postgres', 'pglite'] as const)('the store on %s', (kind) => {
  const opened: TestDb[] = [];
  const open = async () => {
    const t = await createTestDb(kind);
    opened.push(t);
    return t.db;
  };
  afterAll(async () => {
    for (const t of opened) await t.cleanup();
  });

  it('applies every migration once and records it', async () => {
    const db = await open();
    const all = await loadMigrations();
    const { rows } = await db.query<{ version: number }>(
      'SELECT version FROM schema_migrations ORDER BY version',
    );
    expect(rows.map((r) => r.version)).toEqual(all.map((m) => m.version));
    expect(await migrate(db)).toEqual([]);
  });

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

  it('stores tokens as hashes and revokes them', async () => {
    const db = await open();
    const { token, record } = await createToken(db, { name: 'ci', role: 'producer' });
    expect(token).toMatch(/^hrld_[A-Za-z0-9_-]{32}$/);
    const { rows } = await db.query<{ token_hash: string }>('SELECT token_hash FROM api_tokens');
    expect(rows.map((r) => r.token_hash)).toEqual([hashToken(token)]);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect((await findTokenByHash(db, hashToken(token)))?.role).toBe('producer');
    expect(await revokeToken(db, record.id)).toBe(true);
    expect(await revokeToken(db, record.id)).toBe(false);
    expect(await findTokenByHash(db, hashToken(token))).toBeNull();
    expect((await listTokens(db))[0]?.revokedAt).toBeInstanceOf(Date);
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
