import { Router, type Express } from 'express';
import {
  EnvironmentResolver,
  createApiApp,
  type ApiAppDeps,
  type EventMatchQueue,
} from '@herald/runtime';
import { eventsRouter } from './routes/events.create.js';

/** What the ingest routes need; grows as resources are added. */
export type IngestDeps = ApiAppDeps & {
  /** Producer side of the `event-match` queue (createEventMatchQueue). */
  eventMatchQueue: EventMatchQueue;
  /** How long POST /events waits for Redis before leaving the enqueue to the sweeper. */
  enqueueTimeoutMs: number;
};

/** The ingest service's routes: /webhooks, /webhook_calls, /events. */
export function ingestRouter(deps: IngestDeps): Router {
  const router = Router();
  router.use(eventsRouter(deps));
  return router;
}

export function createApp(deps: IngestDeps): Express {
  // One resolver for the plumbing and the routes, so environment events can invalidate it.
  const withResolver = {
    ...deps,
    environments: deps.environments ?? new EnvironmentResolver(deps.db),
  };
  return createApiApp(withResolver, [ingestRouter(withResolver)]);
}
