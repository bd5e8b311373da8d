import { Router, type Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';

/** What the read routes need. */
export type ReadDeps = ApiAppDeps;

/** The read service's routes: GET /items, GET /items/:id. */
export function readRouter(_deps: ReadDeps): Router {
  const router = Router();
  return router;
}

export function createApp(deps: ReadDeps): Express {
  return createApiApp(deps, [readRouter(deps)]);
}
