import type { RequestHandler } from 'express';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { WebhookListCache } from '../webhooks/list-cache.js';

/**
 * GET /webhooks → every webhook, oldest first; not paginated (docs/api.md, GET /webhooks). 10,000
 * webhooks must answer in under 200 ms (bench/webhooks), hence the per-process cache of serialized
 * webhooks.
 */
export function listWebhooksRoute(deps: WebhookRouteDeps): RequestHandler {
  const cache = new WebhookListCache();
  return async (_req, res) => {
    const body = await cache.render(deps.db);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.send(body);
  };
}
