import { Counter, Gauge, Histogram } from 'prom-client';
import type { Metrics } from '@herald/runtime';
import { readCommitPosition, readReplayState, type Queryable } from '@herald/store';

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

export type ReadAfterServed = Counter<'served_by'>;

const READ_AFTER = 'herald_read_after_total';

/** Reads given a read-after token, by where they ran (`replica`, `primary`); one per registry. */
export function readAfterServed(metrics: Metrics): ReadAfterServed {
  const existing = metrics.registry.getSingleMetric(READ_AFTER);
  if (existing) return existing as ReadAfterServed;
  const counter = new Counter({
    name: READ_AFTER,
    help: 'Reads of GET /items and GET /items/:id given X-Herald-Read-After, by where they ran: the replica once it had replayed that far, else the primary',
    labelNames: ['served_by'] as const,
    registers: [metrics.registry],
  });
  // Both series from the start, so that a rate over them means something before the first read.
  counter.inc({ served_by: 'replica' }, 0);
  counter.inc({ served_by: 'primary' }, 0);
  return counter;
}

/**
 * herald_replica_lag_bytes and herald_replica_lag_seconds, measured at each scrape: the WAL the
 * primary has committed that the replica has not replayed yet, and, when there is any, the age
 * of the last transaction it replayed (0 when it has replayed everything). NaN when either
 * server cannot say. Registered once per registry, with the first replica given.
 */
export function registerReplicaLag(metrics: Metrics, primary: Queryable, replica: Queryable): void {
  if (metrics.registry.getSingleMetric('herald_replica_lag_bytes')) return;
  // One measurement per scrape for both gauges (the registry collects them at once).
  let measuring: Promise<ReplicaLag> | undefined;
  const measure = () =>
    (measuring ??= measureReplicaLag(primary, replica).finally(() => {
      measuring = undefined;
    }));
  const gauges = {
    bytes: 'WAL bytes the primary has committed that the read replica has not replayed yet',
    seconds:
      'Age of the last transaction the read replica replayed while it is behind the primary; 0 when it is not',
  } as const;
  for (const [unit, help] of Object.entries(gauges) as [keyof ReplicaLag, string][]) {
    new Gauge({
      name: `herald_replica_lag_${unit}`,
      help,
      registers: [metrics.registry],
      async collect() {
        this.set((await measure())[unit]);
      },
    });
  }
}

interface ReplicaLag {
  bytes: number;
  seconds: number;
}

async function measureReplicaLag(primary: Queryable, replica: Queryable): Promise<ReplicaLag> {
  try {
    // The primary first: what the replica has to reach, then how far it got.
    const committed = await readCommitPosition(primary);
    const state = await readReplayState(replica);
    if (state.replayed === null) return { bytes: NaN, seconds: NaN };
    const behind = committed > state.replayed ? Number(committed - state.replayed) : 0;
    return { bytes: behind, seconds: behind === 0 ? 0 : (state.lastReplayedAgeSeconds ?? NaN) };
  } catch {
    return { bytes: NaN, seconds: NaN };
  }
}
