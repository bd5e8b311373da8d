import type { RequestHandler } from 'express';
import { findWebhook } from '@herald/store';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { serializeWebhook } from '../webhooks/serialize.js';

/** GET /webhooks/:id → 200 or 404. */
export function retrieveWebhook(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const webhook = await findWebhook(deps.db, req.params.id);
    if (!webhook) throw webhookNotFound(req.params.id);
    res.json({ data: serializeWebhook(webhook) });
  };
}
