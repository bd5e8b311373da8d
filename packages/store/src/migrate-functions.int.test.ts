import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '@herald/testkit';
import type { Queryable } from './db.js';
import { FUNCTIONS_DIR, loadFunctions, migrate, type Migration } from './migrate.js';

// The stored functions' files (functions/) against the numbered migrations that held them before:
// a database those migrated, brought up to date, has exactly what a new one has.

/** The last commit whose numbered migrations held the functions (028). */
const BEFORE_FILES = 'c9f3487ba4570ce9ca1b4db674ba8290da4c6368';
/** The functions changed (or made, or dropped) since BEFORE_FILES, on purpose. */
const CHANGED_SINCE = [
  // Its records are written by herald_upsert_records, the one upsert of records.
  'function herald_write_item_batch(',
  'function herald_upsert_records(',
  // The delivery log's months are made and dropped in TypeScript (migration 029).
  'function herald_create_webhook_call_partitions(',
  'function herald_drop_webhook_call_partition(',
  'function herald_drop_empty_legacy_webhook_calls(',
  // Columns added since, with a default (migration 030: a webhook's destination).
  'default webhooks.destination',
  // The webhooks' generation (migration 032).
  'function herald_bump_webhooks_generation(',
  'trigger webhooks.herald_bump_webhooks_generation',
  'default webhooks_generation.singleton',
  // One branch counts INSERT and DELETE, their triggers' transition tables named alike.
  'function herald_count_records(',
  'function herald_count_webhook_calls(',
  'trigger records.records_count_insert',
  'trigger records.records_count_delete',
  'trigger webhook_calls.webhook_calls_count_insert',
  'trigger webhook_calls.webhook_calls_count_delete',
  // A webhook's rate limit reserves its requests' slots (docs/api.md, Rate limit).
  'function herald_admit_rate_turn(',
];
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const git = (...args: string[]) =>
  execFileSync('git', ['-C', REPO, ...args], { encoding: 'utf8', stdio: 'pipe' });

/** The numbered migrations as they were at BEFORE_FILES, read from git. */
function migrationsBeforeFiles(): Migration[] {
  return git('ls-tree', '--name-only', BEFORE_FILES, 'packages/store/migrations/')
    .trim()
    .split('\n')
    .map((path) => {
      const file = path.slice(path.lastIndexOf('/') + 1);
      return {
        version: Number.parseInt(file, 10),
        name: file.replace(/\.sql$/, ''),
        sql: git('show', `${BEFORE_FILES}:${path}`),
      };
    });
}

/**
 * Every function (pg_get_functiondef), trigger and column default of the schema, by name, the
 * schema's own name taken out.
 */
async function definitions(db: Queryable): Promise<Map<string, string>> {
  const { rows } = await db.query<{ key: string; definition: string; schema: string }>(
    `SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
         AS key, pg_get_functiondef(p.oid) AS definition, n.nspname AS schema
     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = current_schema()
     UNION ALL
     SELECT 'trigger ' || c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid), n.nspname
     FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND NOT t.tgisinternal
     UNION ALL
     SELECT 'default ' || c.relname || '.' || a.attname, pg_get_expr(d.adbin, d.adrelid), n.nspname
     FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
     JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
     JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relname <> 'schema_functions'
     ORDER BY 1`,
  );
  return new Map(rows.map((row) => [row.key, row.definition.replaceAll(`${row.schema}.`, '')]));
}

describe('stored functions on Postgres', () => {
  const opened: TestDb[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const t of opened) await t.cleanup();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  const open = async () => {
    const t = await createTestDb('postgres');
    opened.push(t);
    return t;
  };

  // Needs the repository's history (a clone, not an export): git show reads the old migrations.
  it('a database migrated before the files, brought up to date, has what a new one has', async () => {
    const fresh = await definitions((await open()).db);
    const t = await open();
    await t.db.exec(`DROP SCHEMA ${t.schema!} CASCADE; CREATE SCHEMA ${t.schema!}`);
    const old = migrationsBeforeFiles();
    await migrate(t.db, old, []);
    const before = await definitions(t.db);
    // Each file is applied on its own, but those of a migration made since (applied with it).
    const last = Math.max(...old.map((m) => m.version));
    const files = (await loadFunctions()).filter((file) => file.migrations[0]! <= last);
    expect((await migrate(t.db)).filter((name) => name.startsWith('functions/'))).toEqual(
      files.map((file) => `functions/${file.name}`),
    );
    expect(await definitions(t.db)).toEqual(fresh);
    // Moving the functions to their files changed none of them; those changed since are named.
    const unchanged = (all: Map<string, string>) =>
      new Map([...all].filter(([key]) => !CHANGED_SINCE.some((name) => key.startsWith(name))));
    expect(unchanged(before)).toEqual(unchanged(fresh));
  }, 180_000);

  it('applies a function file again when, and only when, its text changed', async () => {
    const { db } = await open();
    const dir = await mkdtemp(join(tmpdir(), 'herald-functions-'));
    dirs.push(dir);
    await cp(FUNCTIONS_DIR, dir, { recursive: true });
    const key = 'function webhooks_bump_version()';
    const applied = async () =>
      new Map(
        (
          await db.query<{ name: string; applied_at: Date }>(
            'SELECT name, applied_at FROM schema_functions',
          )
        ).rows.map((row) => [row.name, row.applied_at.getTime()]),
      );
    const first = await applied();
    expect([...first.keys()].sort()).toEqual((await loadFunctions()).map((file) => file.name));

    expect(await migrate(db, undefined, await loadFunctions(dir))).toEqual([]);
    expect(await applied()).toEqual(first);

    const file = join(dir, 'webhooks_bump_version.sql');
    const text = await readFile(file, 'utf8');
    const changed = text.replace('OLD.version + 1', 'OLD.version + 2');
    expect(changed).not.toBe(text);
    await writeFile(file, changed);
    expect(await migrate(db, undefined, await loadFunctions(dir))).toEqual([
      'functions/webhooks_bump_version',
    ]);
    expect((await definitions(db)).get(key)).toContain('OLD.version + 2');
    const second = await applied();
    for (const [name, at] of first) {
      if (name === 'webhooks_bump_version') expect(second.get(name)).toBeGreaterThan(at);
      else expect(second.get(name)).toBe(at);
    }
    expect(await migrate(db, undefined, await loadFunctions(dir))).toEqual([]);

    // The files as they are in the repository: the change is undone the same way.
    expect(await migrate(db)).toEqual(['functions/webhooks_bump_version']);
    expect((await definitions(db)).get(key)).toContain('OLD.version + 1');
  });
});
