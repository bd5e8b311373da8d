import type { RequestHandler } from 'express';
import { ApiError } from '@herald/contract';
import { enqueueResend, type DeliverQueue } from '@herald/runtime';
import { findWebhook, findWebhookCall, type Db } from '@herald/store';
import { webhookCallsOperation } from '../admin-api.js';
import { webhookCallNotFound } from './webhook-calls.retrieve.js';

export const resendWebhookCallOperation = webhookCallsOperation(
  'post',
  '/webhook_calls/{id}/resend_webhook',
  {
    summary: "Send the call again now, with the webhook's current settings",
    responses: { 204: { description: 'Queued; no body' } },
    errors: ['NOT_FOUND'],
  },
);

/**
 * POST /webhook_calls/:id/resend_webhook → 204: the deliver worker sends the call again now, with
 * the webhook's current settings and the same webhook-id; a success ends its pending retries.
 *
 * A call whose webhook was deleted cannot be sent again ("the webhook's current settings" do not
 * exist): 404 NOT_FOUND, details naming the missing webhook. 404 rather than 422 because the
 * resource the action needs is gone, as when DatoCMS deletes a webhook with its calls; clients
 * already treat NOT_FOUND as "stop, nothing to retry" (it is not transient).
 */
export function resendWebhookCall(deps: {
  db: Db;
  deliverQueue: DeliverQueue;
}): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const call = await findWebhookCall(deps.db, req.params.id);
    if (!call) throw webhookCallNotFound(req.params.id);
    if (!(await findWebhook(deps.db, call.webhookId))) {
      throw new ApiError('NOT_FOUND', {
        message: `The webhook of webhook call "${call.id}" (webhook "${call.webhookId}") was deleted: there is nothing to resend it to`,
        id: call.id,
        webhook_id: call.webhookId,
      });
    }
    await enqueueResend(deps.deliverQueue, { id: call.id, webhookId: call.webhookId });
    res.status(204).end();
  };
}
