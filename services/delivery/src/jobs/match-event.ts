import type { Queue } from 'bullmq';
import {
  DELIVER_WEBHOOK_JOB,
  EventMatchJobData,
  MATCH_EVENT_JOB,
  deliverJobId,
  type DeliverJobData,
} from '@herald/contract';
import type { Logger } from '@herald/runtime';
import { createWebhookCalls, findEvents, type Db } from '@herald/store';
import type { DeliveryMetrics } from '../delivery/metrics.js';
import type { WebhookIndex } from '../webhook-index.js';
import type { NewCall } from './deliver-webhook.js';

export type DeliverQueue = Queue<DeliverJobData>;

export interface MatchContext {
  db: Db;
  index: WebhookIndex;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Queues the first attempts of new calls in this process (FirstAttempts). */
  startAttempts: (calls: readonly NewCall[]) => void;
  /** Resolves when this process has room for more attempts (back-pressure on matching). */
  roomForAttempts: () => Promise<void>;
}

/** Deliver jobs leave Redis once done: Postgres keeps the log, and the sweeper may re-add ids. */
export const DELIVER_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
} as const;

/** One deliver job per call (the sweeper's re-adds): its first attempt, or its retry `retry`. */
export function deliverJobs(
  calls: readonly { id: string; webhookId: string; retry?: number | undefined }[],
) {
  return calls.map(({ id: callId, webhookId, retry }) => ({
    name: DELIVER_WEBHOOK_JOB,
    data: retry === undefined ? { callId, webhookId } : { callId, webhookId, retry },
    opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(callId, retry) },
  }));
}

/**
 * Turns events stored together into one webhook_call per (event, matching webhook), then starts
 * the calls' first attempts. Safe to run twice: calls are unique per (event, webhook), events
 * already matched are skipped, and a repeat starts the calls still pending.
 */
async function handler(ctx: MatchContext, data: EventMatchJobData): Promise<void> {
  await ctx.roomForAttempts();
  const events = (await findEvents(ctx.db, data.eventIds)).filter((event) => !event.matchedAt);
  if (events.length === 0) return;
  const matches = events.map((event) => {
    const started = performance.now();
    const webhookIds = ctx.index.match(event);
    ctx.metrics.matchDuration.observe((performance.now() - started) / 1000);
    return { event, webhookIds };
  });
  const byId = new Map(events.map((event) => [event.id, event]));
  const calls = await createWebhookCalls(ctx.db, matches);
  ctx.startAttempts(
    calls.flatMap((call) => {
      const event = byId.get(call.eventId);
      return event ? [{ ...call, event }] : [];
    }),
  );
}

export const matchEvent = { name: MATCH_EVENT_JOB, schema: EventMatchJobData, handler };
