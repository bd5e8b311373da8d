import { fileURLToPath } from 'node:url';
import {
  createDeliverQueue,
  createEventMatchQueue,
  httpSettings,
  openReplicaDb,
  type Coordination,
  type DeliverQueue,
  type EventMatchQueue,
  type Lifecycle,
  type Logger,
  type Role,
} from '@herald/runtime';
import { ingestPublicRouters, ingestRouter } from './app.js';
import type { IngestConfig } from './config.js';

/**
 * The ingest role (startRoles): POST /events, /webhooks, /webhook_calls, /bulk_jobs,
 * /access_tokens, the OpenAPI document and the console, on the producer side of the queues.
 */
export function ingestRole(config: IngestConfig): Role {
  return {
    name: 'ingest',
    queues: true,
    api: {
      http: httpSettings(config),
      routers({ poolName, coordination, logger, lifecycle, localMatch }, api) {
        const { eventMatchQueue, deliverQueue } = openIngestQueues(
          config,
          coordination,
          logger,
          lifecycle,
        );
        // GET /events, GET /webhook_calls and GET /webhook_stats read it (EventsDeps.replicaDb).
        const replicaDb = openReplicaDb(config, `herald-${poolName}-replica`);
        if (replicaDb) lifecycle.onShutdown('replica-database', () => replicaDb.close());
        const deps = {
          ...api,
          eventMatchQueue,
          deliverQueue,
          enqueueTimeoutMs: config.ENQUEUE_TIMEOUT_MS,
          enqueueWaitForWritesMs: config.ENQUEUE_WAIT_FOR_WRITES_MS,
          localMatch,
          ssrfAllowCidrs: config.SSRF_ALLOW_CIDRS,
          siteId: config.SITE_ID,
          consoleDir:
            config.CONSOLE_DIR ?? fileURLToPath(new URL('../../console/dist', import.meta.url)),
          replicaDb,
        };
        return { routers: [ingestRouter(deps)], publicRouters: ingestPublicRouters(deps) };
      },
    },
  };
}

/**
 * The queues ingest produces to, closed at shutdown: match jobs for the events it accepts, and
 * deliver jobs for resends.
 */
export function openIngestQueues(
  config: Pick<IngestConfig, 'MATCH_JOB_ATTEMPTS' | 'MATCH_JOB_BACKOFF_MS'>,
  coordination: Coordination,
  logger: Logger,
  lifecycle: Lifecycle,
): { eventMatchQueue: EventMatchQueue; deliverQueue: DeliverQueue } {
  const eventMatchQueue = createEventMatchQueue(coordination, logger, {
    attempts: config.MATCH_JOB_ATTEMPTS,
    backoffMs: config.MATCH_JOB_BACKOFF_MS,
  });
  lifecycle.onShutdown('event-match-queue', () => eventMatchQueue.close());
  const deliverQueue = createDeliverQueue(coordination, logger);
  lifecycle.onShutdown('webhook-deliver-queue', () => deliverQueue.close());
  return { eventMatchQueue, deliverQueue };
}
