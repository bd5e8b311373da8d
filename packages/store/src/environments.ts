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
