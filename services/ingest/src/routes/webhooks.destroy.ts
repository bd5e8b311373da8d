import type { RequestHandler } from 'express';
import { WebhookResource } from '@herald/contract';
import { deleteWebhook } from '@herald/store';
import { dataAnswer, webhooksOperation } from '../admin-api.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { publishWebhookChange } from '../webhooks/publish.js';
import { serializeWebhook } from '../webhooks/serialize.js';

export const destroyWebhookOperation = webhooksOperation('delete', '/webhooks/{id}', {
  summary: 'Delete a webhook',
  responses: { 200: dataAnswer('The deleted webhook', WebhookResource) },
  errors: ['NOT_FOUND'],
});

/** DELETE /webhooks/:id → 200 with the deleted webhook. */
export function destroyWebhook(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const webhook = await deleteWebhook(deps.db, req.params.id);
    if (!webhook) throw webhookNotFound(req.params.id);
    await publishWebhookChange(deps, { id: webhook.id, change: 'deleted' });
    res.json({ data: serializeWebhook(webhook) });
  };
}
