import { Router, type Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import { consoleRouter } from './routes/console.static.js';

/** What the ingest routes need; grows as resources are added. */
export interface IngestDeps extends ApiAppDeps {
  /** Folder of the built web console (CONSOLE_DIR); /console answers 404 when it is not built. */
  consoleDir?: string | undefined;
}

/** The ingest service's routes: /webhooks, /webhook_calls, /events. */
export function ingestRouter(_deps: IngestDeps): Router {
  const router = Router();
  return router;
}

/** What ingest serves without a token, before auth: the console's static files. */
export function ingestPublicRouters(deps: IngestDeps): Router[] {
  return [consoleRouter(deps.consoleDir)];
}

export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [ingestRouter(deps)], ingestPublicRouters(deps));
}
