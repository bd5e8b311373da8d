import type { RequestHandler } from 'express';
import { SIGNING_SECRET_ROTATION_GRACE_MS, WebhookResource } from '@herald/contract';
import { rotateWebhookSecret } from '@herald/store';
import { dataAnswer, webhooksOperation } from '../admin-api.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { publishWebhookChange } from '../webhooks/publish.js';
import { serializeWebhook } from '../webhooks/serialize.js';

export const rotateWebhookSecretOperation = webhooksOperation(
  'post',
  '/webhooks/{id}/rotate_secret',
  {
    summary: "Replace the webhook's signing secret",
    description: 'The previous secret keeps signing beside the new one for 24 hours.',
    extension: true,
    responses: {
      200: dataAnswer('The webhook and its new signing secret', WebhookResource),
    },
    errors: ['NOT_FOUND'],
  },
);

/**
 * POST /webhooks/:id/rotate_secret (extension) → 200 with the new signing secret. The previous
 * one keeps signing beside it for 24 h, so receivers can switch without dropping calls.
 */
export function rotateWebhookSecretRoute(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const webhook = await rotateWebhookSecret(
      deps.db,
      req.params.id,
      SIGNING_SECRET_ROTATION_GRACE_MS,
    );
    if (!webhook) throw webhookNotFound(req.params.id);
    await publishWebhookChange(deps, { id: webhook.id, change: 'secret_rotated' });
    res.json({ data: serializeWebhook(webhook) });
  };
}
