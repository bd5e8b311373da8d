import type { Logger } from '@herald/runtime';
import { sqlState, type Db } from '@herald/store';
import type { IndexSpec } from './query/compile.js';

/**
 * Creates the per-model expression indexes that field filters and sorts need (compile.ts says
 * which), the first time a query asks for one, in the background: the request that triggers it
 * is served by whatever plan exists now, later ones use the index. A migration cannot create
 * them (models are data), and the read service needs no hook in the write path this way.
 *
 * On Postgres the build is CONCURRENTLY (no write lock on `records`); an index a failed build
 * left INVALID is dropped and built again. Each index is attempted once per process.
 */
export class IndexManager {
  private readonly attempted = new Set<string>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly enabled: boolean,
  ) {}

  ensure(specs: readonly IndexSpec[]): void {
    if (!this.enabled) return;
    for (const spec of specs) {
      if (this.attempted.has(spec.name)) continue;
      this.attempted.add(spec.name);
      const build = this.build(spec).finally(() => this.pending.delete(build));
      this.pending.add(build);
    }
  }

  /** Resolves when no build is running (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async build(spec: IndexSpec): Promise<void> {
    const started = Date.now();
    try {
      const concurrently = this.db.kind === 'postgres' ? 'CONCURRENTLY ' : '';
      const { rows } = await this.db.query<{ valid: boolean | null }>(
        `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)) AS valid`,
        [spec.name],
      );
      if (rows[0]?.valid === true) return;
      if (rows[0]?.valid === false) {
        await this.db.query(`DROP INDEX ${concurrently}IF EXISTS ${spec.name}`);
      }
      await this.db.query(
        `CREATE ${spec.definition.replace(/^INDEX /, `INDEX ${concurrently}IF NOT EXISTS `)}`,
      );
      this.logger.info({ index: spec.name, ms: Date.now() - started }, 'expression index created');
    } catch (error) {
      // Another replica building the same index, no CREATE privilege, a shutdown: the query
      // still runs without it; the next process start tries again.
      this.logger.warn(
        { index: spec.name, code: sqlState(error), err: error },
        'expression index not created',
      );
    }
  }
}
