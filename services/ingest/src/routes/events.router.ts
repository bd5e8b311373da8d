import { Router } from 'express';
import { requireRole } from '@herald/runtime';
import { eventsCreate, type EventsDeps } from './events.create.js';
import { listEventsRoute } from './events.list.js';
import { retrieveEvent } from './events.retrieve.js';

/**
 * /events (docs/api.md, Events): producers post them; reading them back is for admins, like the
 * delivery log they explain.
 */
export function eventsRouter(deps: EventsDeps): Router {
  const router = Router();
  router.post('/events', requireRole('producer'), eventsCreate(deps));
  const admin = requireRole();
  // A log of the past: a replica's lag is tolerated (EventsDeps.replicaDb); one event by id is not.
  router.get('/events', admin, listEventsRoute({ db: deps.replicaDb ?? deps.db }));
  router.get('/events/:id', admin, retrieveEvent(deps));
  return router;
}
