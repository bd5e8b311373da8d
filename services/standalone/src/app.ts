import type { Express } from 'express';
import { createApiApp, shareApiState } from '@herald/runtime';
import { ingestPublicRouters, ingestRouter, type IngestDeps } from '@herald/ingest';
import { readRouter, type ReadDeps } from '@herald/read';

/**
 * ingest and read on one port, as the gateway would route them (and the console at /console, the
 * API's document at /openapi.json), for the tests: the single process itself composes them with
 * its roles (startRoles in @herald/runtime), in this order.
 */
export function createApp(
  deps: IngestDeps &
    Pick<ReadDeps, 'readDb' | 'readReplicaDb' | 'readAfterWaitMs' | 'readLimits' | 'indexes'>,
): Express {
  const shared = shareApiState(deps);
  return createApiApp(
    shared,
    [ingestRouter(shared), readRouter(shared)],
    ingestPublicRouters(shared),
  );
}
