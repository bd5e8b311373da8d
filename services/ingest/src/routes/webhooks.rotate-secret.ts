import type { RequestHandler } from 'express';
import { SIGNING_SECRET_ROTATION_GRACE_MS } from '@herald/contract';
import { rotateWebhookSecret } from '@herald/store';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { publishWebhookChange } from '../webhooks/publish.js';
import { serializeWebhook } from '../webhooks/serialize.js';

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
