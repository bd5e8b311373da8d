import type { RequestHandler } from 'express';
import { listWebhooks } from '@herald/store';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { serializeWebhook } from '../webhooks/serialize.js';

/** GET /webhooks → every webhook, oldest first; not paginated (API.md §4.2). */
export function listWebhooksRoute(deps: WebhookRouteDeps): RequestHandler {
  return async (_req, res) => {
    const webhooks = await listWebhooks(deps.db);
    res.json({ data: webhooks.map(serializeWebhook) });
  };
}
