import type { RequestHandler } from 'express';
import { z } from 'zod';
import { ApiError, WebhookCallResource } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';
import { findWebhookCall, type Db } from '@herald/store';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';

export const webhookCallNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No webhook call with id "${id}"`, id });

export const retrieveWebhookCallOperation: ApiOperation = {
  method: 'get',
  path: '/webhook_calls/{id}',
  summary: 'One webhook call',
  tag: 'Webhook calls',
  access: { roles: [] },
  responses: {
    200: { description: 'The call', schema: z.strictObject({ data: WebhookCallResource }) },
  },
  errors: ['NOT_FOUND'],
};

/** GET /webhook_calls/:id → 200 or 404. */
export function retrieveWebhookCall(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const call = await findWebhookCall(deps.db, req.params.id);
    if (!call) throw webhookCallNotFound(req.params.id);
    res.json({ data: serializeWebhookCall(call) });
  };
}
