import type { SlotRequest } from '../limits/in-flight.js';
import type { Semaphore } from '../limits/semaphore.js';

/** A call to attempt, and the webhook whose in-flight limit it counts against. */
export interface PendingAttempt {
  id: string;
  webhookId: string;
}

export interface FirstAttemptsOptions<C extends PendingAttempt> {
  semaphore: Semaphore;
  /**
   * Whether queued calls may start now (this process's lease on them is valid); when not, they
   * are handed to `abandon` instead, unsent.
   */
  startable?: () => boolean;
  /** Takes in-flight slots, one round trip for all (InFlightLimiter.acquireMany). */
  acquire: (requests: readonly SlotRequest[]) => Promise<boolean[]>;
  release: (webhookId: string, token: string) => Promise<void>;
  /** Token of one attempt's slot. */
  token: (call: C) => string;
  /**
   * The attempt itself, its slot held until it calls `answered` (the endpoint answered: the
   * slot counts requests in flight, not the outcome's write) or ends.
   */
  attempt: (call: C, answered: () => void) => Promise<void>;
  /**
   * How long a call whose webhook is at its in-flight limit waits here for a slot (taken as soon
   * as an attempt of that webhook ends in this process, or retried every `waitMs / 4` for slots
   * other processes free) before it is deferred. 0: deferred at once.
   */
  waitMs?: number;
  /** Calls whose webhook stayed at its limit: they wait elsewhere (a delayed deliver job). */
  defer: (calls: readonly C[]) => Promise<void>;
  /** Calls this process gave up on (Redis away): they stay pending for the sweeper. */
  abandon: (calls: readonly C[], error: unknown) => void;
  /** Hears the number of calls queued (not yet started) whenever it changes. */
  queued?: (count: number) => void;
}

/**
 * The first attempts of new calls, started in the process that matched them. They queue here and
 * start as the pool has room: each round takes the free pool slots, asks Redis for the calls'
 * in-flight slots in one round trip, starts the calls that got one and hands the others to
 * `defer`. A webhook's slots are thus held by attempts that are really in flight, never by calls
 * still queued in a process.
 */
export class FirstAttempts<C extends PendingAttempt> {
  #queue: C[] = [];
  #running = 0;
  #pumping = false;
  #waiters: { below: number; all: boolean; resolve: () => void }[] = [];
  /** Calls waiting here for a slot of their webhook, oldest first, with when they began to. */
  #waiting = new Map<string, { call: C; since: number }[]>();
  #waitingCount = 0;
  #since = new Map<C, number>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: FirstAttemptsOptions<C>) {
    options.semaphore.onFree(() => void this.#pump());
  }

  /** Calls queued, waiting for their webhook's slot, or in flight. */
  get size(): number {
    return this.#queue.length + this.#waitingCount + this.#running;
  }

  add(calls: readonly C[]): void {
    this.#queue.push(...calls);
    this.options.queued?.(this.#queue.length);
    void this.#pump();
  }

  /**
   * Resolves once fewer than `limit` calls are queued or in flight (calls waiting for their
   * webhook's slot do not count: a slow endpoint's backlog must not hold up matching for all).
   */
  async below(limit: number): Promise<void> {
    if (this.#active < limit) return;
    await new Promise<void>((resolve) => this.#waiters.push({ below: limit, all: false, resolve }));
  }

  /** Resolves once every call added so far has finished (or was deferred or abandoned). */
  async drain(): Promise<void> {
    if (this.size === 0) return;
    await new Promise<void>((resolve) => this.#waiters.push({ below: 1, all: true, resolve }));
  }

  /** Calls queued or in flight (what `below` compares). */
  get active(): number {
    return this.#active;
  }

  get #active(): number {
    return this.#queue.length + this.#running;
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (;;) {
        const count = this.options.semaphore.take(this.#queue.length);
        if (count === 0) break;
        const batch = this.#queue.splice(0, count);
        this.#running += count;
        this.options.queued?.(this.#queue.length);
        if (this.options.startable && !this.options.startable()) {
          for (const call of batch) this.#since.delete(call);
          this.#finish(count);
          this.options.abandon(batch, new Error('the lease on these calls could not be renewed'));
          continue;
        }
        const tokens = batch.map((call) => this.options.token(call));
        let taken: boolean[];
        try {
          taken = await this.options.acquire(
            batch.map((call, i) => ({ webhookId: call.webhookId, token: tokens[i]! })),
          );
        } catch (error) {
          for (const call of batch) this.#since.delete(call);
          this.#finish(count);
          this.options.abandon(batch, error);
          continue;
        }
        const missed = batch.filter((_, i) => !taken[i]);
        if (missed.length > 0) {
          this.#wait(missed);
          this.#finish(missed.length);
        }
        batch.forEach((call, i) => {
          if (!taken[i]) return;
          this.#since.delete(call);
          void this.#attempt(call, tokens[i]!);
        });
      }
    } finally {
      this.#pumping = false;
    }
  }

  async #attempt(call: C, token: string): Promise<void> {
    let freed: Promise<void> | undefined;
    const free = (): Promise<void> =>
      (freed ??= this.options
        .release(call.webhookId, token)
        .catch(() => undefined)
        // The slot just freed goes to the call of its webhook that waited longest here.
        .then(() => {
          this.#wake(call.webhookId, 1);
          void this.#pump();
        }));
    try {
      await this.options.attempt(call, () => void free());
    } catch (error) {
      this.options.abandon([call], error);
    } finally {
      await free();
      this.#finish(1);
    }
  }

  /**
   * Calls whose webhook was at its limit wait here for a slot, in order, up to waitMs in all;
   * past it (or with no waitMs) they are deferred.
   */
  #wait(calls: readonly C[]): void {
    const now = performance.now();
    const waitMs = this.options.waitMs ?? 0;
    const deferred: C[] = [];
    for (const call of calls) {
      const since = this.#since.get(call) ?? now;
      if (now - since >= waitMs) {
        this.#since.delete(call);
        deferred.push(call);
        continue;
      }
      let list = this.#waiting.get(call.webhookId);
      if (!list) this.#waiting.set(call.webhookId, (list = []));
      list.push({ call, since });
      this.#waitingCount++;
    }
    if (deferred.length > 0) {
      this.options.defer(deferred).catch((error: unknown) => this.options.abandon(deferred, error));
    }
    this.#tick();
    this.#settleWaiters();
  }

  /** Puts up to `count` of a webhook's waiting calls back first in the queue. */
  #wake(webhookId: string, count: number): void {
    const list = this.#waiting.get(webhookId);
    if (!list) return;
    const woken = list.splice(0, count);
    if (list.length === 0) this.#waiting.delete(webhookId);
    this.#waitingCount -= woken.length;
    for (const { call, since } of woken) this.#since.set(call, since);
    this.#queue.unshift(...woken.map(({ call }) => call));
  }

  /** While calls wait, every waitMs / 4: retry a few per webhook (slots freed elsewhere). */
  #tick(): void {
    if (this.#timer || this.#waitingCount === 0) return;
    const every = Math.max(10, (this.options.waitMs ?? 0) / 4);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      for (const webhookId of [...this.#waiting.keys()]) this.#wake(webhookId, 1);
      void this.#pump();
      this.#tick();
    }, every);
    this.#timer.unref();
  }

  /** `count` calls left: their pool slots go back, and waiters with room are told. */
  #finish(count: number): void {
    this.#running -= count;
    for (let i = 0; i < count; i++) this.options.semaphore.give();
    this.#settleWaiters();
  }

  #settleWaiters(): void {
    this.#waiters = this.#waiters.filter((waiter) => {
      if ((waiter.all ? this.size : this.#active) >= waiter.below) return true;
      waiter.resolve();
      return false;
    });
  }
}
