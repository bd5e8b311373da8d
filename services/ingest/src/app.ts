import { Router, type Express } from 'express';
import type { CidrList } from '@herald/contract';
import { HERALD_USER_AGENT } from '@herald/payload';
import { createApiApp, shareApiState, type DeliverQueue } from '@herald/runtime';
import { apiDocument } from './openapi.js';
import { accessTokensRouter } from './routes/access-tokens.router.js';
import { bulkJobsRouter } from './routes/bulk-jobs.router.js';
import { consoleRouter } from './routes/console.static.js';
import { openApiRouter } from './routes/openapi.retrieve.js';
import type { EventsDeps } from './routes/events.create.js';
import { eventsRouter } from './routes/events.router.js';
import { webhookCallsRouter } from './routes/webhook-calls.router.js';
import { webhookPreviewRouter } from './routes/webhooks.preview.js';
import { webhooksRouter } from './routes/webhooks.router.js';

/** What the ingest routes need; grows as resources are added. */
export type IngestDeps = EventsDeps & {
  /** Producer side of the `webhook-deliver` queue, for resends (createDeliverQueue). */
  deliverQueue: DeliverQueue;
  /** CIDRs exempt from the SSRF blocked ranges (SSRF_ALLOW_CIDRS); none when absent. */
  ssrfAllowCidrs?: CidrList;
  /** `site_id` of delivered payloads (SITE_ID), for previews; default 'herald'. */
  siteId?: string;
  /** Folder of the built web console (CONSOLE_DIR); /console answers 404 when it is not built. */
  consoleDir?: string | undefined;
};

/**
 * The ingest service's routes: /webhooks, /webhook_calls, /bulk_jobs, /events, /access_tokens and
 * /roles.
 */
export function ingestRouter(deps: IngestDeps): Router {
  const router = Router();
  const ssrfAllowCidrs = deps.ssrfAllowCidrs ?? [];
  // First: POST /events is the hot route, and every route before it is tried on each request.
  router.use(eventsRouter(deps));
  // Before webhooksRouter, so that /webhooks/preview is never read as a webhook id.
  router.use(
    webhookPreviewRouter({
      db: deps.db,
      ssrfAllowCidrs,
      siteId: deps.siteId ?? 'herald',
      userAgent: HERALD_USER_AGENT,
    }),
  );
  router.use(webhooksRouter({ ...deps, ssrfAllowCidrs }));
  router.use(webhookCallsRouter(deps));
  router.use(bulkJobsRouter(deps));
  router.use(accessTokensRouter(deps));
  return router;
}

/**
 * What ingest serves without a token, before auth: the document of the whole API (read's
 * operations included) and the console.
 */
export function ingestPublicRouters(deps: IngestDeps): Router[] {
  return [openApiRouter(apiDocument()), consoleRouter(deps.consoleDir)];
}

export function createApp(deps: IngestDeps): Express {
  const shared = shareApiState(deps);
  return createApiApp(shared, [ingestRouter(shared)], ingestPublicRouters(deps));
}
