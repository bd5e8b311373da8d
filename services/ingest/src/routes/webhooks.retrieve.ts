import type { RequestHandler } from 'express';
import { z } from 'zod';
import { WebhookResource } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';
import { findWebhook } from '@herald/store';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { serializeWebhook } from '../webhooks/serialize.js';

export const retrieveWebhookOperation: ApiOperation = {
  method: 'get',
  path: '/webhooks/{id}',
  summary: 'One webhook',
  tag: 'Webhooks',
  access: { roles: [] },
  responses: {
    200: { description: 'The webhook', schema: z.strictObject({ data: WebhookResource }) },
  },
  errors: ['NOT_FOUND'],
};

/** GET /webhooks/:id → 200 or 404. */
export function retrieveWebhook(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const webhook = await findWebhook(deps.db, req.params.id);
    if (!webhook) throw webhookNotFound(req.params.id);
    res.json({ data: serializeWebhook(webhook) });
  };
}
