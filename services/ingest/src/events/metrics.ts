import { Counter, Histogram, type Registry } from 'prom-client';

export interface IngestMetrics {
  events: Counter<'entity_type' | 'event_type' | 'outcome'>;
  batchSize: Histogram;
  enqueueFailures: Counter;
}

const cache = new WeakMap<Registry, IngestMetrics>();

/**
 * The ingest metrics, registered once per registry (the single-process mode and tests may build
 * several apps on one registry). Labels hold only values of the entity/event type table.
 */
export function ingestMetrics(registry: Registry): IngestMetrics {
  let metrics = cache.get(registry);
  if (!metrics) {
    metrics = {
      events: new Counter({
        name: 'herald_events_ingested_total',
        help: 'Events received by POST /events, by entity_type, event_type and outcome (accepted, duplicate, rejected)',
        labelNames: ['entity_type', 'event_type', 'outcome'] as const,
        registers: [registry],
      }),
      batchSize: new Histogram({
        name: 'herald_ingest_batch_size_events',
        help: 'Events per POST /events request',
        buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
        registers: [registry],
      }),
      enqueueFailures: new Counter({
        name: 'herald_ingest_enqueue_failures_total',
        help: 'Accepted batches whose event ids could not be enqueued (Redis away); the sweeper enqueues them later',
        registers: [registry],
      }),
    };
    cache.set(registry, metrics);
  }
  return metrics;
}
