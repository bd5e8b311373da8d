import type { RequestHandler } from 'express';
import type { Queue } from 'bullmq';
import { DELIVER_WEBHOOK_JOB, resendJobId, type DeliverJobData } from '@herald/contract';
import { findWebhookCall, type Db } from '@herald/store';
import { webhookCallNotFound } from './webhook-calls.retrieve.js';

/**
 * POST /webhook_calls/:id/resend_webhook → 204: the deliver worker sends the call again now, with
 * the webhook's current settings and the same webhook-id; a success ends its pending retries.
 */
export function resendWebhookCall(deps: {
  db: Db;
  deliverQueue: () => Queue<DeliverJobData>;
}): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const call = await findWebhookCall(deps.db, req.params.id);
    if (!call) throw webhookCallNotFound(req.params.id);
    await deps
      .deliverQueue()
      .add(
        DELIVER_WEBHOOK_JOB,
        { callId: call.id, webhookId: call.webhookId, resend: true },
        { jobId: resendJobId(call.id), removeOnComplete: true, removeOnFail: true, attempts: 3 },
      );
    res.status(204).end();
  };
}
