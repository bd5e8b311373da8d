import type { RequestHandler } from 'express';
import { ApiError, isObject, type ErrorEntry } from '@herald/contract';
import { context, enqueueDeliveries, type DeliverQueue } from '@herald/runtime';
import { createTestWebhookCall, findWebhook, type Db } from '@herald/store';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { chooseEvent, readActionDocument } from './webhooks.preview.js';

/**
 * POST /webhooks/:id/test → 202 (extension): sends the webhook a sample event, or the stored
 * event the body names (`{"data": {"type": "webhook_test", "attributes": {"event_id": "…"}}}`),
 * now, whether the webhook is enabled or not. The call is logged like any other (the answer is
 * the new call, pending; GET /webhook_calls/:id follows it), carries its event, and its attempt
 * has the trigger `test`; it is never retried automatically, and the event is not matched again.
 */
export function sendWebhookTest(deps: {
  db: Db;
  deliverQueue: DeliverQueue;
}): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const empty =
      req.body === undefined || (isObject(req.body) && Object.keys(req.body).length === 0);
    const attributes = empty ? {} : readActionDocument(req.body, 'webhook_test');
    const problems: ErrorEntry[] = [];
    for (const key of Object.keys(attributes)) {
      if (key === 'event_id') continue;
      problems.push({
        code: 'INVALID_ATTRIBUTES',
        details: {
          field: key,
          message: `Unknown attribute "${key}"; a webhook test has: event_id`,
          extraneous_attributes: [key],
        },
      });
    }
    const webhook = await findWebhook(deps.db, req.params.id);
    if (!webhook) throw webhookNotFound(req.params.id);
    const environment = context(res).environment ?? {
      id: 'main',
      locales: ['en'],
      isPrimary: true,
    };
    const chosen = await chooseEvent(deps.db, attributes['event_id'], environment, problems);
    if (problems.length > 0 || !chosen) throw ApiError.many(problems);
    const call = await createTestWebhookCall(deps.db, webhook.id, chosen.event);
    await enqueueDeliveries(deps.deliverQueue, [{ id: call.id, webhookId: webhook.id }]);
    res.status(202).json({ data: serializeWebhookCall(call) });
  };
}
