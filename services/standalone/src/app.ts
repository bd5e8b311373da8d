import type { Express } from 'express';
import { EnvironmentResolver, createApiApp } from '@herald/runtime';
import { ingestPublicRouters, ingestRouter, type IngestDeps } from '@herald/ingest';
import { readRouter, type ReadDeps } from '@herald/read';

/** ingest and read on one port, as the gateway would route them (and the console at /console). */
export function createApp(
  deps: IngestDeps & Pick<ReadDeps, 'readDb' | 'readLimits' | 'indexes'>,
): Express {
  // One resolver for the plumbing and the routes, so environment events can invalidate it.
  const shared = { ...deps, environments: deps.environments ?? new EnvironmentResolver(deps.db) };
  return createApiApp(
    shared,
    [readRouter(shared), ingestRouter(shared)],
    ingestPublicRouters(shared),
  );
}
