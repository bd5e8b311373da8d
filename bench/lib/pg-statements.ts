/**
 * Postgres's own account of a run's statements, from pg_stat_statements: executions, planning and
 * execution time per execution, by statement. Only on a server started with
 * `shared_preload_libraries=pg_stat_statements` (and `pg_stat_statements.track_planning=on` for
 * the planning column); the shared test server has neither, so this is opt-in
 * (BENCH_PG_STATEMENTS=1, TEST_DATABASE_URL pointing at such a server).
 */
import type { Queryable } from '@herald/store';
import { table } from './table.js';

export async function resetStatements(db: Queryable): Promise<void> {
  // In public, not in the run's schema (first on its search_path), which is dropped at the end.
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public');
  await db.query('SELECT public.pg_stat_statements_reset()');
}

/** The `limit` statements with the most time (planning plus execution), per `unit`. */
export async function statementsTable(
  db: Queryable,
  units: number,
  unit: string,
  limit = 25,
): Promise<string> {
  const { rows } = await db.query<{
    query: string;
    calls: string;
    plans: string;
    plan_ms: number;
    exec_ms: number;
  }>(
    `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query, calls, plans,
        total_plan_time AS plan_ms, total_exec_time AS exec_ms
     FROM public.pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND query NOT LIKE '%pg_stat%'
     ORDER BY total_plan_time + total_exec_time DESC LIMIT $1`,
    [limit],
  );
  const us = (ms: number) => ((ms * 1000) / units).toFixed(0);
  return table(
    [
      'statement',
      `calls per ${unit}`,
      `plans per ${unit}`,
      `µs planning per ${unit}`,
      `µs executing per ${unit}`,
    ],
    rows.map((r) => [
      r.query.replace(/\|/g, '\\|'),
      (Number(r.calls) / units).toFixed(2),
      (Number(r.plans) / units).toFixed(2),
      us(Number(r.plan_ms)),
      us(Number(r.exec_ms)),
    ]),
  );
}
