/**
 * Wall time of a pool's statements, by statement (its prepared name, or its first words): what a
 * benchmark's server spends waiting for Postgres, stage by stage (round trip, locks and the
 * backend's work). Postgres here has no pg_stat_statements, and a benchmark must not restart it.
 */
import type { Db, NamedStatement, Queryable, Row } from '@herald/store';
import { table } from './table.js';

const TRANSACTION = '(whole transaction: BEGIN … COMMIT)';

const labelOf = (statement: string | NamedStatement): string =>
  typeof statement === 'string'
    ? statement.replace(/\s+/g, ' ').trim().slice(0, 70)
    : `${statement.name} (prepared)`;

export class SqlTimings {
  #byLabel = new Map<string, { count: number; ms: number }>();

  reset(): void {
    this.#byLabel.clear();
  }

  async #time<T>(label: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      const entry = this.#byLabel.get(label) ?? { count: 0, ms: 0 };
      entry.count++;
      entry.ms += performance.now() - started;
      this.#byLabel.set(label, entry);
    }
  }

  #queryable(q: Queryable): Queryable {
    return {
      query: <R extends Row>(statement: string | NamedStatement, params?: readonly unknown[]) =>
        this.#time(labelOf(statement), () => q.query<R>(statement, params)),
    };
  }

  /** `db`, its statements and transactions timed here. */
  wrap(db: Db): Db {
    return {
      kind: db.kind,
      ...this.#queryable(db),
      transaction: (fn) =>
        this.#time(TRANSACTION, () => db.transaction((tx) => fn(this.#queryable(tx)))),
      exec: (sql) => db.exec(sql),
      // Labelled by its text up to the first literal (writeItemBatchCommitted's are data).
      script: <R extends Row>(sql: string) =>
        this.#time(`${labelOf(sql.split('$', 1)[0]!)} (script)`, () => db.script<R>(sql)),
      close: () => db.close(),
    };
  }

  /** The statements by total time, per `units` units of work (e.g. per 1000 deliveries). */
  table(units: number, unit: string): string {
    const rows = [...this.#byLabel]
      .sort((a, b) => b[1].ms - a[1].ms)
      .slice(0, 20)
      .map(([label, { count, ms }]) => [
        label.replace(/\|/g, '\\|'),
        (count / units).toFixed(2),
        (ms / units).toFixed(0),
        (ms / count).toFixed(2),
      ]);
    return table(['statement', `per ${unit}`, `ms per ${unit}`, 'ms each'], rows);
  }
}
