import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, EventCallResource, EventId, EventResource } from '@herald/contract';
import { findEvent, listEventCalls, type Db } from '@herald/store';
import { eventsOperation } from '../admin-api.js';
import { serializeEventCall, serializeStoredEvent } from '../events/serialize.js';

const eventNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No event with id "${id}"`, id });

export const retrieveEventOperation = eventsOperation('get', '/events/{id}', {
  summary: 'One event with its bodies and its webhook calls',
  responses: {
    200: {
      description: 'The event; its calls in `included`',
      schema: z.strictObject({ data: EventResource, included: z.array(EventCallResource) }),
    },
  },
  errors: ['NOT_FOUND'],
});

/**
 * GET /events/:id → 200 (extension): the event with its entity bodies, and its webhook calls in
 * `included`; 404 when there is no such event. An id that POST /events would refuse (too long,
 * characters outside A-Z a-z 0-9 _ . : -, a slash sent as %2F) names no event: 404 without a query.
 */
export function retrieveEvent(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const { id } = req.params;
    if (!EventId.safeParse(id).success) throw eventNotFound(id);
    const [event, calls] = await Promise.all([findEvent(deps.db, id), listEventCalls(deps.db, id)]);
    if (!event) throw eventNotFound(id);
    res.json({ data: serializeStoredEvent(event, calls), included: calls.map(serializeEventCall) });
  };
}
