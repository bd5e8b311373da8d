import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';

/** Where the numbered SQL migrations live (`NNN_name.sql`), next to src/ and dist/. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d+_[\w-]+\.sql$/.test(file)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number.parseInt(file, 10);
    if (migrations.some((m) => m.version === version)) {
      throw new Error(`Two migrations share the number ${version}: ${file}`);
    }
    migrations.push({
      version,
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(`${dir}/${file}`, 'utf8'),
    });
  }
  return migrations;
}

/**
 * Applies the migrations not yet applied, each in its own transaction, under an advisory lock so
 * that replicas starting together apply each migration once. Returns the names it applied.
 */
export async function migrate(db: Db, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  // Even CREATE TABLE IF NOT EXISTS races between replicas, so it takes the lock too.
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:migrations'))`);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
  const applied: string[] = [];
  for (const migration of all) {
    const done = await db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:migrations'))`);
      const { rowCount } = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
        migration.version,
      ]);
      if (rowCount > 0) return false;
      // Statements run one by one: the extended protocol (PGlite's transaction) takes one at a time.
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.name);
  }
  return applied;
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
