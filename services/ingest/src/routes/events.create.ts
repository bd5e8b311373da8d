import type { RequestHandler } from 'express';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, type Span } from '@opentelemetry/api';
import { z } from 'zod';
import {
  ApiError,
  EVENTS_PER_REQUEST_MAX,
  EventInput,
  EventsAccepted,
  READ_AFTER_HEADER,
  encodeReadAfter,
  isEntityType,
  isEventTypeOf,
} from '@herald/contract';
import {
  EventMatchEnqueuer,
  context,
  traceparentOf,
  tracer,
  type ApiAppDeps,
  type ApiOperation,
  type EventMatchQueue,
  type EventWrite,
  type LocalMatchHandOff,
} from '@herald/runtime';
import { readCommitPosition, type Db } from '@herald/store';
import { acceptEvents } from '../events/accept-events.js';
import { BatchContextCache } from '../events/context-cache.js';
import { GroupCommit } from '../events/group-commit.js';
import { ingestMetrics } from '../events/metrics.js';
import { validateEventsBody } from '../events/validate-events.js';

/** What POST /events needs. */
export type EventsDeps = ApiAppDeps & {
  /** Producer side of the `event-match` queue (createEventMatchQueue). */
  eventMatchQueue: EventMatchQueue;
  /** How long POST /events waits for Redis before leaving the enqueue to the sweeper. */
  enqueueTimeoutMs: number;
  /**
   * How long a committed request's enqueue waits for the writes beside it
   * (ENQUEUE_WAIT_FOR_WRITES_MS); absent: 0, never.
   */
  enqueueWaitForWritesMs?: number;
  /**
   * This process's own match workers (the single process): the ids they take skip the queue.
   */
  localMatch?: Pick<LocalMatchHandOff, 'offer'>;
  /**
   * The replica of READ_DATABASE_URL, for the reads that tolerate its lag (GET /events,
   * GET /webhook_calls, GET /webhook_stats; docs/operations.md, Read replicas); default `db`.
   */
  replicaDb?: Db | undefined;
};

/** Counts a rejected batch, labelling each event by its types when they are valid values. */
function countRejected(deps: EventsDeps, body: unknown): void {
  const metrics = ingestMetrics(deps.metrics.registry);
  const data = (body as { data?: unknown } | null)?.data;
  const list = Array.isArray(data) ? data.slice(0, 1000) : [data];
  for (const raw of list) {
    const attributes = (raw as { attributes?: Record<string, unknown> } | null)?.attributes;
    const entityType = attributes?.['entity_type'];
    const eventType = attributes?.['event_type'];
    const valid = isEntityType(entityType) && isEventTypeOf(entityType, eventType);
    metrics.events.inc({
      entity_type: valid ? entityType : 'invalid',
      event_type: valid ? String(eventType) : 'invalid',
      outcome: 'rejected',
    });
  }
}

export const createEventsOperation: ApiOperation = {
  method: 'post',
  path: '/events',
  summary: 'Report what changed in the content',
  description:
    'Validated whole and stored in one transaction: every event is accepted or none. The ' +
    'entity is narrowed per entity type (docs/api.md, POST /events).',
  tag: 'Events',
  extension: true,
  access: { roles: ['producer'] },
  body: {
    schema: z.object({
      data: z.union([EventInput, z.array(EventInput).min(1).max(EVENTS_PER_REQUEST_MAX)]),
    }),
    required: true,
  },
  responses: {
    202: { description: 'One entry per event, in request order', schema: EventsAccepted },
  },
  errors: ['INVALID_FORMAT'],
};

/**
 * POST /events (docs/api.md): validate the batch whole, store it and apply it to the record store
 * in one transaction, then enqueue the new ids on `event-match`. The 202 means "durably stored":
 * if Redis is away the enqueue is skipped and the delivery service's sweeper does it later. It
 * carries the commit's read-after token (docs/api.md, Read your own events).
 */
export function eventsCreate(deps: EventsDeps): RequestHandler {
  const metrics = ingestMetrics(deps.metrics.registry);
  const log = deps.logger.child({ module: 'events' });
  // Environments and models of recent batches: item batches skip the pre-read (the write
  // re-checks them, see BatchContextCache).
  const contextCache = new BatchContextCache();
  // Their one-statement writes share a statement and a commit with the requests beside them.
  const group = new GroupCommit(deps.db);
  // Requests finishing together share an enqueue (and a match job); one that commits while
  // others write waits for them, briefly.
  const enqueuer = new EventMatchEnqueuer(
    deps.eventMatchQueue,
    deps.enqueueTimeoutMs,
    deps.enqueueWaitForWritesMs,
    deps.localMatch,
  );
  return async (req, res, next) => {
    // The producer's traceparent, if it sent one, is this span's parent; the events keep this
    // span's, so that their match and attempts continue the trace (tracing off: a no-op span).
    const span = tracer().startSpan(
      'POST /events',
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': 'POST', 'http.route': '/events' },
      },
      propagation.extract(ROOT_CONTEXT, req.headers),
    );
    try {
      const body: unknown = req.body;
      let result;
      let write: EventWrite | undefined;
      try {
        const events = validateEventsBody(body);
        metrics.batchSize.observe(events.length);
        write = enqueuer.startWrite();
        result = await acceptEvents(deps.db, events, context(res).environment?.id ?? 'main', {
          cache: contextCache,
          group,
          traceparent: traceparentOf(span),
        });
      } catch (error) {
        write?.end();
        if (error instanceof ApiError && error.status === 422) countRejected(deps, body);
        throw error;
      }
      const enqueued = write.enqueue(result.acceptedIds);
      // Read your own events: where the commit reached in the WAL (read by the group commit, or
      // asked here while Redis takes the ids). The events are stored whatever happens here:
      // without it, the 202 has no token.
      const position = result.position ?? readCommitPosition(deps.db);
      const readAfter = position.then(encodeReadAfter, (error: unknown) => {
        log.warn({ err: (error as Error).message }, 'events stored; no read-after token');
        return undefined;
      });
      if (result.environmentsChanged) deps.environments?.invalidate();
      // One inc per label set, not per event (a batch is usually one or two label sets).
      const tally = new Map<string, { labels: Record<string, string>; count: number }>();
      for (const event of result.events) {
        const key = `${event.entityType} ${event.eventType} ${event.status}`;
        const seen = tally.get(key);
        if (seen) seen.count++;
        else {
          const labels = {
            entity_type: event.entityType,
            event_type: event.eventType,
            outcome: event.status,
          };
          tally.set(key, { labels, count: 1 });
        }
      }
      for (const { labels, count } of tally.values()) metrics.events.inc(labels, count);
      try {
        await enqueued;
      } catch (error) {
        metrics.enqueueFailures.inc();
        log.warn(
          { err: (error as Error).message, events: result.acceptedIds.length },
          'events stored but not enqueued; the sweeper will enqueue them',
        );
      }
      const token = await readAfter;
      const answer: EventsAccepted = {
        data: result.events.map((event) => ({
          type: 'event',
          id: event.id,
          attributes: { status: event.status },
        })),
        ...(token ? { meta: { read_after: token } } : {}),
      };
      if (token) res.setHeader(READ_AFTER_HEADER, token);
      res.status(202).json(answer);
      if (span.isRecording()) endSpan(span, 202, result.events);
    } catch (error) {
      if (span.isRecording()) {
        endSpan(span, error instanceof ApiError ? error.status : 500, [], error);
      }
      next(error);
    }
  };
}

/**
 * Ends the request's span with bounded attributes: the answer's status, how many events and of
 * which types (never their ids, entities or the error's message, which may quote them).
 */
function endSpan(
  span: Span,
  status: number,
  events: readonly { entityType: string; eventType: string; status: string }[],
  error?: unknown,
): void {
  span.setAttribute('http.response.status_code', status);
  if (events.length > 0) {
    const types = new Set(events.map((event) => `${event.entityType}.${event.eventType}`));
    span.setAttributes({
      'herald.event.count': events.length,
      'herald.event.accepted': events.filter((event) => event.status === 'accepted').length,
      'herald.event.types': [...types].sort().slice(0, 20),
    });
  }
  if (error !== undefined) {
    const type = error instanceof ApiError ? (error.entries[0]?.code ?? 'ERROR') : 'INTERNAL_ERROR';
    span.setAttribute('error.type', type);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
  span.end();
}
