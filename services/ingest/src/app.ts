import { Router, type Express } from 'express';
import type { CidrList } from '@herald/contract';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import { consoleRouter } from './routes/console.static.js';
import { webhooksRouter } from './routes/webhooks.router.js';

/** What the ingest routes need; grows as resources are added. */
export interface IngestDeps extends ApiAppDeps {
  /** Folder of the built web console (CONSOLE_DIR); /console answers 404 when it is not built. */
  consoleDir?: string | undefined;
  /** CIDRs exempt from the SSRF blocked ranges (SSRF_ALLOW_CIDRS); none when absent. */
  ssrfAllowCidrs?: CidrList;
}

/** The ingest service's routes: /webhooks, /webhook_calls, /events. */
export function ingestRouter(deps: IngestDeps): Router {
  const router = Router();
  router.use(webhooksRouter({ ...deps, ssrfAllowCidrs: deps.ssrfAllowCidrs ?? [] }));
  return router;
}

/** What ingest serves without a token, before auth: the console's static files. */
export function ingestPublicRouters(deps: IngestDeps): Router[] {
  return [consoleRouter(deps.consoleDir)];
}

export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [ingestRouter(deps)], ingestPublicRouters(deps));
}
