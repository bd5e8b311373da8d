import { Router } from 'express';
import { requireRole } from '@herald/runtime';
import type { WebhookRouteDeps } from '../webhooks/deps.js';
import { createWebhook } from './webhooks.create.js';
import { destroyWebhook } from './webhooks.destroy.js';
import { listWebhooksRoute } from './webhooks.list.js';
import { retrieveWebhook } from './webhooks.retrieve.js';
import { rotateWebhookSecretRoute } from './webhooks.rotate-secret.js';
import { listWebhookStatsRoute, webhookStatsRoute } from './webhooks.stats.js';
import { updateWebhookRoute } from './webhooks.update.js';

/**
 * /webhooks (docs/api.md, Webhooks): admin only — requireRole() with no other role lets admins
 * alone in.
 */
export function webhooksRouter(deps: WebhookRouteDeps): Router {
  const router = Router();
  const admin = requireRole();
  router.post('/webhooks', admin, createWebhook(deps));
  router.get('/webhooks', admin, listWebhooksRoute(deps));
  router.get('/webhooks/:id', admin, retrieveWebhook(deps));
  router.put('/webhooks/:id', admin, updateWebhookRoute(deps));
  router.delete('/webhooks/:id', admin, destroyWebhook(deps));
  router.post('/webhooks/:id/rotate_secret', admin, rotateWebhookSecretRoute(deps));
  router.get('/webhooks/:id/stats', admin, webhookStatsRoute(deps));
  // Every webhook's figures: a replica's lag is tolerated (EventsDeps.replicaDb). One webhook's
  // are not: a webhook just created would be a 404 there.
  router.get('/webhook_stats', admin, listWebhookStatsRoute({ db: deps.replicaDb ?? deps.db }));
  return router;
}
