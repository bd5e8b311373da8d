import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, ReplayOffer, WebhookResource, keepStoredCredentials } from '@herald/contract';
import { requestDocument } from '@herald/runtime';
import { findWebhook, isWebhookId, updateWebhook } from '@herald/store';
import { webhooksOperation } from '../admin-api.js';
import { flowConflict, validateUpdate, webhookAttributeSchemas } from '../webhooks/attributes.js';
import { withStoredSecrets } from '../webhooks/endpoint-auth.js';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { readWebhookDocument } from '../webhooks/document.js';
import { mapUniqueName, webhookNotFound } from '../webhooks/errors.js';
import { publishWebhookChange } from '../webhooks/publish.js';
import { serializeWebhook } from '../webhooks/serialize.js';
import { uniquenessProblem } from '../webhooks/uniqueness.js';

export const updateWebhookOperation = webhooksOperation('put', '/webhooks/{id}', {
  summary: 'Update a webhook',
  description:
    'Any subset of the attributes, under the rules of create. Re-enabling a disabled webhook adds ' +
    '`meta.replay_offer` (extension): a replay of what it missed, to POST to /bulk_jobs as it is.',
  body: {
    schema: requestDocument('webhook', webhookAttributeSchemas.update, { id: true }),
    required: true,
  },
  responses: {
    200: {
      description: 'The whole webhook',
      schema: z.strictObject({
        data: WebhookResource,
        meta: z.strictObject({ replay_offer: ReplayOffer }).optional(),
      }),
    },
  },
  errors: ['NOT_FOUND', 'INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
});

/**
 * PUT /webhooks/:id with any subset of the attributes, same rules as create → 200. Re-enabling a
 * disabled webhook answers, in `meta.replay_offer`, the attributes of a replay of the events that
 * occurred while it was disabled, ready to POST to /bulk_jobs (docs/api.md, PUT /webhooks/:id).
 */
export function updateWebhookRoute(deps: WebhookRouteDeps): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const { id } = req.params;
    if (!isWebhookId(id)) throw webhookNotFound(id);
    const attributes = readWebhookDocument(req.body, { id });
    const result = validateUpdate(attributes, { allowCidrs: deps.ssrfAllowCidrs });
    if (!result.ok) {
      if (!(await findWebhook(deps.db, id))) throw webhookNotFound(id);
      const taken = await uniquenessProblem(deps.db, attributes['name'], id);
      throw ApiError.many([...result.errors, ...(taken ? [taken] : [])]);
    }
    const { deliveryOrder, batch } = result.value;
    if (deliveryOrder !== undefined || batch !== undefined) {
      // Checked against what is stored: the change must go with the settings it keeps.
      const stored = await findWebhook(deps.db, id);
      if (!stored) throw webhookNotFound(id);
      const conflict = flowConflict(
        {
          deliveryOrder: deliveryOrder ?? stored.deliveryOrder,
          batch: batch === undefined ? stored.batch : batch,
        },
        deliveryOrder !== undefined ? 'delivery_order' : 'batch',
      );
      if (conflict) throw ApiError.many([conflict]);
    }
    let patch = result.value;
    if (patch.auth || patch.tls || patch.destination !== undefined) {
      const stored = await findWebhook(deps.db, id);
      if (!stored) throw webhookNotFound(id);
      if (patch.destination !== undefined) {
        // A destination sent back as shown (`***`) keeps its stored credentials.
        patch.destination = keepStoredCredentials(patch.destination, stored.destination);
      }
      if (patch.auth || patch.tls) {
        // Write-only secrets left out are kept from what is stored (for the same token URL and
        // client id, the same certificate).
        const completed = withStoredSecrets(patch, stored);
        if (!completed.ok) throw ApiError.many(completed.errors);
        patch = completed.value;
      }
    }
    const before = patch.enabled === true ? await findWebhook(deps.db, id) : null;
    const webhook = await updateWebhook(deps.db, id, patch).catch((error: unknown) => {
      throw mapUniqueName(error, patch.name);
    });
    if (!webhook) throw webhookNotFound(id);
    await publishWebhookChange(deps, { id, change: 'updated' });
    const missedSince = before && !before.enabled ? before.disabledAt : null;
    if (!missedSince) return void res.json({ data: serializeWebhook(webhook) });
    const replayOffer = {
      kind: 'replay',
      webhook_id: id,
      filter: {
        occurred_at: { gt: missedSince.toISOString(), lt: webhook.updatedAt.toISOString() },
      },
    };
    res.json({ data: serializeWebhook(webhook), meta: { replay_offer: replayOffer } });
  };
}
