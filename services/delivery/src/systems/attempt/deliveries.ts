import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, type DeliverJobData } from '@herald/contract';
import type { CallContent } from '@herald/payload';
import { enqueueDeliveries } from '@herald/runtime';
import { dropWebhookCall, type ReleasedLaneCall, type WebhookCallRecord } from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { NewCall } from '../../shared/calls.js';
import type { JobItemGate, JobItemResult } from '../background/bulk-jobs.js';
import type { Lanes } from '../flow/lanes.js';
import type { Limits, PutOff, RateReservation } from '../limits/limits.js';
import type { SystemResources } from '../resources.js';
import type { Attempts } from './attempt.js';
import type { Outcome } from './decide-outcome.js';
import { FirstAttempts } from './first-attempts.js';

/**
 * What a deliver job's call came to: done (sent, or nothing to send), waiting in its lane until
 * then (its batch window is open, or another attempt holds it), or put off by its webhook's rate
 * limit or open circuit.
 */
export type DeliverJobResult =
  { kind: 'done' } | { kind: 'wait'; until: Date } | { kind: 'put-off'; putOff: PutOff };

/**
 * `db` ends calls that can no longer go (their webhook or event gone); `deliverQueue` gets the
 * calls that must wait; `index` says whether a webhook is still enabled as far as this process
 * heard (`loaders` reads one it never heard of).
 */
export type DeliveriesDeps = Pick<
  SystemResources,
  'db' | 'loaders' | 'lease' | 'deliverQueue' | 'logger' | 'index'
> & {
  metrics: Pick<DeliveryMetrics, 'inFlight' | 'firstAttemptsQueued' | 'putOff' | 'flowClaims'>;
  limits: Limits;
  lanes: Lanes;
  attempts: Attempts;
};

/** Whether this job still has work to do, given the call's stored state. */
function isDue(call: WebhookCallRecord, data: DeliverJobData): boolean {
  if (data.resend) return true;
  if (data.retry === undefined) return call.status === 'pending';
  return call.status === 'rescheduled' && call.attemptedAutoRetriesCount < data.retry;
}

/**
 * The three ways to an attempt: a new call's first attempt in the process that matched it, a
 * deliver job (retries, resends, calls that waited, the sweeper's re-adds), and a bulk job's
 * item. Each takes its limits (Limits) and its lane's claim (Lanes), then makes the attempt
 * (Attempts) and starts the lane calls its outcome released.
 */
export class Deliveries {
  /**
   * The first attempts of new calls, in the process that matched them (the match worker adds
   * them): one queue hop less than a deliver job per call, which was most of what a delivery cost
   * in Redis and in latency. The calls are held by this process's lease until their outcome is
   * written: a call whose webhook is at its limit becomes a delayed deliver job and is let go;
   * one this process gives up on (Redis away, its lease not renewed) is let go as due, for the
   * sweeper; and if the process dies, its lease runs out and the sweeper takes its calls over.
   */
  readonly firstAttempts: FirstAttempts<NewCall>;

  constructor(private readonly deps: DeliveriesDeps) {
    const { limits, lease, metrics, logger } = deps;
    const ids = (calls: readonly NewCall[]): string[] => calls.map((call) => call.id);
    this.firstAttempts = new FirstAttempts<NewCall>({
      semaphore: limits.pool,
      // A call over its webhook's in-flight limit takes the next slot an attempt here frees;
      // only after this long (slots held elsewhere) does it become a delayed deliver job, which
      // polls.
      waitMs: limits.inFlightWaitMs,
      startable: () => lease.valid,
      acquire: (requests) => limits.inFlight.acquireMany(requests),
      release: (webhookId, token) => limits.inFlight.release(webhookId, token),
      token: (call) => limits.slotToken(call.id),
      attempt: async (call, answered) => {
        metrics.inFlight.inc();
        try {
          await this.#first(call, answered);
        } finally {
          metrics.inFlight.dec();
          lease.letGo([call.id]);
        }
      },
      defer: async (calls) => {
        await enqueueDeliveries(deps.deliverQueue, calls, () => limits.inFlightWait());
        await lease.release(ids(calls), false);
        lease.letGo(ids(calls));
      },
      queued: (count) => metrics.firstAttemptsQueued.set(count),
      abandon: (calls, error) => {
        logger.warn(
          { err: errorMessage(error), calls: calls.length },
          'first attempts not made here; the sweeper will re-enqueue the calls',
        );
        void lease.release(ids(calls), true);
        lease.letGo(ids(calls));
      },
    });
  }

  /** A deliver job's call, its in-flight slot `slot` taken: see DeliverJobResult. */
  deliverJob(data: DeliverJobData, slot: string): Promise<DeliverJobResult> {
    return this.deps.limits.holding(data.webhookId, slot, (answered) =>
      this.#deliver(data, answered),
    );
  }

  /**
   * An attempt a bulk job makes of one call (bulk_resend, or replay). A call already on its way
   * (pending or rescheduled: a first attempt or a retry is planned or in flight) is not sent, so a
   * job never doubles what the pipeline does; a replay's own new call (`newCall`, pending) is the
   * exception. The attempt waits for its webhook's rate limit, circuit and in-flight limit, as
   * any other, then is recorded with the job's trigger. Not sent ('stopped') when the gate says
   * the job is stopping while it waits, or, asked last, that it may no longer start.
   */
  async attemptForJob(
    item: { callId: string; newCall: boolean; trigger: 'bulk_resend' | 'replay' },
    { stopping, mayStart }: JobItemGate,
  ): Promise<JobItemResult> {
    const { loaders, limits, lanes, metrics } = this.deps;
    const call = await loaders.calls.load(item.callId);
    if (!call) return 'skipped';
    const due = item.newCall
      ? call.status === 'pending' && call.lastSentAt === null
      : call.status !== 'pending' && call.status !== 'rescheduled';
    if (!due) return 'skipped';
    const [webhook, event] = await Promise.all([
      loaders.webhooks.load(call.webhookId),
      call.testEvent ?? loaders.events.load(call.eventId),
    ]);
    if (!webhook || !event) return 'skipped';
    // What the call carries (several events when it coalesced or batched).
    const batch = call.lane === '';
    const content = (await lanes.contentOf(webhook, call.eventIds, event, batch)) ?? {
      event,
      entries: null,
    };
    // A slot of its in-flight limit and of the process's pool, then its rate limit and circuit,
    // checked once it holds them, right before it is sent (admitted earlier, a request that then
    // waited for the pool would start late, and another admitted meanwhile right beside it). A
    // wait longer than a moment is spent outside, holding nothing.
    let status = 'failed' as Outcome['status'] | 'stopped' | PutOff;
    for (let turn = false; ;) {
      const slot = limits.slotToken(call.id);
      while (!(await limits.inFlight.acquire(webhook.id, slot))) {
        if (stopping()) return 'stopped';
        // The job's item waits in memory, not as a job: look again soon.
        await sleep(10 + Math.random() * 40);
      }
      await limits.holding(webhook.id, slot, async (answered) => {
        const admission = await limits.admit(webhook, turn);
        if (!admission.send) {
          status = admission;
          return;
        }
        // Last: a job cancelled while this item waited sends nothing more.
        if (!(await mayStart())) {
          status = 'stopped';
          return;
        }
        // A replay's new call is a first attempt (retried on the webhook's schedule if it
        // fails); a call sent again is a resend (a failure leaves its plan as it was).
        const data = { callId: call.id, webhookId: webhook.id, resend: !item.newCall };
        const lane = call.lane !== null;
        const outcome = await this.#attempt(
          data,
          { ...call, lane, rate: admission.rate },
          webhook,
          content,
          item.trigger,
          answered,
        );
        status = outcome.status;
      });
      if (typeof status === 'string') break;
      metrics.putOff.inc({ path: 'bulk', reason: status.reason });
      turn = status.rateSlot;
      const waitMs = Math.min(status.waitMs, 1000);
      status = 'failed';
      if (stopping()) return 'stopped';
      await sleep(waitMs);
    }
    if (status === 'stopped') return 'stopped';
    return status === 'success' ? 'succeeded' : 'failed';
  }

  /**
   * The first attempt of a call the match worker just created (or an outcome released): the call
   * (pending, no retry yet), its event and its webhook (read by the statement that created the
   * call, milliseconds ago) are in hand, so nothing is read before rendering.
   */
  async #first(
    call: NewCall,
    /** Frees the call's in-flight slot once the endpoint answered. */
    answered?: () => void,
  ): Promise<void> {
    const { db, limits, lanes, lease, deliverQueue, metrics, loaders, index } = this.deps;
    let { webhook } = call;
    // Disabled or deleted since the call was made: the change already ended the call in Postgres
    // (and announced itself, which is how the index heard); this only keeps it from being sent.
    // The index is what this process heard, not the word on a webhook: one it never had (made
    // since its last read, the announcement not come, no event of it matched here, and this a
    // call another process's outcome released) is read again before the call is dropped.
    if (webhook?.enabled && !index.has(webhook.id)) {
      webhook = (await loaders.webhooks.load(webhook.id)) ?? null;
    }
    if (!webhook) return dropWebhookCall(db, call.id, 'the webhook was deleted');
    if (!webhook.enabled) return dropWebhookCall(db, call.id, 'the webhook is disabled');
    const admission = await limits.admit(webhook, false);
    if (!admission.send) {
      // Its rate limit or its open circuit: the call waits as a delayed job, no longer held here.
      metrics.putOff.inc({ path: 'first', reason: admission.reason });
      const delayed = { id: call.id, webhookId: call.webhookId, rateSlot: admission.rateSlot };
      await enqueueDeliveries(deliverQueue, [delayed], () => admission.waitMs);
      await lease.release([call.id], false);
      return;
    }
    let content: CallContent = { event: call.event, entries: null };
    if (call.placed && call.claimed) {
      metrics.flowClaims.inc({ state: 'go' });
      const carried = await lanes.contentOf(webhook, call.claimed, call.event, false);
      if (!carried) return;
      content = carried;
    } else if (call.placed) {
      const claimed = await lanes.claim(call.id, webhook, call.event);
      if (claimed.kind === 'go') content = claimed.content;
      else if (claimed.kind !== 'free') {
        if (claimed.kind === 'wait') {
          // Its window, or another attempt's claim: a job then, no longer held here.
          const delayMs = Math.max(0, claimed.until.getTime() - Date.now());
          await enqueueDeliveries(deliverQueue, [call], () => delayMs);
          await lease.release([call.id], false);
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
      rate: admission.rate,
    };
    const data = { callId: call.id, webhookId: call.webhookId };
    await this.#attempt(data, pending, webhook, content, undefined, answered);
  }

  async #deliver(data: DeliverJobData, answered: () => void): Promise<DeliverJobResult> {
    const { db, loaders, limits, lanes } = this.deps;
    const done = { kind: 'done' } as const;
    const call = await loaders.calls.load(data.callId);
    if (!call || !isDue(call, data)) return done;
    // A test call carries its event (POST /webhooks/:id/test); the others name a stored one.
    const [webhook, event] = await Promise.all([
      loaders.webhooks.load(call.webhookId),
      call.testEvent ?? loaders.events.load(call.eventId),
    ]);
    if (!event) {
      await dropWebhookCall(db, call.id, 'the event no longer exists');
      return done;
    }
    if (!webhook) {
      await dropWebhookCall(db, call.id, 'the webhook was deleted');
      return done;
    }
    // A disabled webhook can still be tested (before it is enabled again) or resent to.
    if (!webhook.enabled && !data.resend && !call.testEvent) {
      await dropWebhookCall(db, call.id, 'the webhook is disabled');
      return done;
    }
    // A resend or a test is someone asking now: it goes whatever the limits say.
    let rate: RateReservation | null = null;
    if (!data.resend && !call.testEvent) {
      const admission = await limits.admit(
        webhook,
        data.rateSlot === true,
        data.retry !== undefined,
      );
      if (!admission.send) return { kind: 'put-off', putOff: admission };
      rate = admission.rate;
    }
    let content: CallContent = { event, entries: null };
    if (call.lane !== null && !data.resend) {
      // Its lane decides whether it goes now (after the limits: a call waiting for them still
      // takes newer events).
      const claimed = await lanes.claim(call.id, webhook, event);
      if (claimed.kind === 'wait') return { kind: 'wait', until: claimed.until };
      if (claimed.kind === 'stop') return done;
      if (claimed.kind === 'go') content = claimed.content;
    } else if (call.eventIds.length > 1 || call.lane === '') {
      // A resend sends what the call carries.
      content = (await lanes.contentOf(webhook, call.eventIds, event, call.lane === '')) ?? content;
    }
    const lane = call.lane !== null;
    const test = call.testEvent !== null;
    const attempted = { ...call, test, lane, rate };
    await this.#attempt(data, attempted, webhook, content, undefined, answered);
    return done;
  }

  /**
   * Makes the attempt, then starts the lane calls its outcome released here (Lanes.takeReleased).
   * Lost (Redis away, a crash), a released call is taken over or re-enqueued by the sweeper.
   */
  async #attempt(...args: Parameters<Attempts['make']>): Promise<Outcome> {
    const { outcome, released } = await this.deps.attempts.make(...args);
    if (released.length > 0) await this.#startReleased(released);
    return outcome;
  }

  async #startReleased(released: readonly ReleasedLaneCall[]): Promise<void> {
    const calls = await this.deps.lanes.takeReleased(released).catch(() => []);
    this.firstAttempts.add(calls);
  }
}
