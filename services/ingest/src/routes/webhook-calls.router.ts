import { Router } from 'express';
import { Queue } from 'bullmq';
import { QUEUE_WEBHOOK_DELIVER, type DeliverJobData } from '@herald/contract';
import { requireRole, type ApiAppDeps, type Lifecycle } from '@herald/runtime';
import { listWebhookCallsRoute } from './webhook-calls.list.js';
import { resendWebhookCall } from './webhook-calls.resend.js';
import { retrieveWebhookCall } from './webhook-calls.retrieve.js';

/** /webhook_calls (API.md §4.4): admin only, like /webhooks. */
export function webhookCallsRouter(deps: ApiAppDeps): Router {
  const router = Router();
  const admin = requireRole();
  // The resend producer queue is opened on first use and closed at shutdown.
  let queue: Queue<DeliverJobData> | undefined;
  const deliverQueue = (): Queue<DeliverJobData> => {
    if (!queue) {
      const opened = new Queue<DeliverJobData>(QUEUE_WEBHOOK_DELIVER, {
        connection: deps.redis,
        prefix: `{${deps.redisPrefix}}`,
      });
      opened.on('error', (error) => deps.logger.warn({ err: error.message }, 'queue error'));
      // The queue shares deps.redis (closed by its owner); closing it at shutdown is still tidy.
      const lifecycle = deps.lifecycle as Partial<Lifecycle>;
      lifecycle.onShutdown?.('webhook-deliver-queue', () => opened.close());
      queue = opened;
    }
    return queue;
  };
  router.get('/webhook_calls', admin, listWebhookCallsRoute(deps));
  router.get('/webhook_calls/:id', admin, retrieveWebhookCall(deps));
  router.post(
    '/webhook_calls/:id/resend_webhook',
    admin,
    resendWebhookCall({ ...deps, deliverQueue }),
  );
  return router;
}
