import { Counter, type Registry } from 'prom-client';
import { enqueueEventMatches, type EventMatchQueue, type Logger } from '@herald/runtime';
import { listUnmatchedEvents, type Queryable } from '@herald/store';

export interface EventSweeperOptions {
  db: Queryable;
  queue: EventMatchQueue;
  logger: Logger;
  registry: Registry;
  /** Time between sweeps. */
  intervalMs: number;
  /** Events younger than this are left to the ingest request that is enqueuing them. */
  graceMs: number;
  /** Event ids read and enqueued per round trip. */
  batchSize: number;
  /** How long one enqueue may wait for Redis. */
  enqueueTimeoutMs: number;
}

const counters = new WeakMap<Registry, Counter>();
function sweptCounter(registry: Registry): Counter {
  let counter = counters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'herald_sweeper_events_enqueued_total',
      help: 'Stored but unmatched events the sweeper (re-)enqueued on event-match',
      registers: [registry],
    });
    counters.set(registry, counter);
  }
  return counter;
}

/**
 * Enqueues every stored event the match worker has not marked matched (events.matched_at), in
 * acceptance order: what ingest could not enqueue (Redis down) or Redis lost (flushed,
 * restarted) is matched after all. Job ids are the event ids, so an event whose job still
 * exists is not enqueued twice. Returns how many ids it enqueued.
 */
export async function sweepUnmatchedEvents(
  options: Omit<EventSweeperOptions, 'intervalMs' | 'logger'>,
): Promise<number> {
  const counter = sweptCounter(options.registry);
  const acceptedBefore = new Date(Date.now() - options.graceMs);
  let afterSeq: string | undefined;
  let total = 0;
  for (;;) {
    const page = await listUnmatchedEvents(options.db, {
      ...(afterSeq ? { afterSeq } : {}),
      acceptedBefore,
      limit: options.batchSize,
    });
    if (page.length === 0) return total;
    await enqueueEventMatches(
      options.queue,
      page.map((event) => event.id),
      options.enqueueTimeoutMs,
    );
    counter.inc(page.length);
    total += page.length;
    afterSeq = page[page.length - 1]!.seq;
    if (page.length < options.batchSize) return total;
  }
}

/** Runs sweepUnmatchedEvents every intervalMs (the first time at once) until stopped. */
export function startEventSweeper(options: EventSweeperOptions): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const log = options.logger.child({ module: 'event-sweeper' });
  const tick = () => {
    running = sweepUnmatchedEvents(options)
      .then((count) => {
        if (count > 0) log.info({ count }, 'enqueued unmatched events');
      })
      .catch((error: unknown) => {
        log.warn({ err: (error as Error).message }, 'event sweep failed; retrying next interval');
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
