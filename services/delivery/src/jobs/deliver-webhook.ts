import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, type Job } from 'bullmq';
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import {
  DELIVER_WEBHOOK_JOB,
  DeliverJobData,
  QUEUE_WEBHOOK_DELIVER,
  type WebhookChangedMessage,
  errorMessage,
} from '@herald/contract';
import {
  callContent,
  renderDeliveryRequest,
  signWebhook,
  type CallContent,
  type DeliveryRequest,
} from '@herald/payload';
import {
  contextOf,
  enqueueDeliveries,
  enqueueRetry,
  traceparentOf,
  tracer,
  type DeliverQueue,
  type Logger,
} from '@herald/runtime';
import {
  activeSigningSecrets,
  claimFlowCall,
  disableWebhook,
  dropWebhookCall,
  isDbUnavailableError,
  isSequential,
  type AttemptTrigger,
  type BulkItemOutcome,
  type Db,
  type StoredEvent,
  type WebhookCallRecord,
  type WebhookRecord,
} from '@herald/store';
import {
  decideOutcome,
  statusClass,
  tripsCircuit,
  type Outcome,
} from '../systems/attempt/decide-outcome.js';
import type { DeliveryLoaders } from '../shared/loaders.js';
import type { HttpClient, SendResult } from '../systems/attempt/http-client.js';
import type { InFlightSlots, RateTurns } from '../systems/limits/coordination.js';
import type { Lease } from '../systems/recovery/lease.js';
import type { DeliveryMetrics } from '../metrics.js';
import { putOffUntilDatabaseReturns, writeUntilStored } from '../shared/outage.js';
import type { RetryPolicy } from '../systems/attempt/schedule.js';
import type { Circuits } from '../systems/limits/circuits.js';
import { FirstAttempts } from '../systems/attempt/first-attempts.js';
import type { Semaphore } from '../systems/limits/semaphore.js';

export interface DeliverContext {
  db: Db;
  /** Batched reads of calls, webhooks and events (one query serves many jobs under load). */
  loaders: DeliveryLoaders;
  client: HttpClient;
  limiter: InFlightSlots;
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
  /** The webhooks' circuit breakers: whether an attempt may go now. */
  circuits: Circuits;
  /** The webhooks' rate limits (delivery_policy.rate_limit_per_second), across processes. */
  rateLimiter: RateTurns;
  /** Whether the webhook is enabled as far as this process heard (the match index). */
  isWebhookEnabled: (webhookId: string) => boolean;
  /** Tells every process of a webhook change (the channel the API publishes on). */
  announce: (message: WebhookChangedMessage) => Promise<void>;
  /** True once the process is shutting down: writes stop waiting for a database that is away. */
  closing: () => boolean;
  /**
   * Flow control: how long an attempt's claim of a lane call keeps another attempt of it waiting
   * (longer than any attempt lasts; a dead process's claim lapses so).
   */
  claimBusyMs: number;
}

/** Whether this job still has work to do, given the call's stored state. */
function isDue(call: WebhookCallRecord, data: DeliverJobData): boolean {
  if (data.resend) return true;
  if (data.retry === undefined) return call.status === 'pending';
  return call.status === 'rescheduled' && call.attemptedAutoRetriesCount < data.retry;
}

/** A call the match worker just created, with its event and its webhook as read then. */
export interface NewCall {
  id: string;
  webhookId: string;
  event: StoredEvent;
  /** null: deleted meanwhile. */
  webhook: WebhookRecord | null;
  /** Placed in a lane (flow control): its attempt claims it first (claimFlowCall)… */
  placed: boolean;
  /**
   * …unless the outcome that released it claimed it already (recordFlowOutcomes): then, the
   * events it carries.
   */
  claimed: readonly string[] | null;
}

/** A fresh in-flight slot token for an attempt of `callId`. */
let attempts = 0;
const processTag = randomBytes(4).toString('hex');
const slotToken = (callId: string): string =>
  `${callId}:${processTag}:${(attempts++).toString(36)}`;

/**
 * The longest wait for a rate limit's turn spent in the process (holding the attempt's in-flight
 * slot) rather than as a delayed job, whose promotion and pickup take tens of milliseconds.
 */
const RATE_WAIT_HERE_MS = 300;

/** Why an attempt waits, how long, and whether it then has its turn in the rate limit's queue. */
type PutOff = { send: false; waitMs: number; reason: 'rate_limit' | 'circuit'; rateSlot: boolean };

/**
 * Whether an attempt of `webhook` may go now: its rate limit first (`rateSlot`: the call waited
 * for its turn), then its circuit breaker.
 */
async function admit(
  ctx: DeliverContext,
  webhook: WebhookRecord,
  rateSlot: boolean,
  /** An auto retry: its circuit is read afresh (see Circuits). */
  retry = false,
): Promise<{ send: true } | PutOff> {
  const perSecond = webhook.deliveryPolicy.rate_limit_per_second;
  for (let hasTurn = rateSlot; perSecond;) {
    const { waitMs, turn } = await ctx.rateLimiter.admit(webhook.id, perSecond, hasTurn);
    if (waitMs === 0) break;
    // A turn soon is waited for here: a delayed job's round trip takes longer than that.
    if (waitMs > RATE_WAIT_HERE_MS) {
      return { send: false, waitMs, reason: 'rate_limit', rateSlot: turn };
    }
    await sleep(waitMs);
    hasTurn = turn;
  }
  const circuit = await ctx.circuits.admit(webhook.id, { fresh: retry });
  if (circuit.send) return circuit;
  return { send: false, waitMs: circuit.waitMs, reason: 'circuit', rateSlot: false };
}

/**
 * A lane call's claim said wait: its batch window is open, or another attempt holds it. The job
 * comes back then (a parked call's job just ends: the outcome before it releases it).
 */
class FlowWaitError extends Error {
  constructor(readonly until: Date) {
    super('the call waits in its lane');
    this.name = 'FlowWaitError';
  }
}

/** A deliver job's call must wait (rate limit, open circuit): the job comes back later. */
class PutOffError extends Error {
  constructor(readonly putOff: PutOff) {
    super(`the call waits for its webhook's ${putOff.reason.replace('_', ' ')}`);
    this.name = 'PutOffError';
  }
}

/** How long an attempt whose webhook is at its in-flight limit steps aside. */
// Whole milliseconds: BullMQ on Postgres keeps times in bigint columns.
const inFlightWait = (ctx: DeliverContext): number =>
  Math.ceil(ctx.inFlightWaitMs * (1 + Math.random()));

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
    await deliverHolding(ctx, data.webhookId, slot, (answered) => deliver(ctx, data, answered));
  } catch (error) {
    if (error instanceof FlowWaitError) {
      await job.moveToDelayed(Math.max(Date.now(), error.until.getTime()), token);
      throw new DelayedError();
    }
    if (error instanceof PutOffError) {
      const { waitMs, reason, rateSlot } = error.putOff;
      ctx.metrics.putOff.inc({ path: 'job', reason });
      // The job comes back with its turn in the rate limit's queue, or without one.
      if (rateSlot !== (data.rateSlot === true)) {
        const { rateSlot: _had, ...rest } = data;
        await job.updateData(rateSlot ? { ...rest, rateSlot } : rest);
      }
      await job.moveToDelayed(Date.now() + waitMs, token);
      throw new DelayedError();
    }
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
    // A call over its webhook's in-flight limit takes the next slot an attempt here frees; only
    // after this long (slots held elsewhere) does it become a delayed deliver job, which polls.
    waitMs: ctx.inFlightWaitMs,
    startable: () => ctx.lease.valid,
    acquire: (requests) => ctx.limiter.acquireMany(requests),
    release: (webhookId, token) => ctx.limiter.release(webhookId, token),
    token: (call) => slotToken(call.id),
    attempt: async (call, answered) => {
      ctx.metrics.inFlight.inc();
      try {
        await deliverFirst(ctx, call, answered);
      } finally {
        ctx.metrics.inFlight.dec();
        ctx.lease.letGo([call.id]);
      }
    },
    defer: async (calls) => {
      await enqueueDeliveries(ctx.deliverQueue, calls, () => inFlightWait(ctx));
      await ctx.lease.release(ids(calls), false);
      ctx.lease.letGo(ids(calls));
    },
    queued: (count) => ctx.metrics.firstAttemptsQueued.set(count),
    abandon: (calls, error) => {
      ctx.logger.warn(
        { err: errorMessage(error), calls: calls.length },
        'first attempts not made here; the sweeper will re-enqueue the calls',
      );
      void ctx.lease.release(ids(calls), true);
      ctx.lease.letGo(ids(calls));
    },
  });
}

/**
 * Runs a delivery whose in-flight slot is taken, within the process's pool; frees the slot once
 * the endpoint has answered (`run` calls `answered`: the slot counts requests in flight, not the
 * outcome's write), or when `run` ends.
 */
async function deliverHolding(
  ctx: DeliverContext,
  webhookId: string,
  slot: string,
  run: (answered: () => void) => Promise<void>,
): Promise<void> {
  let freed: Promise<void> | undefined;
  const free = (): Promise<void> => (freed ??= ctx.limiter.release(webhookId, slot));
  try {
    await ctx.semaphore.run(async () => {
      ctx.metrics.inFlight.inc();
      try {
        await run(() => void free().catch(() => undefined));
      } finally {
        ctx.metrics.inFlight.dec();
      }
    });
  } finally {
    await free();
  }
}

/**
 * The first attempt of a call the match worker just created: the call (pending, no retry yet),
 * its event and its webhook (read by the statement that created the call, milliseconds ago) are
 * in hand, so nothing is read before rendering.
 */
async function deliverFirst(
  ctx: DeliverContext,
  call: NewCall,
  /** Frees the call's in-flight slot once the endpoint answered. */
  answered?: () => void,
): Promise<void> {
  const { webhook } = call;
  if (!webhook) return dropWebhookCall(ctx.db, call.id, 'the webhook was deleted');
  // Disabled or deleted since the call was made: the change already ended the call in Postgres
  // (and announced itself, which is how the index heard); this only keeps it from being sent.
  if (!webhook.enabled || !ctx.isWebhookEnabled(webhook.id)) {
    return dropWebhookCall(ctx.db, call.id, 'the webhook is disabled');
  }
  const admission = await admit(ctx, webhook, false);
  if (!admission.send) {
    // Its rate limit or its open circuit: the call waits as a delayed job, no longer held here.
    ctx.metrics.putOff.inc({ path: 'first', reason: admission.reason });
    const delayed = { id: call.id, webhookId: call.webhookId, rateSlot: admission.rateSlot };
    await enqueueDeliveries(ctx.deliverQueue, [delayed], () => admission.waitMs);
    await ctx.lease.release([call.id], false);
    return;
  }
  let content: CallContent = { event: call.event, entries: null };
  if (call.placed && call.claimed) {
    ctx.metrics.flowClaims.inc({ state: 'go' });
    const carried = await contentOf(ctx, webhook, call.claimed, call.event, false);
    if (!carried) return;
    content = carried;
  } else if (call.placed) {
    const claimed = await claim(ctx, call.id, webhook, call.event);
    if (claimed.kind === 'go') content = claimed.content;
    else if (claimed.kind !== 'free') {
      if (claimed.kind === 'wait') {
        // Its window, or another attempt's claim: a job then, no longer held here.
        const delayMs = Math.max(0, claimed.until.getTime() - Date.now());
        await enqueueDeliveries(ctx.deliverQueue, [call], () => delayMs);
        await ctx.lease.release([call.id], false);
      }
      return;
    }
  }
  const pending = {
    id: call.id,
    status: 'pending' as const,
    nextRetryAt: null,
    attemptedAutoRetriesCount: 0,
    lane: call.placed,
  };
  const data = { callId: call.id, webhookId: call.webhookId };
  await attempt(ctx, data, pending, webhook, content, undefined, answered);
}

/** What a lane call's claim came to: it goes with this content, waits until then, or not. */
type Claimed =
  | { kind: 'go'; content: CallContent }
  | { kind: 'wait'; until: Date }
  | { kind: 'stop' }
  | { kind: 'free' };

/**
 * Claims a lane call for its attempt (claimFlowCall) and reads the events it carries. Parked
 * (an earlier call of its lane is unfinished) or finished: nothing to do here (the release by
 * that earlier call's outcome enqueues it).
 */
async function claim(
  ctx: DeliverContext,
  callId: string,
  webhook: WebhookRecord,
  known?: StoredEvent,
): Promise<Claimed> {
  const claimed = await claimFlowCall(ctx.db, callId, isSequential(webhook), ctx.claimBusyMs);
  ctx.metrics.flowClaims.inc({ state: claimed.state });
  switch (claimed.state) {
    case 'go': {
      const content = await contentOf(ctx, webhook, claimed.eventIds, known, claimed.batch);
      return content ? { kind: 'go', content } : { kind: 'stop' };
    }
    case 'busy':
    case 'window':
      return { kind: 'wait', until: claimed.waitUntil };
    case 'free':
      return { kind: 'free' };
    case 'parked':
    case 'done':
      return { kind: 'stop' };
  }
}

/**
 * What a call carrying `eventIds` sends (callContent); null when none of them is stored. `batch`:
 * the call is a batch (its lane says so, whatever the webhook's settings now: a batch made
 * before a PUT removed `batch` still lists its entries).
 */
async function contentOf(
  ctx: DeliverContext,
  webhook: WebhookRecord,
  eventIds: readonly string[],
  known: StoredEvent | undefined,
  batch: boolean,
): Promise<CallContent | null> {
  const settings = { coalesceEvents: webhook.coalesceEvents, batch: batch ? true : null };
  if (known && eventIds.length === 1 && eventIds[0] === known.id) {
    return callContent(settings, [known]);
  }
  const events = await Promise.all(
    eventIds.map((id) => (id === known?.id ? Promise.resolve(known) : ctx.loaders.events.load(id))),
  );
  const found = events.filter(
    (event): event is StoredEvent => event !== null && event !== undefined,
  );
  return found.length > 0 ? callContent(settings, found) : null;
}

async function deliver(
  ctx: DeliverContext,
  data: DeliverJobData,
  answered: () => void,
): Promise<void> {
  const call = await ctx.loaders.calls.load(data.callId);
  if (!call || !isDue(call, data)) return;
  // A test call carries its event (POST /webhooks/:id/test); the others name a stored one.
  const [webhook, event] = await Promise.all([
    ctx.loaders.webhooks.load(call.webhookId),
    call.testEvent ?? ctx.loaders.events.load(call.eventId),
  ]);
  if (!event) return dropWebhookCall(ctx.db, call.id, 'the event no longer exists');
  if (!webhook) return dropWebhookCall(ctx.db, call.id, 'the webhook was deleted');
  // A disabled webhook can still be tested (before it is enabled again) or resent to.
  if (!webhook.enabled && !data.resend && !call.testEvent) {
    return dropWebhookCall(ctx.db, call.id, 'the webhook is disabled');
  }
  // A resend or a test is someone asking now: it goes whatever the limits say.
  if (!data.resend && !call.testEvent) {
    const admission = await admit(ctx, webhook, data.rateSlot === true, data.retry !== undefined);
    if (!admission.send) throw new PutOffError(admission);
  }
  let content: CallContent = { event, entries: null };
  if (call.lane !== null && !data.resend) {
    // Its lane decides whether it goes now (after the limits: a call waiting for them still
    // takes newer events).
    const claimed = await claim(ctx, call.id, webhook, event);
    if (claimed.kind === 'wait') throw new FlowWaitError(claimed.until);
    if (claimed.kind === 'stop') return;
    if (claimed.kind === 'go') content = claimed.content;
  } else if (call.eventIds.length > 1 || call.lane === '') {
    // A resend sends what the call carries.
    content = (await contentOf(ctx, webhook, call.eventIds, event, call.lane === '')) ?? content;
  }
  const lane = call.lane !== null;
  const test = call.testEvent !== null;
  await attempt(ctx, data, { ...call, test, lane }, webhook, content, undefined, answered);
}

/** Sends one attempt of a call, then records what it led to (decideOutcome, applyOutcome). */
async function attempt(
  ctx: DeliverContext,
  data: DeliverJobData,
  call: Pick<WebhookCallRecord, 'id' | 'status' | 'nextRetryAt' | 'attemptedAutoRetriesCount'> & {
    /** A test call: sent once, never retried automatically. */
    test?: boolean;
    /** In a lane (flow control): its final outcome releases the next call of the lane. */
    lane: boolean;
  },
  webhook: WebhookRecord,
  content: CallContent,
  /** A bulk job's attempt (its trigger); otherwise the job data and the call say which. */
  jobTrigger?: 'bulk_resend' | 'replay',
  /** Hears that the endpoint answered (or the request failed), before the outcome is written. */
  answered?: () => void,
): Promise<Outcome> {
  const trigger = jobTrigger
    ? jobTrigger
    : data.resend
      ? ('resend' as const)
      : call.test
        ? ('test' as const)
        : data.retry
          ? ('retry' as const)
          : ('first' as const);
  // The attempt's span continues its event's trace (a call carrying several: the latest one's);
  // the request carries its traceparent unless the webhook opts out (docs/operations.md, Traces).
  const span = tracer().startSpan(
    'herald.attempt',
    { kind: SpanKind.CLIENT },
    contextOf(content.event.traceparent),
  );
  try {
    const outcome = await attemptTraced(ctx, data, call, webhook, content, trigger, span, answered);
    if (span.isRecording()) endAttemptSpan(span, outcome);
    return outcome;
  } catch (error) {
    if (span.isRecording()) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'the attempt did not complete' });
      span.end();
    }
    throw error;
  }
}

/** Ends an attempt's span with its outcome (success, rescheduled, failed). */
function endAttemptSpan(span: Span, outcome: Outcome): void {
  span.setAttribute('herald.attempt.outcome', outcome.status);
  if (outcome.status !== 'success') {
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.status });
  }
  span.end();
}

/** attempt, within its span. */
async function attemptTraced(
  ctx: DeliverContext,
  data: DeliverJobData,
  call: Parameters<typeof attempt>[2],
  webhook: WebhookRecord,
  content: CallContent,
  trigger: AttemptTrigger,
  span: Span,
  answered: (() => void) | undefined,
): Promise<Outcome> {
  const retriesCount = data.retry ?? call.attemptedAutoRetriesCount;
  const sentAt = new Date();
  const { event, entries } = content;
  if (span.isRecording()) {
    span.setAttributes({
      'herald.webhook.id': webhook.id,
      'herald.webhook_call.id': call.id,
      'herald.event.id': event.id,
      'herald.event.type': `${event.entityType}.${event.eventType}`,
      'herald.attempt.number': retriesCount + 1,
      'herald.attempt.trigger': trigger,
      'http.request.method': 'POST',
    });
  }
  const request = await renderDeliveryRequest(ctx.db, {
    webhook,
    event,
    entries,
    callId: call.id,
    siteId: ctx.siteId,
    userAgent: ctx.userAgent,
    attemptedAutoRetriesCount: retriesCount,
    sign: (id, timestamp, signed) =>
      signWebhook(activeSigningSecrets(webhook, sentAt), id, timestamp, signed),
    now: sentAt,
    models: ctx.loaders.models.forEvent(event),
    traceparent: webhook.traceContext ? traceparentOf(span) : null,
  });

  // A rate-limited request counts its spacing from now if it starts later than it was admitted
  // (told alongside the request, not before it).
  const perSecond = webhook.deliveryPolicy.rate_limit_per_second;
  const bulk = trigger === 'bulk_resend' || trigger === 'replay';
  if (perSecond && !call.test && (bulk || !data.resend)) {
    ctx.rateLimiter.started(webhook.id, perSecond).catch((error: unknown) => {
      ctx.logger.warn({ err: errorMessage(error), webhookId: webhook.id }, 'rate limit not told');
    });
  }
  const started = performance.now();
  const result = await ctx.client.send(request.url, request.headers, request.body);
  answered?.();
  if (span.isRecording()) {
    if (result.kind === 'response') span.setAttribute('http.response.status_code', result.status);
    else span.setAttribute('error.type', result.error);
  }
  const seconds = (performance.now() - started) / 1000;
  ctx.metrics.deliveryDuration.observe({ status_class: statusClass(result) }, seconds);

  const outcome = decideOutcome(
    result,
    {
      status: call.status,
      nextRetryAt: call.nextRetryAt,
      retriesCount,
      resend: data.resend === true,
      autoRetry: webhook.autoRetry && !call.test,
    },
    { retry: ctx.retry, now: Date.now(), random: Math.random },
  );
  const sent = {
    callId: call.id,
    lane: call.lane,
    webhook,
    event,
    retriesCount,
    trigger,
    sentAt,
    durationMs: seconds * 1000,
    request,
    result,
  };
  await applyOutcome(ctx, outcome, sent);
  return outcome;
}

/** An attempt made: what was sent, and what came back. */
interface SentAttempt {
  callId: string;
  /** A lane call: see attempt. */
  lane: boolean;
  webhook: WebhookRecord;
  event: StoredEvent;
  /** Auto retries made before this attempt. */
  retriesCount: number;
  trigger: AttemptTrigger;
  sentAt: Date;
  durationMs: number;
  request: DeliveryRequest;
  result: SendResult;
}

/**
 * Carries an attempt's outcome out: stores it (waiting for a database that is away: the request
 * was sent, so sending it again would deliver it twice), disables a webhook that answered 410,
 * counts it, schedules the retry and logs a failure.
 */
async function applyOutcome(
  ctx: DeliverContext,
  outcome: Outcome,
  sent: SentAttempt,
): Promise<void> {
  const { callId, webhook, event, sentAt, request, result } = sent;
  const response = result.kind === 'response' ? result : null;
  await writeUntilStored(
    () =>
      ctx.loaders.attempts.write(callId, {
        webhookId: webhook.id,
        lane: sent.lane,
        status: outcome.status,
        trigger: sent.trigger,
        durationMs: sent.durationMs,
        tripsCircuit: tripsCircuit(result),
        requestUrl: request.logged.url,
        requestHeaders: request.logged.headers,
        requestPayload: request.body,
        responseStatus: response?.status ?? null,
        responseHeaders: response?.headers ?? null,
        responsePayload: response?.body ?? null,
        failureReason: outcome.failureReason,
        attemptedAutoRetriesCount: sent.retriesCount,
        lastSentAt: sentAt,
        nextRetryAt: outcome.nextRetryAt,
      }),
    ctx.closing,
  );
  if (outcome.kind === 'gone') {
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
    ctx.logger.warn({ webhookId: webhook.id, callId }, 'webhook disabled: 410 Gone');
  }
  const klass = statusClass(result);
  ctx.metrics.deliveries.inc({ outcome: outcome.status, status_class: klass });
  ctx.metrics.attempts.inc({
    trigger: sent.trigger,
    result: outcome.kind === 'succeeded' ? 'success' : 'failure',
  });
  if (outcome.kind === 'succeeded') {
    ctx.metrics.endToEndLatency.observe(
      { trigger: sent.trigger },
      (Date.now() - event.acceptedAt.getTime()) / 1000,
    );
    return;
  }
  if (outcome.kind === 'retry') {
    // Due at nextRetryAt, however long the write took.
    const delayMs = Math.max(0, outcome.nextRetryAt.getTime() - Date.now());
    await enqueueRetry(
      ctx.deliverQueue,
      { id: callId, webhookId: webhook.id },
      outcome.retry,
      delayMs,
    );
  }
  ctx.logger.info(
    {
      callId,
      webhookId: webhook.id,
      status: outcome.status,
      statusClass: klass,
      reason: outcome.failureReason,
    },
    'delivery attempt failed',
  );
}

export const deliverWebhook = { name: DELIVER_WEBHOOK_JOB, schema: DeliverJobData, handler };

/**
 * What a bulk job's item came to: sent and succeeded or not, skipped (not sent: its call is on
 * its way, or it, its webhook or its event is gone), or stopped (not sent: the job is stopping).
 */
export type JobItemResult = BulkItemOutcome | 'stopped';

/** What lets a bulk job's item go: see attemptForJob. */
export interface JobItemGate {
  /** True once the job is stopping here (the process stops, its lease is lost): give up waiting. */
  stopping: () => boolean;
  /** Asked just before the request is sent: false when the job was cancelled meanwhile. */
  mayStart: () => Promise<boolean>;
}

/**
 * An attempt a bulk job makes of one call (bulk_resend, or replay). A call already on its way
 * (pending or rescheduled: a first attempt or a retry is planned or in flight) is not sent, so a
 * job never doubles what the pipeline does; a replay's own new call (`newCall`, pending) is the
 * exception. The attempt waits for its webhook's rate limit, circuit and in-flight limit, as any
 * other, then is recorded with the job's trigger. Not sent ('stopped') when the gate says the
 * job is stopping while it waits, or, asked last, that it may no longer start.
 */
export async function attemptForJob(
  ctx: DeliverContext,
  item: { callId: string; newCall: boolean; trigger: 'bulk_resend' | 'replay' },
  { stopping, mayStart }: JobItemGate,
): Promise<JobItemResult> {
  const call = await ctx.loaders.calls.load(item.callId);
  if (!call) return 'skipped';
  const due = item.newCall
    ? call.status === 'pending' && call.lastSentAt === null
    : call.status !== 'pending' && call.status !== 'rescheduled';
  if (!due) return 'skipped';
  const [webhook, event] = await Promise.all([
    ctx.loaders.webhooks.load(call.webhookId),
    call.testEvent ?? ctx.loaders.events.load(call.eventId),
  ]);
  if (!webhook || !event) return 'skipped';
  // What the call carries (several events when it coalesced or batched).
  const batch = call.lane === '';
  const content = (await contentOf(ctx, webhook, call.eventIds, event, batch)) ?? {
    event,
    entries: null,
  };
  // A slot of its in-flight limit and of the process's pool, then its rate limit and circuit,
  // checked once it holds them, right before it is sent (admitted earlier, a request that then
  // waited for the pool would start late, and another admitted meanwhile right beside it). A
  // wait longer than a moment is spent outside, holding nothing.
  let status = 'failed' as Outcome['status'] | 'stopped' | PutOff;
  for (let turn = false; ;) {
    const slot = slotToken(call.id);
    while (!(await ctx.limiter.acquire(webhook.id, slot))) {
      if (stopping()) return 'stopped';
      // The job's item waits in memory, not as a job: look again soon.
      await sleep(10 + Math.random() * 40);
    }
    await deliverHolding(ctx, webhook.id, slot, async (answered) => {
      const admission = await admit(ctx, webhook, turn);
      if (!admission.send) {
        status = admission;
        return;
      }
      // Last: a job cancelled while this item waited sends nothing more.
      if (!(await mayStart())) {
        status = 'stopped';
        return;
      }
      // A replay's new call is a first attempt (retried on the webhook's schedule if it fails);
      // a call sent again is a resend (a failure leaves its plan as it was).
      const data = { callId: call.id, webhookId: webhook.id, resend: !item.newCall };
      const lane = call.lane !== null;
      const outcome = await attempt(
        ctx,
        data,
        { ...call, lane },
        webhook,
        content,
        item.trigger,
        answered,
      );
      status = outcome.status;
    });
    if (typeof status === 'string') break;
    ctx.metrics.putOff.inc({ path: 'bulk', reason: status.reason });
    turn = status.rateSlot;
    const waitMs = Math.min(status.waitMs, 1000);
    status = 'failed';
    if (stopping()) return 'stopped';
    await sleep(waitMs);
  }
  if (status === 'stopped') return 'stopped';
  return status === 'success' ? 'succeeded' : 'failed';
}
