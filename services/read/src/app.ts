import { Router, type Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import { IndexManager } from './index-manager.js';
import { itemsQueryDuration } from './metrics.js';
import { itemsListRoute } from './routes/items.list.js';
import { itemsRetrieveRoute } from './routes/items.retrieve.js';

/** What the read routes need. */
export type ReadDeps = ApiAppDeps & {
  /** Builds per-model expression indexes on demand (READ_EXPRESSION_INDEXES); see README. */
  indexes?: IndexManager;
};

/** The read service's routes: GET /items, GET /items/:id. */
export function readRouter(deps: ReadDeps): Router {
  const itemsDeps = {
    db: deps.db,
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
