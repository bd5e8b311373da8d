import type { Logger } from '@herald/runtime';
import { sqlState, type Db } from '@herald/store';
import type { IndexSpec } from './query/compile.js';

/** After a failed build (a deadlock with another replica, no privilege), wait before retrying. */
const RETRY_AFTER_MS = 60_000;

/**
 * Creates the per-model expression indexes that field filters and sorts need (compile.ts says
 * which), the first time a query asks for one, in the background: the request that triggers it
 * is served by whatever plan exists now, later ones use the index. A migration cannot create
 * them (models are data), and the read service needs no hook in the write path this way.
 *
 * On Postgres the build is CONCURRENTLY (no write lock on `records`). Builds run one at a time
 * (two concurrent CONCURRENTLY builds on one table deadlock); an index a failed build left
 * INVALID is dropped and built again.
 */
export class IndexManager {
  /** Index name → when it may be attempted again (Infinity once built or being built). */
  private readonly attempts = new Map<string, number>();
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly enabled: boolean,
  ) {}

  ensure(specs: readonly IndexSpec[]): void {
    if (!this.enabled) return;
    const now = Date.now();
    for (const spec of specs) {
      if ((this.attempts.get(spec.name) ?? 0) > now) continue;
      this.attempts.set(spec.name, Infinity);
      this.pending++;
      this.queue = this.queue
        .then(() => this.build(spec))
        .finally(() => {
          this.pending--;
        });
    }
  }

  /** Resolves when no build is queued or running (shutdown, tests, benchmarks). */
  async idle(): Promise<void> {
    while (this.pending > 0) await this.queue;
  }

  private async build(spec: IndexSpec): Promise<void> {
    const started = Date.now();
    try {
      const concurrently = this.db.kind === 'postgres' ? 'CONCURRENTLY ' : '';
      const { rows } = await this.db.query<{ valid: boolean | null }>(
        `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)) AS valid`,
        [spec.name],
      );
      if (rows[0]?.valid === false) {
        await this.db.query(`DROP INDEX ${concurrently}IF EXISTS ${spec.name}`);
      }
      if (rows[0]?.valid !== true) {
        await this.db.query(
          `CREATE ${spec.definition.replace(/^INDEX /, `INDEX ${concurrently}IF NOT EXISTS `)}`,
        );
      }
      if (spec.statistics) {
        const name = /^STATISTICS (\S+)/.exec(spec.statistics)?.[1] ?? '';
        const { rowCount } = await this.db.query(
          `SELECT 1 FROM pg_statistic_ext
           WHERE stxname = $1 AND stxnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`,
          [name],
        );
        if (rowCount === 0) {
          await this.db.query(
            `CREATE ${spec.statistics.replace(/^STATISTICS /, 'STATISTICS IF NOT EXISTS ')}`,
          );
          // Samples the table (default_statistics_target × 300 rows, not all of them).
          await this.db.query('ANALYZE records');
        }
      }
      if (rows[0]?.valid === true && !spec.statistics) return;
      this.logger.info({ index: spec.name, ms: Date.now() - started }, 'expression index created');
    } catch (error) {
      // The query still runs without the index; a later request tries again.
      this.attempts.set(spec.name, Date.now() + RETRY_AFTER_MS);
      this.logger.warn(
        { index: spec.name, code: sqlState(error), err: error },
        'expression index not created',
      );
    }
  }
}
