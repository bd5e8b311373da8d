import { Router, type Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';

/** What the ingest routes need; grows as resources are added. */
export type IngestDeps = ApiAppDeps;

/** The ingest service's routes: /webhooks, /webhook_calls, /events. */
export function ingestRouter(_deps: IngestDeps): Router {
  const router = Router();
  return router;
}

export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [ingestRouter(deps)]);
}
