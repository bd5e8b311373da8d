import { Histogram } from 'prom-client';
import type { Metrics } from '@herald/runtime';

export type QueryDuration = Histogram<'shape'>;

const NAME = 'herald_items_query_duration_seconds';

/** SQL time of GET /items (count and page together) by query shape; one per registry. */
export function itemsQueryDuration(metrics: Metrics): QueryDuration {
  const existing = metrics.registry.getSingleMetric(NAME);
  if (existing) return existing as QueryDuration;
  return new Histogram({
    name: NAME,
    help: 'SQL duration of a records listing by query shape (list, list_filtered, search, by_ids)',
    labelNames: ['shape'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [metrics.registry],
  });
}
