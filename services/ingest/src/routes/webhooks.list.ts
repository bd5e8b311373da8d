import type { RequestHandler } from 'express';
import { z } from 'zod';
import { WebhookResource, totalCount } from '@herald/contract';
import { context } from '@herald/runtime';
import { listWebhooksPage } from '@herald/store';
import { webhooksOperation } from '../admin-api.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { WebhookListCache } from '../webhooks/list-cache.js';
import { serializeWebhook } from '../webhooks/serialize.js';
import { pageParams, parseQuery } from '../validation/query-params.js';

/**
 * GET /webhooks query. Without parameters the answer is DatoCMS's (every webhook, no meta: the
 * official client depends on it); `page` or `filter` (extensions) ask for one page of the
 * matching webhooks with meta.total_count, which is what a list of thousands reads.
 */
const WebhookListQuery = z
  .object({
    page: pageParams(30),
    filter: z
      .object({ query: z.string().max(2048, 'must be at most 2048 characters').optional() })
      .strict()
      .optional(),
  })
  .strict();

export const listWebhooksOperation = webhooksOperation('get', '/webhooks', {
  summary: 'Every webhook, oldest first',
  description:
    'Not paginated unless asked. Extension: with `page` or `filter[query]`, one page of the ' +
    'matching webhooks with `meta.total_count`.',
  query: WebhookListQuery,
  responses: {
    200: {
      description: 'The webhooks (one page, with meta, when asked)',
      schema: z.strictObject({ data: z.array(WebhookResource), meta: totalCount.optional() }),
    },
  },
});

/**
 * GET /webhooks → every webhook, oldest first, not paginated (docs/api.md, GET /webhooks); 10,000
 * webhooks must answer in under 200 ms (bench/webhooks), hence the per-process cache of serialized
 * webhooks. With page[offset], page[limit] or filter[query]: one page, with meta.total_count.
 */
export function listWebhooksRoute(deps: WebhookRouteDeps): RequestHandler {
  const cache = new WebhookListCache();
  return async (_req, res) => {
    const query = context(res).query;
    const { page, filter } = parseQuery(WebhookListQuery, query);
    if (!('page' in query) && !('filter' in query)) {
      const body = await cache.render(deps.db);
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.send(body);
      return;
    }
    const { webhooks, totalCount } = await listWebhooksPage(deps.db, {
      query: filter?.query ?? null,
      ...page,
    });
    res.json({ data: webhooks.map(serializeWebhook), meta: { total_count: totalCount } });
  };
}
