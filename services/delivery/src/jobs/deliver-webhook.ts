import { randomBytes } from 'node:crypto';
import { DelayedError, type Job } from 'bullmq';
import {
  DELIVER_WEBHOOK_JOB,
  DeliverJobData,
  QUEUE_WEBHOOK_DELIVER,
  deliverJobId,
  type WebhookChangedMessage,
  errorMessage,
} from '@herald/contract';
import { renderDeliveryRequest, signWebhook } from '@herald/payload';
import type { Logger } from '@herald/runtime';
import {
  activeSigningSecrets,
  disableWebhook,
  dropWebhookCall,
  isDbUnavailableError,
  type Db,
  type StoredEvent,
  type WebhookCallAttempt,
  type WebhookCallRecord,
  type WebhookCallStatus,
  type WebhookRecord,
} from '@herald/store';
import type { DeliveryLoaders } from '../delivery/loaders.js';
import type { HttpClient, SendResult } from '../delivery/http-client.js';
import type { InFlightLimiter } from '../delivery/in-flight.js';
import type { Lease } from '../delivery/lease.js';
import type { DeliveryMetrics } from '../delivery/metrics.js';
import { putOffUntilDatabaseReturns, writeUntilStored } from '../delivery/outage.js';
import { parseRetryAfter, retryDelayMs, type RetryPolicy } from '../delivery/schedule.js';
import { FirstAttempts } from '../delivery/first-attempts.js';
import type { Semaphore } from '../delivery/semaphore.js';
import { DELIVER_JOB_OPTIONS, type DeliverQueue, type NewCall } from './match-event.js';

export interface DeliverContext {
  db: Db;
  /** Batched reads of calls, webhooks and events (one query serves many jobs under load). */
  loaders: DeliveryLoaders;
  client: HttpClient;
  limiter: InFlightLimiter;
  /** The process's attempts in flight (DELIVERY_CONCURRENCY). */
  semaphore: Semaphore;
  deliverQueue: DeliverQueue;
  metrics: DeliveryMetrics;
  logger: Logger;
  siteId: string;
  userAgent: string;
  retry: RetryPolicy;
  /** How long a job waits when its webhook is at its in-flight limit. */
  inFlightWaitMs: number;
  /** This process's lease on the calls whose first attempts it holds. */
  lease: Lease;
  /** Whether the webhook is enabled as far as this process heard (the match index). */
  isWebhookEnabled: (webhookId: string) => boolean;
  /** Tells every process of a webhook change (the channel the API publishes on). */
  announce: (message: WebhookChangedMessage) => Promise<void>;
  /** True once the process is shutting down: writes stop waiting for a database that is away. */
  closing: () => boolean;
}

/** The status class label of an attempt (bounded). */
export function statusClass(result: SendResult): string {
  return result.kind === 'response' ? `${Math.floor(result.status / 100)}xx` : result.error;
}

/** Whether this job still has work to do, given the call's stored state. */
function isDue(call: WebhookCallRecord, data: DeliverJobData): boolean {
  if (data.resend) return true;
  if (data.retry === undefined) return call.status === 'pending';
  return call.status === 'rescheduled' && call.attemptedAutoRetriesCount < data.retry;
}

/** A fresh in-flight slot token for an attempt of `callId`. */
let attempts = 0;
const processTag = randomBytes(4).toString('hex');
const slotToken = (callId: string): string =>
  `${callId}:${processTag}:${(attempts++).toString(36)}`;

/** How long an attempt whose webhook is at its in-flight limit steps aside. */
const inFlightWait = (ctx: DeliverContext): number => ctx.inFlightWaitMs * (1 + Math.random());

/** A job of one call: a retry, a resend, or the sweeper's re-add. */
async function handler(
  ctx: DeliverContext,
  data: DeliverJobData,
  job: Job<DeliverJobData>,
  token: string | undefined,
): Promise<void> {
  // The in-flight limit comes first, so a job that must wait costs no database query.
  const slot = slotToken(data.callId);
  if (!(await ctx.limiter.acquire(data.webhookId, slot))) {
    // The webhook is at its in-flight limit: step aside (this frees the worker slot for other
    // webhooks) and come back later. Never worker.rateLimit(): that would pause the whole queue.
    await job.moveToDelayed(Date.now() + inFlightWait(ctx), token);
    throw new DelayedError();
  }
  try {
    await deliverHolding(ctx, data.webhookId, slot, () => deliver(ctx, data));
  } catch (error) {
    // Before anything was sent (an outcome write waits for the database itself).
    if (!isDbUnavailableError(error)) throw error;
    ctx.metrics.jobsWaitingForDatabase.inc({ queue: QUEUE_WEBHOOK_DELIVER });
    await putOffUntilDatabaseReturns(job, token);
  }
}

/**
 * The first attempts of new calls, in the process that matched them (the match worker adds
 * them): one queue hop less than a deliver job per call, which was most of what a delivery cost
 * in Redis and in latency. The calls are held by this process's lease until their outcome is
 * written: a call whose webhook is at its limit becomes a delayed deliver job and is let go; one
 * this process gives up on (Redis away, its lease not renewed) is let go as due, for the sweeper;
 * and if the process dies, its lease runs out and the sweeper takes its calls over.
 */
export function createFirstAttempts(ctx: DeliverContext): FirstAttempts<NewCall> {
  const ids = (calls: readonly NewCall[]): string[] => calls.map((call) => call.id);
  return new FirstAttempts<NewCall>({
    semaphore: ctx.semaphore,
    startable: () => ctx.lease.valid,
    acquire: (requests) => ctx.limiter.acquireMany(requests),
    release: (webhookId, token) => ctx.limiter.release(webhookId, token),
    token: (call) => slotToken(call.id),
    attempt: async (call) => {
      ctx.metrics.inFlight.inc();
      try {
        await deliverFirst(ctx, call);
      } finally {
        ctx.metrics.inFlight.dec();
      }
    },
    defer: async (calls) => {
      await ctx.deliverQueue.addBulk(
        calls.map(({ id: callId, webhookId }) => ({
          name: DELIVER_WEBHOOK_JOB,
          data: { callId, webhookId },
          opts: { ...DELIVER_JOB_OPTIONS, jobId: deliverJobId(callId), delay: inFlightWait(ctx) },
        })),
      );
      await ctx.lease.release(ids(calls), false);
    },
    queued: (count) => ctx.metrics.firstAttemptsQueued.set(count),
    abandon: (calls, error) => {
      ctx.logger.warn(
        { err: errorMessage(error), calls: calls.length },
        'first attempts not made here; the sweeper will re-enqueue the calls',
      );
      void ctx.lease.release(ids(calls), true);
    },
  });
}

/** Runs a delivery whose in-flight slot is taken, within the process's pool; frees the slot. */
async function deliverHolding(
  ctx: DeliverContext,
  webhookId: string,
  slot: string,
  run: () => Promise<void>,
): Promise<void> {
  try {
    await ctx.semaphore.run(async () => {
      ctx.metrics.inFlight.inc();
      try {
        await run();
      } finally {
        ctx.metrics.inFlight.dec();
      }
    });
  } finally {
    await ctx.limiter.release(webhookId, slot);
  }
}

/**
 * The first attempt of a call the match worker just created: the call (pending, no retry yet),
 * its event and its webhook (read by the statement that created the call, milliseconds ago) are
 * in hand, so nothing is read before rendering.
 */
async function deliverFirst(ctx: DeliverContext, call: NewCall): Promise<void> {
  const { webhook } = call;
  if (!webhook) return dropWebhookCall(ctx.db, call.id, 'the webhook was deleted');
  // Disabled or deleted since the call was made: the change already ended the call in Postgres
  // (and announced itself, which is how the index heard); this only keeps it from being sent.
  if (!webhook.enabled || !ctx.isWebhookEnabled(webhook.id)) {
    return dropWebhookCall(ctx.db, call.id, 'the webhook is disabled');
  }
  const pending = {
    id: call.id,
    status: 'pending' as const,
    nextRetryAt: null,
    attemptedAutoRetriesCount: 0,
  };
  await attempt(ctx, { callId: call.id, webhookId: call.webhookId }, pending, webhook, call.event);
}

async function deliver(ctx: DeliverContext, data: DeliverJobData): Promise<void> {
  const call = await ctx.loaders.calls.load(data.callId);
  if (!call || !isDue(call, data)) return;
  const [webhook, event] = await Promise.all([
    ctx.loaders.webhooks.load(call.webhookId),
    ctx.loaders.events.load(call.eventId),
  ]);
  if (!event) return dropWebhookCall(ctx.db, call.id, 'the event no longer exists');
  if (!webhook) return dropWebhookCall(ctx.db, call.id, 'the webhook was deleted');
  if (!webhook.enabled && !data.resend) {
    return dropWebhookCall(ctx.db, call.id, 'the webhook is disabled');
  }
  await attempt(ctx, data, call, webhook, event);
}

async function attempt(
  ctx: DeliverContext,
  data: DeliverJobData,
  call: Pick<WebhookCallRecord, 'id' | 'status' | 'nextRetryAt' | 'attemptedAutoRetriesCount'>,
  webhook: WebhookRecord,
  event: StoredEvent,
): Promise<void> {
  const retriesCount = data.retry ?? call.attemptedAutoRetriesCount;
  const sentAt = new Date();
  const { url, body, headers, redacted } = await renderDeliveryRequest(ctx.db, {
    webhook,
    event,
    callId: call.id,
    siteId: ctx.siteId,
    userAgent: ctx.userAgent,
    attemptedAutoRetriesCount: retriesCount,
    sign: (id, timestamp, signed) =>
      signWebhook(activeSigningSecrets(webhook, sentAt), id, timestamp, signed),
    now: sentAt,
    models: ctx.loaders.models.forEvent(event),
  });

  const started = performance.now();
  const result = await ctx.client.send(url, headers, body);
  const seconds = (performance.now() - started) / 1000;
  const klass = statusClass(result);
  ctx.metrics.deliveryDuration.observe({ status_class: klass }, seconds);

  const ok = result.kind === 'response' && result.status >= 200 && result.status < 300;
  const gone = result.kind === 'response' && result.status === 410;
  // The SSRF guard refused the address: a configuration error, not a transient one, so no retry
  // (a resend once SSRF_ALLOW_CIDRS or the URL changed still goes out).
  const refused = result.kind === 'error' && result.error === 'blocked';
  let status: Exclude<WebhookCallStatus, 'pending'>;
  let nextRetryAt: Date | null = null;
  let nextRetry: number | undefined;
  if (ok) status = 'success';
  else if (gone || refused) status = 'failed';
  else if (data.resend) {
    // A failed manual resend leaves the automatic plan as it was.
    status = call.status === 'rescheduled' ? 'rescheduled' : 'failed';
    nextRetryAt = call.nextRetryAt;
  } else if (webhook.autoRetry) {
    const retryAfter =
      result.kind === 'response' && (result.status === 429 || result.status === 503)
        ? parseRetryAfter(result.headers['retry-after'])
        : null;
    const delay = retryDelayMs(ctx.retry, retriesCount + 1, retryAfter);
    if (delay === null) status = 'failed';
    else {
      status = 'rescheduled';
      nextRetry = retriesCount + 1;
      nextRetryAt = new Date(Date.now() + delay);
    }
  } else status = 'failed';

  const failureReason =
    result.kind === 'error'
      ? refused
        ? `${result.reason} (refused by the SSRF guard; not retried)`
        : result.reason
      : ok
        ? null
        : result.status >= 300 && result.status < 400
          ? `HTTP ${result.status} (redirects are not followed)`
          : `HTTP ${result.status}`;
  const outcome: WebhookCallAttempt = {
    status,
    requestUrl: url,
    requestHeaders: redacted,
    requestPayload: body,
    responseStatus: result.kind === 'response' ? result.status : null,
    responseHeaders: result.kind === 'response' ? result.headers : null,
    responsePayload: result.kind === 'response' ? result.body : null,
    failureReason,
    attemptedAutoRetriesCount: retriesCount,
    lastSentAt: sentAt,
    nextRetryAt,
  };
  await writeUntilStored(() => ctx.loaders.attempts.write(call.id, outcome), ctx.closing);
  if (gone) {
    // Once this call's outcome is in (the disable ends the calls still waiting, and this one is
    // not), one statement disables the webhook and ends its waiting calls: from its commit no new
    // call is made (createWebhookCalls reads the webhook's row). Announced so every process's
    // index, and the first attempts queued in memory, hear of it now, not at the next reload.
    const reason = `the endpoint answered 410 Gone at ${sentAt.toISOString()}`;
    await writeUntilStored(
      () => disableWebhook(ctx.db, webhook.id, reason, 'the webhook was disabled (410 Gone)'),
      ctx.closing,
    );
    await ctx.announce({ id: webhook.id, change: 'updated' });
    ctx.logger.warn({ webhookId: webhook.id, callId: call.id }, 'webhook disabled: 410 Gone');
  }
  ctx.metrics.deliveries.inc({ outcome: status, status_class: klass });
  if (ok) ctx.metrics.endToEndLatency.observe((Date.now() - event.acceptedAt.getTime()) / 1000);

  if (nextRetry !== undefined && nextRetryAt) {
    await ctx.deliverQueue.add(
      DELIVER_WEBHOOK_JOB,
      { callId: call.id, webhookId: webhook.id, retry: nextRetry },
      {
        ...DELIVER_JOB_OPTIONS,
        jobId: deliverJobId(call.id, nextRetry),
        delay: Math.max(0, nextRetryAt.getTime() - Date.now()),
      },
    );
  }
  if (!ok) {
    ctx.logger.info(
      { callId: call.id, webhookId: webhook.id, status, statusClass: klass, reason: failureReason },
      'delivery attempt failed',
    );
  }
}

export const deliverWebhook = { name: DELIVER_WEBHOOK_JOB, schema: DeliverJobData, handler };
