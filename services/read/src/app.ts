import { Router, type Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import type { Db } from '@herald/store';
import { IndexManager } from './index-manager.js';
import { itemsQueryDuration, readAfterServed, registerReplicaLag } from './metrics.js';
import { ReadGate, type ReadLimits } from './read-gate.js';
import { itemsListRoute } from './routes/items.list.js';
import { itemsRetrieveRoute } from './routes/items.retrieve.js';
import { ReadSources, ReplayWatcher, type Replica } from './replica.js';

/** What the read routes need. */
export type ReadDeps = ApiAppDeps & {
  /** Builds per-model expression indexes on demand (READ_EXPRESSION_INDEXES); see README. */
  indexes?: IndexManager;
  /**
   * Where the routes' statements run: on Postgres a pool of its own with a statement_timeout
   * (openReadDb); default `db`. Auth, health and index builds keep using `db`.
   */
  readDb?: Db;
  /**
   * The same on the replica of READ_DATABASE_URL: the routes' reads go there, those given a
   * read-after token once it has replayed that far (docs/api.md, Read your own events).
   */
  readReplicaDb?: Db | undefined;
  /** How long a read given a read-after token waits for the replica (READ_AFTER_WAIT_MS). */
  readAfterWaitMs?: number;
  /** Each token's share of readDb and the time budget (READ_* variables); default: none. */
  readLimits?: ReadLimits;
};

/** The read service's routes: GET /items, GET /items/:id. */
export function readRouter(deps: ReadDeps): Router {
  const primary = new ReadGate(deps.readDb ?? deps.db, deps.readLimits);
  let replica: Replica | undefined;
  if (deps.readReplicaDb) {
    const logger = deps.logger.child({ module: 'replica' });
    replica = {
      gate: new ReadGate(deps.readReplicaDb, deps.readLimits),
      replay: new ReplayWatcher(deps.readReplicaDb, logger),
      logger,
    };
    registerReplicaLag(deps.metrics, deps.db, deps.readReplicaDb);
  }
  const itemsDeps = {
    sources: new ReadSources(
      primary,
      replica,
      deps.readAfterWaitMs ?? 500,
      readAfterServed(deps.metrics),
    ),
    indexes: deps.indexes ?? new IndexManager(deps.db, deps.logger, true),
    queryDuration: itemsQueryDuration(deps.metrics),
  };
  const router = Router();
  router.use(itemsListRoute(itemsDeps));
  router.use(itemsRetrieveRoute(itemsDeps));
  return router;
}

export function createApp(deps: ReadDeps): Express {
  return createApiApp(deps, [readRouter(deps)]);
}
