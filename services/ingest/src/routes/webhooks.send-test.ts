import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, WebhookCallResource, isObject, type ErrorEntry } from '@herald/contract';
import {
  context,
  enqueueDeliveries,
  requestDocument,
  type ApiOperation,
  type DeliverQueue,
} from '@herald/runtime';
import { createTestWebhookCall, findWebhook, type Db } from '@herald/store';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';
import { webhookNotFound } from '../webhooks/errors.js';
import { chooseEvent, readActionDocument } from './webhooks.preview.js';

export const sendWebhookTestOperation: ApiOperation = {
  method: 'post',
  path: '/webhooks/{id}/test',
  summary: 'Send the webhook a test now',
  description: 'A sample event, or the stored event the body names; logged as a webhook call.',
  tag: 'Webhooks',
  extension: true,
  access: { roles: [] },
  body: {
    schema: requestDocument(
      'webhook_test',
      z.strictObject({ event_id: z.string().nullable().optional() }),
    ),
    required: false,
  },
  responses: {
    202: {
      description: 'The new call, pending',
      schema: z.strictObject({ data: WebhookCallResource }),
    },
  },
  errors: ['NOT_FOUND', 'INVALID_FORMAT', 'INVALID_ATTRIBUTES'],
};

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
