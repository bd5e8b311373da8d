import type { Express } from 'express';
import { createApiApp } from '@herald/runtime';
import { ingestPublicRouters, ingestRouter, type IngestDeps } from '@herald/ingest';
import { readRouter } from '@herald/read';

/** ingest and read on one port, as the gateway would route them (and the console at /console). */
export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [readRouter(deps), ingestRouter(deps)], ingestPublicRouters(deps));
}
