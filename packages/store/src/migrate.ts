import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';
import { makeWebhookCallMonths } from './webhook-calls/partitions.js';

/** Where the numbered SQL migrations live (`NNN_name.sql`), next to src/ and dist/. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

/**
 * Where the stored functions live: one file per function (`<name>.sql`, its overloads and the
 * triggers or default that call it beside it), next to migrations/. A change to a function is a
 * change to its file.
 */
export const FUNCTIONS_DIR = fileURLToPath(new URL('../functions/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** What the migration does in TypeScript, in its transaction, after its SQL and functions. */
  after?: (tx: Queryable) => Promise<unknown>;
}

/** A stored function's file. */
export interface FunctionFile {
  /** The file's name without `.sql`. */
  name: string;
  sql: string;
  /** sha256 of `sql`: the file is applied again when it changes. */
  checksum: string;
  /**
   * The migrations (its first line, `-- migrations: 016, 021`) in whose transaction the file is
   * applied: the first makes what it needs, later ones replace what it made (a trigger's table).
   */
  migrations: number[];
}

/** Steps of numbered migrations that TypeScript keeps, by version. */
const AFTER: Record<number, (tx: Queryable) => Promise<unknown>> = {
  // A partitioned log takes calls at once: this month's partition and the next two's.
  21: (tx) => makeWebhookCallMonths(tx, new Date(), 3),
};

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d+_[\w-]+\.sql$/.test(file)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number.parseInt(file, 10);
    if (migrations.some((m) => m.version === version)) {
      throw new Error(`Two migrations share the number ${version}: ${file}`);
    }
    const after = AFTER[version];
    migrations.push({
      version,
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(`${dir}/${file}`, 'utf8'),
      ...(after ? { after } : {}),
    });
  }
  return migrations;
}

export async function loadFunctions(dir = FUNCTIONS_DIR): Promise<FunctionFile[]> {
  const files = (await readdir(dir)).filter((file) => /^[a-z_][a-z0-9_]*\.sql$/.test(file)).sort();
  const functions: FunctionFile[] = [];
  for (const file of files) {
    const sql = await readFile(`${dir}/${file}`, 'utf8');
    const first = /^-- migrations: (\d+(?:, \d+)*)\n/.exec(sql);
    if (!first) throw new Error(`${file} does not start with "-- migrations: NNN[, NNN]"`);
    functions.push({
      name: file.replace(/\.sql$/, ''),
      sql,
      checksum: createHash('sha256').update(sql).digest('hex'),
      migrations: first[1]!.split(', ').map(Number),
    });
  }
  return functions;
}

const LOCK = `SELECT pg_advisory_xact_lock(hashtext('herald:migrations'))`;

async function applyFunction(tx: Queryable, file: FunctionFile): Promise<void> {
  // Statements run one by one: the extended protocol (PGlite's transaction) takes one at a time.
  for (const statement of splitStatements(file.sql)) await tx.query(statement);
  await tx.query(
    `INSERT INTO schema_functions (name, checksum) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`,
    [file.name, file.checksum],
  );
}

/**
 * Applies the migrations not yet applied, each in its own transaction, under an advisory lock so
 * that replicas starting together apply each migration once. A stored function's file is applied
 * in the transaction of each migration it names, and again, after the migrations, whenever its
 * text changed (a repeatable migration: every file is CREATE OR REPLACE). Returns the names it
 * applied: migrations, then `functions/<name>` for the files applied again.
 */
export async function migrate(
  db: Db,
  migrations?: Migration[],
  functions?: FunctionFile[],
): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  const files = functions ?? (await loadFunctions());
  // Even CREATE TABLE IF NOT EXISTS races between replicas, so it takes the lock too.
  await db.transaction(async (tx) => {
    await tx.query(LOCK);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_functions (
      name       text PRIMARY KEY,
      checksum   text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  const applied: string[] = [];
  for (const migration of all) {
    const done = await db.transaction(async (tx) => {
      await tx.query(LOCK);
      const { rowCount } = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
        migration.version,
      ]);
      if (rowCount > 0) return false;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      for (const file of files) {
        if (file.migrations.includes(migration.version)) await applyFunction(tx, file);
      }
      await migration.after?.(tx);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.name);
  }
  const changed = await db.transaction(async (tx) => {
    await tx.query(LOCK);
    const { rows: versions } = await tx.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    const migrated = new Set(versions.map((row) => row.version));
    const { rows } = await tx.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM schema_functions',
    );
    const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
    // The files are the whole set: a file removed is no longer tracked (a numbered migration
    // drops its function).
    await tx.query('DELETE FROM schema_functions WHERE NOT (name = ANY($1::text[]))', [
      files.map((file) => file.name),
    ]);
    const names: string[] = [];
    for (const file of files) {
      // Not before the migration that makes what it needs (a database migrated part of the way).
      if (!migrated.has(file.migrations[0]!) || recorded.get(file.name) === file.checksum) continue;
      await applyFunction(tx, file);
      names.push(`functions/${file.name}`);
    }
    return names;
  });
  return [...applied, ...changed];
}

/**
 * Splits a migration script on top-level semicolons, keeping dollar-quoted bodies, quoted strings
 * and comments intact.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    const dollar = /^\$[A-Za-z_]*\$/.exec(rest);
    if (dollar) {
      const end = sql.indexOf(dollar[0], i + dollar[0].length);
      const stop = end < 0 ? sql.length : end + dollar[0].length;
      current += sql.slice(i, stop);
      i = stop;
    } else if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
    } else if (sql[i] === "'") {
      let j = i + 1;
      while (j < sql.length && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1;
      current += sql.slice(i, j + 1);
      i = j + 1;
    } else if (sql[i] === ';') {
      if (current.trim()) statements.push(current.trim());
      current = '';
      i++;
    } else {
      current += sql[i];
      i++;
    }
  }
  if (current.trim()) statements.push(current.trim());
  return statements;
}
