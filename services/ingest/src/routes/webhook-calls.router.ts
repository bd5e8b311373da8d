import { Router } from 'express';
import { requireRole, type ApiAppDeps, type DeliverQueue } from '@herald/runtime';
import type { Db } from '@herald/store';
import { listWebhookCallAttemptsRoute } from './webhook-calls.attempts.js';
import { listWebhookCallsRoute } from './webhook-calls.list.js';
import { resendWebhookCall } from './webhook-calls.resend.js';
import { retrieveWebhookCall } from './webhook-calls.retrieve.js';
import { sendWebhookTest } from './webhooks.send-test.js';

/** /webhook_calls (docs/api.md, Webhook calls): admin only, like /webhooks. */
export function webhookCallsRouter(
  deps: ApiAppDeps & { deliverQueue: DeliverQueue; replicaDb?: Db | undefined },
): Router {
  const router = Router();
  const admin = requireRole();
  // The log, listed: a replica's lag is tolerated (EventsDeps.replicaDb); one call by id is not.
  router.get('/webhook_calls', admin, listWebhookCallsRoute({ db: deps.replicaDb ?? deps.db }));
  router.get('/webhook_calls/:id', admin, retrieveWebhookCall(deps));
  router.get('/webhook_calls/:id/attempts', admin, listWebhookCallAttemptsRoute(deps));
  router.post('/webhook_calls/:id/resend_webhook', admin, resendWebhookCall(deps));
  // A webhook's action, here because what it makes is a webhook call (and needs the queue).
  router.post('/webhooks/:id/test', admin, sendWebhookTest(deps));
  return router;
}
