import type { Job } from 'bullmq';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  EventMatchJobData,
  MATCH_EVENT_JOB,
  QUEUE_EVENT_MATCH,
  errorMessage,
} from '@herald/contract';
import { contextOf, tracer, type Logger } from '@herald/runtime';
import {
  createWebhookCalls,
  findEvents,
  hasFlowControl,
  isDbUnavailableError,
  placeFlowCalls,
  type Db,
  type NewWebhookCall,
  type Placement,
  type Queryable,
  type ReleasedCall,
  type StoredEvent,
} from '@herald/store';
import type { Lease } from '../systems/recovery/lease.js';
import type { ModelCache } from '../shared/loaders.js';
import type { DeliveryMetrics } from '../metrics.js';
import { putOffUntilDatabaseReturns } from '../shared/outage.js';
import { contentFor } from '../systems/match/event-content.js';
import type { WebhookIndex } from '../systems/match/webhook-index.js';
import type { NewCall } from './deliver-webhook.js';

export interface MatchContext {
  db: Db;
  index: WebhookIndex;
  /** Models of the events whose matching needs their content (field-aware entries). */
  models: ModelCache;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Queues the first attempts of new calls in this process (FirstAttempts). */
  startAttempts: (calls: readonly NewCall[]) => void;
  /** Resolves when this process has room for more attempts (back-pressure on matching). */
  roomForAttempts: () => Promise<void>;
  /** This process's lease: the new calls are held by it until their first attempt is made. */
  lease: Lease;
  /** Enqueues the jobs of batches whose window is open, due when it ends (flow control). */
  enqueueDue: (calls: readonly ReleasedCall[]) => Promise<void>;
}

/**
 * Some events of a match job are not in this database. Events are never deleted, so they are
 * either not visible yet (a replica behind) or the job was enqueued by another deployment sharing
 * this Redis prefix. Either way the job must not complete as if it had matched them: it is
 * retried, then kept in the failed set with this message.
 */
class EventsNotFoundError extends Error {
  constructor(missing: number, total: number) {
    super(
      `${missing} of the job's ${total} events are not in this database (not visible yet, or ` +
        `the job comes from another deployment sharing REDIS_PREFIX); will retry`,
    );
    this.name = 'EventsNotFoundError';
  }
}

/**
 * Turns events stored together into one webhook_call per (event, matching webhook), then starts
 * the calls' first attempts here, holding them under this process's lease. Safe to run twice:
 * calls are unique per (event, webhook) and events already matched are skipped; the calls a dead
 * run made are taken over by the sweeper once its lease runs out. While Postgres is unreachable
 * the job waits for it without spending attempts.
 */
async function handler(
  ctx: MatchContext,
  data: EventMatchJobData,
  job: Job,
  token: string | undefined,
): Promise<void> {
  await ctx.roomForAttempts();
  // A lease that could not be renewed may be taken over at any moment: hold nothing new by it.
  if (!ctx.lease.valid) return waitForDatabase(ctx, job, token);
  let missing: number;
  let started: readonly NewCall[];
  try {
    const found = await findEvents(ctx.db, data.eventIds);
    missing = new Set(data.eventIds).size - found.length;
    started = await matchAndCreate(ctx, found);
  } catch (error) {
    if (isDbUnavailableError(error)) return waitForDatabase(ctx, job, token);
    throw error;
  }
  ctx.startAttempts(started);
  if (missing > 0) {
    ctx.metrics.eventsMissing.inc(missing);
    throw new EventsNotFoundError(missing, data.eventIds.length);
  }
}

async function matchAndCreate(
  ctx: MatchContext,
  found: readonly StoredEvent[],
): Promise<NewCall[]> {
  const events = found.filter((event) => !event.matchedAt);
  if (events.length === 0) return [];
  const contents = await Promise.all(
    events.map((event) => contentFor(ctx.index, ctx.models, event)),
  );
  const matches = events.map((event, i) => {
    const started = performance.now();
    const webhookIds = ctx.index.match(event, contents[i]);
    ctx.metrics.matchDuration.observe((performance.now() - started) / 1000);
    return { event, webhookIds };
  });
  const byId = new Map(events.map((event) => [event.id, event]));
  const startTime = new Date();
  let calls: NewCall[];
  try {
    calls = await createCalls(ctx, matches, byId);
  } catch (error) {
    traceMatches(matches, startTime, error);
    throw error;
  }
  traceMatches(matches, startTime);
  return calls;
}

/**
 * One span per traced event (its traceparent stored by POST /events): the match continues each
 * event's own trace, whichever job carried it. Bounded attributes only.
 */
function traceMatches(
  matches: readonly { event: StoredEvent; webhookIds: readonly string[] }[],
  startTime: Date,
  error?: unknown,
): void {
  for (const { event, webhookIds } of matches) {
    if (!event.traceparent) continue;
    const span = tracer().startSpan(
      'herald.match',
      {
        kind: SpanKind.CONSUMER,
        startTime,
        attributes: {
          'herald.event.id': event.id,
          'herald.event.type': `${event.entityType}.${event.eventType}`,
          'herald.match.webhooks': webhookIds.length,
        },
      },
      contextOf(event.traceparent),
    );
    if (error !== undefined) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the calls were not made' });
    }
    span.end();
  }
}

/** Makes the calls of the matches and holds them under the lease; returns those to start here. */
async function createCalls(
  ctx: MatchContext,
  matches: { event: StoredEvent; webhookIds: string[] }[],
  byId: ReadonlyMap<string, StoredEvent>,
): Promise<NewCall[]> {
  // Calls of webhooks with flow control are placed in their lanes in the statement's transaction.
  const flow = matches.some(({ webhookIds }) =>
    webhookIds.some((id) => {
      const webhook = ctx.index.get(id);
      return webhook !== undefined && hasFlowControl(webhook);
    }),
  );
  let due: ReleasedCall[] = [];
  let placed: ReadonlySet<string> = new Set();
  const calls = await ctx.lease.create(async () => {
    if (!flow) return createWebhookCalls(ctx.db, matches, ctx.lease.id);
    const made = await ctx.db.transaction((tx) => createAndPlace(ctx, tx, matches, byId));
    ({ due, placed } = made);
    return made.calls;
  });
  if (due.length > 0) {
    // Lost (Redis away), the batch is re-enqueued by the sweeper once its window is overdue.
    await ctx
      .enqueueDue(due)
      .catch((error: unknown) =>
        ctx.logger.warn(
          { err: errorMessage(error) },
          'could not enqueue batches; the sweeper will',
        ),
      );
  }
  return calls.flatMap((call) => {
    const event = byId.get(call.eventId);
    return event ? [{ ...call, event, placed: placed.has(call.id), claimed: null }] : [];
  });
}

/**
 * Makes the calls, then places those of webhooks with flow control in their lanes (placeFlowCalls),
 * in one transaction. Returns the calls whose first attempt goes now (`placed`: those in a lane),
 * and the batches due later.
 */
async function createAndPlace(
  ctx: MatchContext,
  tx: Queryable,
  matches: Parameters<typeof createWebhookCalls>[1],
  byId: ReadonlyMap<string, StoredEvent>,
): Promise<{ calls: NewWebhookCall[]; placed: ReadonlySet<string>; due: ReleasedCall[] }> {
  const made = await createWebhookCalls(tx, matches, ctx.lease.id);
  const unplaced = made.flatMap((call) => {
    const event = byId.get(call.eventId);
    return call.webhook && event && hasFlowControl(call.webhook)
      ? [{ id: call.id, webhook: call.webhook, event }]
      : [];
  });
  if (unplaced.length === 0) return { calls: made, placed: new Set(), due: [] };
  const placement = await placeFlowCalls(tx, unplaced);
  countPlacement(ctx, placement, unplaced.length);
  const placed = new Set(unplaced.map((call) => call.id));
  const ready = new Set(placement.ready);
  return {
    calls: made.filter((call) => !placed.has(call.id) || ready.has(call.id)),
    placed,
    due: placement.due,
  };
}

function countPlacement(ctx: MatchContext, placement: Placement, total: number): void {
  const { flowEvents } = ctx.metrics;
  const own = total - placement.joined - placement.parked - placement.superseded;
  flowEvents.inc({ placement: 'own' }, own - placement.due.length);
  flowEvents.inc({ placement: 'batched' }, placement.due.length);
  flowEvents.inc({ placement: 'parked' }, placement.parked);
  flowEvents.inc({ placement: 'joined' }, placement.joined);
  flowEvents.inc({ placement: 'superseded' }, placement.superseded);
}

function waitForDatabase(ctx: MatchContext, job: Job, token: string | undefined): Promise<never> {
  ctx.metrics.jobsWaitingForDatabase.inc({ queue: QUEUE_EVENT_MATCH });
  return putOffUntilDatabaseReturns(job, token);
}

export const matchEvent = { name: MATCH_EVENT_JOB, schema: EventMatchJobData, handler };
