import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  EnvironmentId,
  LoggedEventResource,
  WEBHOOK_ENTITY_TYPES,
  WEBHOOK_EVENT_TYPES,
  isWebhookEventType,
  type WebhookEntityType,
} from '@herald/contract';
import { context } from '@herald/runtime';
import { listEvents, type Db } from '@herald/store';
import { eventsOperation } from '../admin-api.js';
import { serializeLoggedEvent } from '../events/serialize.js';
import { instantRange, pageParams, parseQuery } from '../validation/query-params.js';

const ALL_EVENT_TYPES = [...new Set(Object.values(WEBHOOK_EVENT_TYPES).flat())] as [
  string,
  ...string[],
];

/** GET /events query (docs/api.md, GET /events). */
const EventListQuery = z
  .object({
    page: pageParams(30),
    filter: z
      .object({
        environment: EnvironmentId.optional(),
        // Herald's own notices too (docs/api.md, Notices: entity type notice, entity id the
        // webhook's): producers cannot send them, but they are listed like any event.
        entity_type: z
          .enum(WEBHOOK_ENTITY_TYPES as [WebhookEntityType, ...WebhookEntityType[]])
          .optional(),
        // What an entity id may be (POST /events): 1–128 characters, any of them.
        entity_id: z.string().min(1).max(128).optional(),
        event_type: z.enum(ALL_EVENT_TYPES).optional(),
        occurred_at: instantRange.optional(),
        accepted_at: instantRange.optional(),
      })
      .strict()
      .refine(
        (f) => !f.entity_type || !f.event_type || isWebhookEventType(f.entity_type, f.event_type),
        { message: 'is not an event type of filter[entity_type]', path: ['event_type'] },
      )
      .optional(),
    // Newest first: "what happened to this record lately" is the usual question.
    order_by: z.enum(['occurred_at_desc', 'occurred_at_asc']).default('occurred_at_desc'),
  })
  .strict();

export const listEventsOperation = eventsOperation('get', '/events', {
  summary: 'List stored events, newest first',
  description:
    '`meta.total_count` is exact up to 10,000 matches, an upper bound past that ' +
    '(`meta.total_count_exact` says which).',
  query: EventListQuery,
  responses: {
    200: {
      description: 'One page of events, without their entity bodies',
      schema: z.strictObject({
        data: z.array(LoggedEventResource),
        meta: z.strictObject({
          total_count: z.number().int().min(0),
          total_count_exact: z.boolean(),
        }),
      }),
    },
  },
});

/**
 * GET /events → 200 (extension): stored events, newest first unless asked, paginated, without
 * their entity bodies (GET /events/:id has them); meta.total_count exact up to
 * EVENT_COUNT_EXACT_MAX, an upper bound past it (meta.total_count_exact says which).
 */
export function listEventsRoute(deps: { db: Db }): RequestHandler {
  return async (_req, res) => {
    const query = parseQuery(EventListQuery, context(res).query);
    const filter = query.filter;
    const { events, totalCount, totalCountExact } = await listEvents(deps.db, {
      environment: filter?.environment,
      entityType: filter?.entity_type,
      entityId: filter?.entity_id,
      eventType: filter?.event_type,
      occurredAt: filter?.occurred_at,
      acceptedAt: filter?.accepted_at,
      newestFirst: query.order_by === 'occurred_at_desc',
      offset: query.page.offset,
      limit: query.page.limit,
    });
    res.json({
      data: events.map(serializeLoggedEvent),
      meta: { total_count: totalCount, total_count_exact: totalCountExact },
    });
  };
}
