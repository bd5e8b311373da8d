import { Router, type Express } from 'express';
import type { CidrList } from '@herald/contract';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import { webhookCallsRouter } from './routes/webhook-calls.router.js';
import { webhooksRouter } from './routes/webhooks.router.js';

/** What the ingest routes need; grows as resources are added. */
export interface IngestDeps extends ApiAppDeps {
  /** CIDRs exempt from the SSRF blocked ranges (SSRF_ALLOW_CIDRS); none when absent. */
  ssrfAllowCidrs?: CidrList;
}

/** The ingest service's routes: /webhooks, /webhook_calls, /events. */
export function ingestRouter(deps: IngestDeps): Router {
  const router = Router();
  router.use(webhooksRouter({ ...deps, ssrfAllowCidrs: deps.ssrfAllowCidrs ?? [] }));
  router.use(webhookCallsRouter(deps));
  return router;
}

export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [ingestRouter(deps)]);
}
