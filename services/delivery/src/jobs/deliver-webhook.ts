import { DelayedError, type Job } from 'bullmq';
import { DELIVER_WEBHOOK_JOB, DeliverJobData, QUEUE_WEBHOOK_DELIVER } from '@herald/contract';
import { isDbUnavailableError } from '@herald/store';
import type { DeliveryMetrics } from '../metrics.js';
import { putOffUntilDatabaseReturns, type DatabaseReturns } from '../shared/outage.js';
import type { Deliveries } from '../systems/attempt/deliveries.js';
import type { Limits } from '../systems/limits/limits.js';

interface DeliverJobContext {
  /** Makes the job's attempt (Deliveries.deliverJob). */
  deliveries: Pick<Deliveries, 'deliverJob'>;
  /** The webhook's in-flight slot, taken before anything else. */
  limits: Pick<Limits, 'inFlight' | 'slotToken' | 'inFlightWait'>;
  metrics: Pick<DeliveryMetrics, 'putOff' | 'jobsWaitingForDatabase'>;
  /** Brings the job back once the database is (after an outage). */
  databaseReturns: DatabaseReturns;
}

/**
 * A job of one call: a retry, a resend, a call that waited for its webhook's limits or lane, or
 * the sweeper's re-add. What the attempt came to decides when the job comes back, if it does.
 */
async function handler(
  ctx: DeliverJobContext,
  data: DeliverJobData,
  job: Job<DeliverJobData>,
  token: string | undefined,
): Promise<void> {
  // The in-flight limit comes first, so a job that must wait costs no database query.
  const slot = ctx.limits.slotToken(data.callId);
  if (!(await ctx.limits.inFlight.acquire(data.webhookId, slot))) {
    // The webhook is at its in-flight limit: step aside (this frees the worker slot for other
    // webhooks) and come back later. Never worker.rateLimit(): that would pause the whole queue.
    await job.moveToDelayed(Date.now() + ctx.limits.inFlightWait(), token);
    throw new DelayedError();
  }
  let result;
  try {
    result = await ctx.deliveries.deliverJob(data, slot);
  } catch (error) {
    // Before anything was sent (an outcome write waits for the database itself).
    if (!isDbUnavailableError(error)) throw error;
    ctx.metrics.jobsWaitingForDatabase.inc({ queue: QUEUE_WEBHOOK_DELIVER });
    await putOffUntilDatabaseReturns(job, token, ctx.databaseReturns);
    return;
  }
  switch (result.kind) {
    case 'done':
      return;
    case 'wait':
      // Its lane's batch window is open, or another attempt holds the call: back then (a parked
      // call's job just ends: the outcome before it releases it).
      await job.moveToDelayed(Math.max(Date.now(), result.until.getTime()), token);
      throw new DelayedError();
    case 'put-off': {
      const { waitMs, reason, rateSlot } = result.putOff;
      ctx.metrics.putOff.inc({ path: 'job', reason });
      // The job comes back with its turn in the rate limit's queue, or without one.
      if (rateSlot !== (data.rateSlot === true)) {
        const { rateSlot: _had, ...rest } = data;
        await job.updateData(rateSlot ? { ...rest, rateSlot } : rest);
      }
      await job.moveToDelayed(Date.now() + waitMs, token);
      throw new DelayedError();
    }
  }
}

export const deliverWebhook = { name: DELIVER_WEBHOOK_JOB, schema: DeliverJobData, handler };
