import type { Queryable } from './db.js';

export interface Environment {
  id: string;
  locales: string[];
  isPrimary: boolean;
}

interface EnvironmentRow extends Record<string, unknown> {
  id: string;
  locales: string[];
  is_primary: boolean;
}

const toEnvironment = (row: EnvironmentRow): Environment => ({
  id: row.id,
  locales: row.locales,
  isPrimary: row.is_primary,
});

export async function findEnvironment(db: Queryable, id: string): Promise<Environment | null> {
  const { rows } = await db.query<EnvironmentRow>(
    'SELECT id, locales, is_primary FROM environments WHERE id = $1',
    [id],
  );
  return rows[0] ? toEnvironment(rows[0]) : null;
}

export async function findPrimaryEnvironment(db: Queryable): Promise<Environment | null> {
  const { rows } = await db.query<EnvironmentRow>(
    'SELECT id, locales, is_primary FROM environments WHERE is_primary',
  );
  return rows[0] ? toEnvironment(rows[0]) : null;
}

export async function listEnvironments(db: Queryable): Promise<Environment[]> {
  const { rows } = await db.query<EnvironmentRow>(
    'SELECT id, locales, is_primary FROM environments ORDER BY id',
  );
  return rows.map(toEnvironment);
}

/** Creates an environment (a sandbox) or updates its locales; the first locale is the main one. */
export async function upsertEnvironment(
  db: Queryable,
  id: string,
  locales: readonly string[] | undefined,
): Promise<void> {
  await db.query(
    `INSERT INTO environments (id, locales) VALUES ($1, COALESCE($2::text[], ARRAY['en']))
     ON CONFLICT (id) DO UPDATE SET locales = COALESCE($2::text[], environments.locales),
       updated_at = now()`,
    [id, locales ? [...locales] : null],
  );
}

/** Makes the environment the primary one (the previous primary becomes a sandbox). */
export async function promoteEnvironment(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE environments SET is_primary = false WHERE is_primary AND id <> $1', [id]);
  await db.query('UPDATE environments SET is_primary = true, updated_at = now() WHERE id = $1', [
    id,
  ]);
}

/** Deletes an environment with its models and records. */
export async function deleteEnvironment(db: Queryable, id: string): Promise<void> {
  for (const table of ['record_texts', 'records', 'record_tombstones']) {
    await db.query(`DELETE FROM ${table} WHERE environment = $1`, [id]);
  }
  // Models and fields go by cascade.
  await db.query('DELETE FROM environments WHERE id = $1', [id]);
}
