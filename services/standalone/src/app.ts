import type { Express } from 'express';
import { createApiApp } from '@herald/runtime';
import { ingestRouter, type IngestDeps } from '@herald/ingest';
import { readRouter } from '@herald/read';

/** ingest and read on one port, as the gateway would route them. */
export function createApp(deps: IngestDeps): Express {
  return createApiApp(deps, [readRouter(deps), ingestRouter(deps)]);
}
