import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '@herald/contract';
import type { Logger } from '@herald/runtime';
import type { WebhookRecord } from '@herald/store';
import type { DeliveryMetrics } from '../../metrics.js';
import type { DeliverySettings } from '../../settings.js';
import type { SystemResources } from '../resources.js';
import { Circuits } from './circuits.js';
import { deliveryCoordination, type InFlightSlots, type RateTurns } from './coordination.js';
import { KeptSlots, keptSlotsSettings } from './kept-slots.js';
import { AttemptRollups } from './rollups.js';
import { intervalUs } from './rate-limit.js';
import { Semaphore } from './semaphore.js';

/** How often a delivery process writes its attempts' stats rollups (AttemptRollups). */
const ROLLUP_INTERVAL_MS = 250;

/**
 * The longest wait for a rate limit's turn spent in the process (holding the attempt's in-flight
 * slot) rather than as a delayed job, whose promotion and pickup take tens of milliseconds.
 */
const RATE_WAIT_HERE_MS = 300;

/**
 * How far ahead a request reserves its slot: an interval (at least this, at most
 * RATE_WAIT_HERE_MS). Few slots are reserved at once, so few can pass together while their
 * process pauses; a call further from its turn asks again half of that before it.
 */
const RATE_RESERVE_MIN_MS = 20;

/** How many webhooks' last starts are kept before those over a second old are let go. */
const LAST_STARTS_KEPT = 1000;

/** The process's monotonic clock, in milliseconds. */
const now = (): number => performance.now();

/** A request's reserved slot in its webhook's rate limit (RateLimiter.admit). */
export interface RateReservation {
  webhookId: string;
  /** The slot, on the limit's clock (µs), and the webhook's spacing (µs). */
  slotUs: number;
  intervalUs: number;
  /** When the request was due to start (performance.now()). */
  dueAt: number;
}

/** Why an attempt waits, how long, and whether it then has its turn in the rate limit's queue. */
export type PutOff = {
  send: false;
  waitMs: number;
  reason: 'rate_limit' | 'circuit';
  rateSlot: boolean;
};

/** A fresh in-flight slot token for an attempt of `callId`. */
let attempts = 0;
const processTag = randomBytes(4).toString('hex');

export interface LimitsDeps {
  /** Each webhook's in-flight slots, across processes. */
  inFlight: InFlightSlots;
  /** Each webhook's rate limit (delivery_policy.rate_limit_per_second), across processes. */
  rate: RateTurns;
  /** The webhooks' circuit breakers: whether an attempt may go now. */
  circuits: Circuits;
  /** Where the attempts' stats go, which the circuits follow. */
  rollups: AttemptRollups;
  /** The process's attempts in flight (DELIVERY_CONCURRENCY). */
  pool: Semaphore;
  /** How long an attempt whose webhook is at its in-flight limit steps aside (at least). */
  inFlightWaitMs: number;
  metrics: Pick<DeliveryMetrics, 'inFlight'>;
  logger: Logger;
}

/**
 * Every limit an attempt goes through, in one place: the webhook's in-flight slots, the process's
 * pool, the webhook's rate limit and its circuit breaker.
 */
export class Limits {
  /** When this process last started a rate-limited request, by webhook (untilRateSlot). */
  readonly #lastStart = new Map<string, number>();

  constructor(private readonly deps: LimitsDeps) {}

  get inFlight(): InFlightSlots {
    return this.deps.inFlight;
  }

  get pool(): Semaphore {
    return this.deps.pool;
  }

  get rollups(): AttemptRollups {
    return this.deps.rollups;
  }

  get inFlightWaitMs(): number {
    return this.deps.inFlightWaitMs;
  }

  /** A fresh in-flight slot token for an attempt of `callId`. */
  slotToken(callId: string): string {
    return `${callId}:${processTag}:${(attempts++).toString(36)}`;
  }

  /** How long an attempt whose webhook is at its in-flight limit steps aside. */
  // Whole milliseconds: BullMQ on Postgres keeps times in bigint columns.
  inFlightWait(): number {
    return Math.ceil(this.deps.inFlightWaitMs * (1 + Math.random()));
  }

  /**
   * Whether an attempt of `webhook` may go now: its rate limit first (`rateSlot`: the call waited
   * for its turn), then its circuit breaker. A rate-limited request goes in the slot it reserved
   * (`rate`): the attempt waits for it right before sending (untilRateSlot).
   */
  async admit(
    webhook: WebhookRecord,
    rateSlot: boolean,
    /** An auto retry: its circuit is read afresh (see Circuits). */
    retry = false,
  ): Promise<{ send: true; rate: RateReservation | null } | PutOff> {
    const perSecond = webhook.deliveryPolicy.rate_limit_per_second;
    let rate: RateReservation | null = null;
    const spacingUs = perSecond ? intervalUs(perSecond) : 0;
    const aheadMs = Math.min(RATE_WAIT_HERE_MS, Math.max(RATE_RESERVE_MIN_MS, spacingUs / 1000));
    for (let hasTurn = rateSlot; perSecond && !rate; hasTurn = true) {
      const { waitUs, slotUs } = await this.deps.rate.admit(
        webhook.id,
        perSecond,
        hasTurn,
        aheadMs * 1000,
      );
      const waitMs = waitUs / 1000;
      if (slotUs !== null) {
        rate = { webhookId: webhook.id, slotUs, intervalUs: spacingUs, dueAt: now() + waitMs };
        continue;
      }
      // Its turn: it asks again a little before, and then reserves it.
      const untilAskMs = Math.max(0, waitMs - aheadMs / 2);
      if (waitMs > RATE_WAIT_HERE_MS) {
        // Whole milliseconds: BullMQ on Postgres keeps times in bigint columns.
        const waited = Math.ceil(untilAskMs);
        return { send: false, waitMs: waited, reason: 'rate_limit', rateSlot: true };
      }
      await sleep(Math.ceil(untilAskMs));
    }
    const circuit = await this.deps.circuits.admit(webhook.id, { fresh: retry });
    if (circuit.send) return { send: true, rate };
    return { send: false, waitMs: circuit.waitMs, reason: 'circuit', rateSlot: false };
  }

  /**
   * Waits for a request's reserved slot (what it did since its admission, rendering it, counts
   * towards the wait), and for an interval after the last request of its webhook this process
   * started: after a pause of the process (its timers all late at once), the requests whose slots
   * passed meanwhile go one interval apart, not together. One that goes later than its slot tells
   * the limit (rateStarted), which moves the slots not yet reserved.
   */
  async untilRateSlot(reserved: RateReservation): Promise<void> {
    const { webhookId, intervalUs: spacingUs, dueAt } = reserved;
    for (;;) {
      const last = this.#lastStart.get(webhookId);
      const at = Math.max(dueAt, last === undefined ? 0 : last + spacingUs / 1000);
      // (A timer may fire up to a millisecond early.)
      if (at <= now() + 1) break;
      await sleep(Math.ceil(at - now()));
    }
    const started = now();
    if (this.#lastStart.size >= LAST_STARTS_KEPT) {
      for (const [id, at] of this.#lastStart) if (at < started - 1000) this.#lastStart.delete(id);
    }
    this.#lastStart.set(webhookId, started);
  }

  /**
   * A reserved request starts now: if that is later than its slot, the next one of its webhook
   * waits an interval from here (told alongside the request, not before it). On time (within a
   * millisecond) there is nothing to tell. Never fails (a failure is logged).
   */
  async rateStarted(reservation: RateReservation): Promise<void> {
    const lateMs = now() - reservation.dueAt;
    if (lateMs < 1) return;
    const { webhookId, slotUs, intervalUs: spacingUs } = reservation;
    await this.deps.rate.started(webhookId, slotUs + lateMs * 1000 + spacingUs).catch((error) => {
      this.deps.logger.warn({ err: errorMessage(error), webhookId }, 'rate limit not told');
    });
  }

  /**
   * Runs a delivery whose in-flight slot is taken, within the process's pool; frees the slot once
   * the endpoint has answered (`run` calls `answered`: the slot counts requests in flight, not the
   * outcome's write), or when `run` ends.
   */
  async holding<T>(
    webhookId: string,
    slot: string,
    run: (answered: () => void) => Promise<T>,
  ): Promise<T> {
    const { inFlight, pool, metrics } = this.deps;
    let freed: Promise<void> | undefined;
    const free = (): Promise<void> => (freed ??= inFlight.release(webhookId, slot));
    try {
      return await pool.run(async () => {
        metrics.inFlight.inc();
        try {
          return await run(() => void free().catch(() => undefined));
        } finally {
          metrics.inFlight.dec();
        }
      });
    } finally {
      // A release that failed (Redis away) is left to the slot's expiry.
      await free().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    await this.deps.inFlight.stop?.();
    await this.deps.circuits.stop();
    await this.deps.rollups.stop();
  }
}

/** The limits on the process's coordination (Redis, or Postgres alone), their circuits started. */
export async function startLimits(
  deps: Pick<SystemResources, 'db' | 'coordination' | 'logger'> & {
    metrics: Pick<DeliveryMetrics, 'inFlight' | 'circuitsOpen'>;
  },
  settings: Pick<
    DeliverySettings,
    'maxInFlightPerWebhook' | 'timeoutMs' | 'circuit' | 'deliverConcurrency'
  >,
): Promise<Limits> {
  const { db, coordination, metrics, logger } = deps;
  // An attempt holds its slot for at most its timeout, and a second more for what it does before
  // sending; a kept slot may start one for `reusableMs` after it was taken (kept-slots.ts). A dead
  // process's slots come free once the last attempt one could have started could have ended.
  const kept = keptSlotsSettings(settings.maxInFlightPerWebhook, settings.timeoutMs + 1000);
  const { inFlight: store, rateTurns } = deliveryCoordination(coordination, {
    maxInFlightPerWebhook: settings.maxInFlightPerWebhook,
    slotTtlMs: kept.slotTtlMs,
  });
  const inFlight = new KeptSlots(store, kept);
  const circuits = new Circuits({
    db,
    logger: logger.child({ module: 'circuits' }),
    pollMs: Math.min(1000, Math.max(100, settings.circuit.cooldownMs / 4)),
    // An attempt lasts at most the timeout: a claim older than twice that is a dead process's.
    probeTimeoutMs: 2 * settings.timeoutMs + 1000,
    probeWaitMs: Math.min(1000, Math.max(100, settings.circuit.cooldownMs / 4)),
    openGauge: metrics.circuitsOpen,
  });
  await circuits.start();
  // Stats, health and circuits follow the outcomes within a quarter second (a failure that
  // counts towards a circuit at once), and this process's circuits follow its rollups.
  const rollups = new AttemptRollups(
    db,
    logger.child({ module: 'rollups' }),
    settings.circuit,
    ROLLUP_INTERVAL_MS,
    (written) => circuits.heard(written),
  );
  rollups.start();
  return new Limits({
    inFlight,
    rate: rateTurns,
    circuits,
    rollups,
    pool: new Semaphore(settings.deliverConcurrency),
    inFlightWaitMs: Math.min(1000, Math.max(100, settings.timeoutMs / 8)),
    metrics,
    logger: logger.child({ module: 'deliver' }),
  });
}
