import type { RequestHandler } from 'express';
import { z } from 'zod';
import { WebhookCallAttemptResource, totalCount } from '@herald/contract';
import { context } from '@herald/runtime';
import { listWebhookCallAttempts, type Db, type WebhookCallAttemptRecord } from '@herald/store';
import { webhookCallsOperation } from '../admin-api.js';
import { pageParams, parseQuery } from '../validation/query-params.js';
import { webhookCallNotFound } from './webhook-calls.retrieve.js';

/** GET /webhook_calls/:id/attempts query: a page, as the call list takes it. */
const AttemptListQuery = z.object({ page: pageParams(100) }).strict();

function serializeAttempt(attempt: WebhookCallAttemptRecord): WebhookCallAttemptResource {
  return {
    type: 'webhook_call_attempt',
    id: `${attempt.callId}-${attempt.number}`,
    attributes: {
      number: attempt.number,
      trigger: attempt.trigger,
      outcome: attempt.outcome,
      started_at: attempt.startedAt.toISOString(),
      duration_ms: attempt.durationMs === null ? null : Math.round(attempt.durationMs * 10) / 10,
      request_url: attempt.requestUrl,
      request_headers: attempt.requestHeaders,
      request_payload: attempt.requestPayload,
      response_status: attempt.responseStatus,
      response_headers: attempt.responseHeaders,
      response_payload: attempt.responsePayload,
      failure_reason: attempt.failureReason,
    },
    relationships: { webhook_call: { data: { type: 'webhook_call', id: attempt.callId } } },
  };
}

export const listWebhookCallAttemptsOperation = webhookCallsOperation(
  'get',
  '/webhook_calls/{id}/attempts',
  {
    summary: 'Every attempt of a call, oldest first',
    extension: true,
    query: AttemptListQuery,
    responses: {
      200: {
        description: 'One page of attempts',
        schema: z.strictObject({ data: z.array(WebhookCallAttemptResource), meta: totalCount }),
      },
    },
    errors: ['NOT_FOUND'],
  },
);

/**
 * GET /webhook_calls/:id/attempts → 200 (extension): every attempt of the call, oldest first,
 * paginated, with meta.total_count; 404 when there is no such call.
 */
export function listWebhookCallAttemptsRoute(deps: { db: Db }): RequestHandler<{ id: string }> {
  return async (req, res) => {
    const { page } = parseQuery(AttemptListQuery, context(res).query);
    const found = await listWebhookCallAttempts(deps.db, req.params.id, page);
    if (!found) throw webhookCallNotFound(req.params.id);
    res.json({
      data: found.attempts.map(serializeAttempt),
      meta: { total_count: found.totalCount },
    });
  };
}
