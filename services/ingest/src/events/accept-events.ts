import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type EntityType, type EventType } from '@herald/contract';
import {
  loadBatchContext,
  loadRecordModels,
  sqlState,
  StaleBatchContextError,
  writeItemBatch,
  type Db,
} from '@herald/store';
import { applyPlan, itemBatchOf } from './apply-plan.js';
import type { BatchContextCache } from './context-cache.js';
import type { GroupCommit } from './group-commit.js';
import {
  environmentOf,
  modelKeys,
  planBatch,
  recordsWithoutModel,
  type BatchPlan,
} from './plan.js';
import type { ValidEvent } from './validate-events.js';

interface AcceptedEvent {
  id: string;
  status: 'accepted' | 'duplicate';
  entityType: EntityType;
  eventType: EventType;
}

export interface AcceptResult {
  events: AcceptedEvent[];
  /** Ids stored by this call, in request order: the ones to enqueue. */
  acceptedIds: string[];
  /** An environment event was applied (the environment cache is stale). */
  environmentsChanged: boolean;
  /**
   * Where the commit reached in the WAL, when the write read it already (a group commit reads it
   * once for its group); absent: the caller reads it (readCommitPosition).
   */
  position?: Promise<bigint>;
}

/** How acceptEvents may take its fast path (both per process: the route keeps them). */
export interface AcceptOptions {
  /** The acceptance time; default now. */
  now?: Date;
  /** The environments and models of recent batches (item batches then skip the pre-read). */
  cache?: BatchContextCache;
  /** Writes of cached batches share their statement and commit with concurrent requests. */
  group?: GroupCommit;
  /** The traceparent of the request's span, stored with the events (docs/operations.md, Traces). */
  traceparent?: string | null;
}

/** A batch as acceptEvents was given it, each event with its id. */
interface Batch {
  events: readonly ValidEvent[];
  ids: readonly string[];
  requestEnvironment: string;
  now: Date;
  traceparent: string | null;
}

/**
 * Accepts a validated batch durably (docs/api.md, POST /events; docs/architecture.md): in one
 * transaction, stores the events (a repeated id is a duplicate, never stored or applied twice) and
 * applies the new ones to the record store, validating item attributes against their models. Any
 * problem throws a 422 and rolls the whole batch back. Enqueuing is the caller's job, after this
 * resolves.
 */
export async function acceptEvents(
  db: Db,
  events: readonly ValidEvent[],
  requestEnvironment: string,
  options: AcceptOptions = {},
): Promise<AcceptResult> {
  const now = options.now ?? new Date();
  for (let attempt = 1; ; attempt++) {
    try {
      return await acceptOnce(db, events, requestEnvironment, now, options);
    } catch (error) {
      // Two requests writing the same records in other orders can deadlock; Postgres rolls one
      // back whole (nothing of it is stored), so it is simply done again, after a short pause.
      if (sqlState(error) !== DEADLOCK || attempt === DEADLOCK_TRIES) throw error;
      await sleep(5 + Math.random() * 20 * attempt);
    }
  }
}

/** SQLSTATE deadlock_detected. */
const DEADLOCK = '40P01';
/** How many times a request chosen as a deadlock's victim is tried, in all. */
const DEADLOCK_TRIES = 4;

async function acceptOnce(
  db: Db,
  events: readonly ValidEvent[],
  requestEnvironment: string,
  now: Date,
  { cache, group, traceparent = null }: AcceptOptions,
): Promise<AcceptResult> {
  const batch: Batch = {
    events,
    ids: events.map((e) => e.id ?? randomUUID()),
    requestEnvironment,
    now,
    traceparent,
  };
  const onlyItems = events.every((event) => event.kind === 'item');
  if (cache && onlyItems) {
    const accepted = await acceptFromCache(db, batch, cache, group);
    if (accepted) return accepted;
  }
  // Planning reads outside the transaction: it took no locks inside one either, and the
  // writes re-check what matters (ON CONFLICT on event ids, the staleness rule on records).
  const records = recordsWithoutModel(events, requestEnvironment);
  const [context, recordModels] = await Promise.all([
    loadBatchContext(db, [...new Set(batch.ids)], modelKeys(events, requestEnvironment)),
    loadRecordModels(db, records),
  ]);
  const plan = planBatch({
    ...batch,
    storedIds: context.knownEventIds,
    environments: context.environments,
    models: context.models,
    recordModels: records.length > 0 ? recordModels : undefined,
  });
  if (plan.errors.length > 0) throw ApiError.many(plan.errors.slice(0, 100));
  const inserted = await applyPlan(db, plan);
  if (cache) {
    // A batch of item events leaves environments and models as they were read.
    if (onlyItems) cache.remember(context);
    else cache.clear();
  }
  return acceptResult(batch, plan, inserted);
}

/**
 * A batch of item events validated against the cached context instead of a fresh pre-read;
 * undefined when it cannot be: the cache lacks something, the batch has validation errors (the
 * full path words them, knowing which events are duplicates and need none), it is not one for
 * writeItemBatch, or the write found the context changed. Events already stored are planned
 * too: the write skips them (ON CONFLICT) with their records.
 */
async function acceptFromCache(
  db: Db,
  batch: Batch,
  cache: BatchContextCache,
  group: GroupCommit | undefined,
): Promise<AcceptResult | undefined> {
  const { events, requestEnvironment } = batch;
  const cached = cache.lookup(
    new Set(events.map((event) => environmentOf(event, requestEnvironment))),
    modelKeys(events, requestEnvironment).map(({ environment, key }) => ({ environment, id: key })),
  );
  if (!cached) return undefined;
  const plan = planBatch({
    ...batch,
    storedIds: new Set(),
    environments: cached.environments,
    models: cached.models,
  });
  if (plan.errors.length > 0) return undefined;
  const write = itemBatchOf(plan);
  if (!write) return undefined;
  try {
    if (group) {
      const { inserted, position } = await group.write({ ...write, expected: cached.expected });
      return { ...acceptResult(batch, plan, inserted), position };
    }
    const { inserted } = await writeItemBatch(db, { ...write, expected: cached.expected });
    return acceptResult(batch, plan, inserted);
  } catch (error) {
    if (!(error instanceof StaleBatchContextError)) throw error;
    cache.clear();
    return undefined;
  }
}

function acceptResult(batch: Batch, plan: BatchPlan, inserted: ReadonlySet<string>): AcceptResult {
  const seen = new Set<string>();
  const events = batch.events.map((event, i): AcceptedEvent => {
    const id = batch.ids[i]!;
    // Only an id's first occurrence can have been stored by this call.
    const accepted = !seen.has(id) && inserted.has(id);
    seen.add(id);
    return {
      id,
      status: accepted ? 'accepted' : 'duplicate',
      entityType: event.attributes.entity_type,
      eventType: event.attributes.event_type,
    };
  });
  const stored = plan.events.filter((p) => inserted.has(p.row.id));
  return {
    events,
    acceptedIds: stored.map((p) => p.row.id),
    environmentsChanged: stored.some((p) => p.effect.kind.startsWith('environment-')),
  };
}
