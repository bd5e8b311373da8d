import type { RequestHandler } from 'express';
import { ApiError, WebhookCallResource } from '@herald/contract';
import { findWebhookCall, type Db } from '@herald/store';
import { answerFound, dataAnswer, webhookCallsOperation } from '../admin-api.js';
import { serializeWebhookCall } from '../webhook-calls/serialize.js';

export const webhookCallNotFound = (id: string): ApiError =>
  new ApiError('NOT_FOUND', { message: `No webhook call with id "${id}"`, id });

export const retrieveWebhookCallOperation = webhookCallsOperation('get', '/webhook_calls/{id}', {
  summary: 'One webhook call',
  responses: { 200: dataAnswer('The call', WebhookCallResource) },
  errors: ['NOT_FOUND'],
});

/** GET /webhook_calls/:id → 200 or 404. */
export function retrieveWebhookCall(deps: { db: Db }): RequestHandler<{ id: string }> {
  return answerFound(
    (id) => findWebhookCall(deps.db, id),
    webhookCallNotFound,
    serializeWebhookCall,
  );
}
