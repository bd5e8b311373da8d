import type { Queue } from 'bullmq';
import {
  DELIVER_WEBHOOK_JOB,
  EventMatchJobData,
  MATCH_EVENT_JOB,
  deliverJobId,
  type DeliverJobData,
} from '@herald/contract';
import type { Logger } from '@herald/runtime';
import { createWebhookCalls, type Db } from '@herald/store';
import type { DeliveryLoaders } from '../delivery/loaders.js';
import type { DeliveryMetrics } from '../delivery/metrics.js';
import type { WebhookIndex } from '../webhook-index.js';

export interface MatchContext {
  db: Db;
  loaders: DeliveryLoaders;
  index: WebhookIndex;
  deliverQueue: Queue<DeliverJobData>;
  metrics: DeliveryMetrics;
  logger: Logger;
}

/** Deliver jobs leave Redis once done: Postgres keeps the log, and the sweeper may re-add ids. */
export const DELIVER_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: true,
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
} as const;

export function deliverJobs(calls: readonly { id: string; webhookId: string }[]) {
  return calls.map(({ id: callId, webhookId }) => ({
    name: DELIVER_WEBHOOK_JOB,
    data: { callId, webhookId },
    opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(callId) },
  }));
}

/**
 * Turns an event into one webhook_call per matching webhook and one deliver job per call. Safe to
 * run twice: calls are unique per (event, webhook) and jobs per call id.
 */
async function handler(ctx: MatchContext, data: EventMatchJobData): Promise<void> {
  const event = await ctx.loaders.events.load(data.eventId);
  if (!event || event.matchedAt) return;
  const started = performance.now();
  const webhookIds = ctx.index.match(event);
  ctx.metrics.matchDuration.observe((performance.now() - started) / 1000);
  const calls = await createWebhookCalls(ctx.db, event, webhookIds);
  if (calls.length > 0) await ctx.deliverQueue.addBulk(deliverJobs(calls));
}

export const matchEvent = { name: MATCH_EVENT_JOB, schema: EventMatchJobData, handler };
