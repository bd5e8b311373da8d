import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { errorMessage } from '@herald/contract';
import { contextOf, enqueueDueCalls, tracer } from '@herald/runtime';
import {
  createWebhookCalls,
  hasFlowControl,
  placeFlowCalls,
  type NewWebhookCall,
  type Placement,
  type Queryable,
  type ReleasedCall,
  type StoredEvent,
} from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { NewCall } from '../../shared/calls.js';
import type { SystemResources } from '../resources.js';
import { contentFor } from './event-content.js';

/**
 * `models`: of the events whose matching needs their content (field-aware entries); `lease` holds
 * the new calls until their first attempt is made; `deliverQueue` gets the jobs of batches whose
 * window is open, due when it ends (flow control).
 */
export type MatcherDeps = Pick<
  SystemResources,
  'db' | 'index' | 'indexUpTo' | 'models' | 'logger' | 'lease' | 'deliverQueue'
> & {
  metrics: Pick<DeliveryMetrics, 'matchDuration' | 'flowEvents'>;
};

/** Matches events to webhooks (the index) and makes their calls, placed in their lanes. */
export class Matcher {
  constructor(private readonly deps: MatcherDeps) {}

  /**
   * Turns events stored together into one webhook_call per (event, matching webhook), held under
   * this process's lease; returns the calls whose first attempt goes now, here. Events already
   * matched are skipped. `webhooksGeneration`: the one the events were read with
   * (findEventsToMatch); the index is brought up to it first, so that a webhook committed before
   * the events is matched even if its announcement has not arrived.
   */
  async match(found: readonly StoredEvent[], webhooksGeneration: bigint): Promise<NewCall[]> {
    const ctx = this.deps;
    const events = found.filter((event) => !event.matchedAt);
    if (events.length === 0) return [];
    await ctx.indexUpTo(webhooksGeneration);
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
  ctx: MatcherDeps,
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
    await enqueueDueCalls(ctx.deliverQueue, due, false).catch((error: unknown) =>
      ctx.logger.warn({ err: errorMessage(error) }, 'could not enqueue batches; the sweeper will'),
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
  ctx: MatcherDeps,
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

function countPlacement(ctx: MatcherDeps, placement: Placement, total: number): void {
  const { flowEvents } = ctx.metrics;
  const own = total - placement.joined - placement.parked - placement.superseded;
  flowEvents.inc({ placement: 'own' }, own - placement.due.length);
  flowEvents.inc({ placement: 'batched' }, placement.due.length);
  flowEvents.inc({ placement: 'parked' }, placement.parked);
  flowEvents.inc({ placement: 'joined' }, placement.joined);
  flowEvents.inc({ placement: 'superseded' }, placement.superseded);
}
