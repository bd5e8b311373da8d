import type { Express } from 'express';
import { createApiApp, type ApiAppDeps } from '@herald/runtime';
import { ingestRouter } from '@herald/ingest';
import { readRouter } from '@herald/read';

/** ingest and read on one port, as the gateway would route them. */
export function createApp(deps: ApiAppDeps): Express {
  return createApiApp(deps, [readRouter(deps), ingestRouter(deps)]);
}
