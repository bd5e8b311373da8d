import { parseCidrList } from '@herald/contract';
import { createApp } from '@herald/ingest';
import { createDeliverQueue, createEventMatchQueue, type Logger } from '@herald/runtime';
import type { Db } from '@herald/store';
import { serve, testPostgresCoordination } from '@herald/testkit';

type IngestDeps = Omit<
  Parameters<typeof createApp>[0],
  'eventMatchQueue' | 'deliverQueue' | 'coordination' | 'ssrfAllowCidrs'
>;

/**
 * The ingest app on Postgres alone (no REDIS_URL), served: its queues on BullMQ's PostgreSQL
 * backend, in a coordination of its own on `db` for the delivery workers to share. `close` stops
 * the app and its queues, then drops the queues' schema.
 */
export async function servePostgresOnlyIngest(db: Db, deps: IngestDeps, logger: Logger) {
  const postgresOnly = await testPostgresCoordination(db);
  const queues = {
    eventMatchQueue: createEventMatchQueue(postgresOnly.coordination, logger),
    deliverQueue: createDeliverQueue(postgresOnly.coordination, logger),
  };
  const server = await serve(
    createApp({
      ...deps,
      ...queues,
      coordination: postgresOnly.coordination,
      ssrfAllowCidrs: parseCidrList('127.0.0.0/8'),
    }),
  );
  return {
    server,
    coordination: postgresOnly.coordination,
    async close(): Promise<void> {
      await server.close();
      await Promise.all([queues.eventMatchQueue.close(), queues.deliverQueue.close()]);
      await postgresOnly.cleanup();
    },
  };
}
