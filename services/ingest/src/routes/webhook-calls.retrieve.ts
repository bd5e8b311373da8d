import type { RequestHandler } from 'express';
import { ApiError } from '@herald/contract';
import { findWebhookCall, type Db } from '@herald/store';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';

export const webhookCallNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No webhook call with id "${id}"`, id });

/** GET /webhook_calls/:id → 200 or 404. */
export function retrieveWebhookCall(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const call = await findWebhookCall(deps.db, req.params.id);
    if (!call) throw webhookCallNotFound(req.params.id);
    res.json({ data: serializeWebhookCall(call) });
  };
}
