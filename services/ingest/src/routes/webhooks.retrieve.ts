import type { RequestHandler } from 'express';
import { WebhookResource } from '@herald/contract';
import { findWebhook } from '@herald/store';
import { answerFound, dataAnswer, webhooksOperation } from '../admin-api.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { serializeWebhook } from '../webhooks/serialize.js';

export const retrieveWebhookOperation = webhooksOperation('get', '/webhooks/{id}', {
  summary: 'One webhook',
  responses: { 200: dataAnswer('The webhook', WebhookResource) },
  errors: ['NOT_FOUND'],
});

/** GET /webhooks/:id → 200 or 404. */
export function retrieveWebhook(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return answerFound((id) => findWebhook(deps.db, id), webhookNotFound, serializeWebhook);
}
