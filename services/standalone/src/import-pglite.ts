import { rename } from 'node:fs/promises';
import { createPgliteDb, migrate, type Db, type Queryable } from '@herald/store';
import { pgliteDir } from './embedded-database.js';

/** Rows per statement: a batch of JSON rows per INSERT, read from a cursor. */
const BATCH = 500;

export class ImportRefusedError extends Error {
  override name = 'ImportRefusedError';
}

type Table = {
  name: string;
  /** For a partition missing in the target: its parent and bound, as the catalog gives them. */
  parent: string | null;
  bound: string | null;
};

// Identifiers below come from the catalogs of the two databases (the tables the migrations
// made), never from input; format('%I') quotes them.
const LEAF_TABLES = `
  SELECT c.relname AS name, p.relname AS parent, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
  LEFT JOIN pg_class p ON p.oid = i.inhparent
  WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
  ORDER BY c.relname`;

async function identifier(db: Queryable, name: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>('SELECT format($1, $2::text) AS id', [
    '%I',
    name,
  ]);
  return rows[0]!.id;
}

/**
 * Copies the PGlite database of an earlier Herald (`<dataDir>/pgdata`) into `target`, the
 * embedded PostgreSQL: both are first brought to the same migrations, then every table is
 * emptied and copied in one transaction (triggers and foreign keys off while it runs, as
 * pg_restore does; the copy is exact), and the sequences follow. On success the PGlite folder is
 * renamed to `pgdata.imported`, kept until its owner deletes it. Refuses a target that already
 * holds events, webhooks or tokens.
 */
export async function importPgliteFolder(
  dataDir: string,
  target: Db,
): Promise<{ tables: number; rows: number }> {
  const folder = pgliteDir(dataDir);
  const source = await createPgliteDb({ dataDir: folder });
  let copied: { tables: number; rows: number };
  try {
    await migrate(source);
    await migrate(target);
    const { rows: used } = await target.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM webhooks)
         + (SELECT count(*) FROM api_tokens) AS n`,
    );
    if (Number(used[0]!.n) > 0) {
      throw new ImportRefusedError(
        'The embedded PostgreSQL already holds events, webhooks or tokens: the import copies ' +
          'into an empty one only. Nothing has been changed.',
      );
    }
    copied = await source.transaction((from) => target.transaction((to) => copyTables(from, to)));
  } finally {
    await source.close();
  }
  await rename(folder, `${folder}.imported`);
  return copied;
}

async function copyTables(
  from: Queryable,
  to: Queryable,
): Promise<{ tables: number; rows: number }> {
  await to.query('SET LOCAL session_replication_role = replica');
  const { rows: sourceTables } = await from.query<Table>(LEAF_TABLES);
  const { rows: targetTables } = await to.query<Table>(LEAF_TABLES);
  const inTarget = new Set(targetTables.map((t) => t.name));
  // Months of the delivery log that the source has and the new database does not (yet).
  for (const table of sourceTables) {
    if (inTarget.has(table.name) || !table.parent || !table.bound) continue;
    await to.query(
      `CREATE TABLE ${await identifier(to, table.name)} PARTITION OF ${await identifier(to, table.parent)} ${table.bound}`,
    );
  }
  // Every table, partitioned parents included (foreign keys may point at them).
  const { rows: all } = await to.query<{ name: string }>(
    `SELECT format('%I', c.relname) AS name FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
       AND c.relname <> 'schema_migrations'`,
  );
  await to.query(`TRUNCATE ${all.map((t) => t.name).join(', ')}`);

  let rows = 0;
  for (const table of sourceTables) {
    const name = await identifier(to, table.name);
    // Generated columns are computed again; the others are copied by name.
    const { rows: columns } = await to.query<{ name: string }>(
      `SELECT format('%I', attname) AS name FROM pg_attribute
       WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
       ORDER BY attnum`,
      [name],
    );
    const list = columns.map((c) => c.name).join(', ');
    await from.query(
      `DECLARE herald_import NO SCROLL CURSOR FOR SELECT row_to_json(t)::text AS r FROM ${name} t`,
    );
    for (;;) {
      const batch = await from.query<{ r: string }>(`FETCH ${BATCH} FROM herald_import`);
      if (batch.rows.length === 0) break;
      await to.query(
        `INSERT INTO ${name} (${list}) OVERRIDING SYSTEM VALUE
         SELECT ${list} FROM json_populate_recordset(NULL::${name}, $1::json)`,
        [`[${batch.rows.map((b) => b.r).join(',')}]`],
      );
      rows += batch.rows.length;
    }
    await from.query('CLOSE herald_import');
  }

  const { rows: sequences } = await from.query<{ name: string; last: string; called: boolean }>(
    `SELECT format('%I', sequencename) AS name, last_value::text AS last, last_value IS NOT NULL AS called
     FROM pg_sequences WHERE schemaname = current_schema()`,
  );
  for (const sequence of sequences) {
    if (sequence.called) {
      await to.query('SELECT setval($1::regclass, $2::bigint, true)', [
        sequence.name,
        sequence.last,
      ]);
    }
  }
  return { tables: sourceTables.length, rows };
}
