import type { Queue } from 'bullmq';
import {
  DELIVER_CALLS_JOB,
  DELIVER_WEBHOOK_JOB,
  EventMatchJobData,
  MATCH_EVENT_JOB,
  deliverCallsJobId,
  deliverJobId,
  type DeliverCallsJobData,
  type DeliverJobData,
} from '@herald/contract';
import type { Logger } from '@herald/runtime';
import { createWebhookCalls, findEvents, type Db } from '@herald/store';
import type { DeliveryMetrics } from '../delivery/metrics.js';
import type { WebhookIndex } from '../webhook-index.js';

export type DeliverQueue = Queue<DeliverJobData | DeliverCallsJobData>;

export interface MatchContext {
  db: Db;
  index: WebhookIndex;
  deliverQueue: DeliverQueue;
  metrics: DeliveryMetrics;
  logger: Logger;
  /** Calls per deliver-calls job (DELIVERY_CALLS_PER_JOB). */
  callsPerJob: number;
}

/** Deliver jobs leave Redis once done: Postgres keeps the log, and the sweeper may re-add ids. */
export const DELIVER_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
} as const;

/** One deliver job per call (the sweeper's re-adds). */
export function deliverJobs(calls: readonly { id: string; webhookId: string }[]) {
  return calls.map(({ id: callId, webhookId }) => ({
    name: DELIVER_WEBHOOK_JOB,
    data: { callId, webhookId },
    opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(callId) },
  }));
}

/** New calls, `perJob` per deliver-calls job. */
export function deliverCallsJobs(
  calls: readonly { id: string; webhookId: string }[],
  perJob: number,
) {
  const jobs = [];
  for (let i = 0; i < calls.length; i += perJob) {
    const chunk = calls
      .slice(i, i + perJob)
      .map(({ id: callId, webhookId }) => ({ callId, webhookId }));
    jobs.push({
      name: DELIVER_CALLS_JOB,
      data: { calls: chunk },
      opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverCallsJobId(chunk) },
    });
  }
  return jobs;
}

/**
 * Turns events stored together into one webhook_call per (event, matching webhook) and deliver
 * jobs for the calls, several calls per job. Safe to run twice: calls are unique per (event,
 * webhook), events already matched are skipped, and a repeat re-adds the calls still pending.
 */
async function handler(ctx: MatchContext, data: EventMatchJobData): Promise<void> {
  const events = (await findEvents(ctx.db, data.eventIds)).filter((event) => !event.matchedAt);
  if (events.length === 0) return;
  const matches = events.map((event) => {
    const started = performance.now();
    const webhookIds = ctx.index.match(event);
    ctx.metrics.matchDuration.observe((performance.now() - started) / 1000);
    return { event, webhookIds };
  });
  const calls = await createWebhookCalls(ctx.db, matches);
  if (calls.length > 0) await ctx.deliverQueue.addBulk(deliverCallsJobs(calls, ctx.callsPerJob));
}

export const matchEvent = { name: MATCH_EVENT_JOB, schema: EventMatchJobData, handler };
