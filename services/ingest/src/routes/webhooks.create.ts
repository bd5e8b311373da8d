import type { RequestHandler } from 'express';
import { ApiError, WebhookResource } from '@herald/contract';
import { requestDocument } from '@herald/runtime';
import { insertWebhook } from '@herald/store';
import { dataAnswer, webhooksOperation } from '../admin-api.js';
import { validateCreate, webhookAttributeSchemas } from '../webhooks/attributes.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { readWebhookDocument } from '../webhooks/document.js';
import { mapUniqueName } from '../webhooks/errors.js';
import { publishWebhookChange } from '../webhooks/publish.js';
import { serializeWebhook } from '../webhooks/serialize.js';
import { uniquenessProblem } from '../webhooks/uniqueness.js';

export const createWebhookOperation = webhooksOperation('post', '/webhooks', {
  summary: 'Create a webhook',
  body: { schema: requestDocument('webhook', webhookAttributeSchemas.create), required: true },
  responses: { 201: dataAnswer('The webhook, its signing secret generated', WebhookResource) },
  errors: ['INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
});

/** POST /webhooks → 201 with the webhook, its signing secret generated (docs/api.md). */
export function createWebhook(deps: WebhookRouteDeps): RequestHandler {
  return async (req, res) => {
    const attributes = readWebhookDocument(req.body, {});
    const result = validateCreate(attributes, { allowCidrs: deps.ssrfAllowCidrs });
    if (!result.ok) {
      const taken = await uniquenessProblem(deps.db, attributes['name']);
      throw ApiError.many([...result.errors, ...(taken ? [taken] : [])]);
    }
    const webhook = await insertWebhook(deps.db, result.value).catch((error: unknown) => {
      throw mapUniqueName(error, result.value.name);
    });
    await publishWebhookChange(deps, { id: webhook.id, change: 'created' });
    res.status(201).json({ data: serializeWebhook(webhook) });
  };
}
