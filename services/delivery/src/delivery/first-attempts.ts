import type { SlotRequest } from './in-flight.js';
import type { Semaphore } from './semaphore.js';

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
  /** The attempt itself, its slot held. */
  attempt: (call: C) => Promise<void>;
  /** Calls whose webhook is at its limit: they wait elsewhere (a delayed deliver job). */
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
  #waiters: { below: number; resolve: () => void }[] = [];

  constructor(private readonly options: FirstAttemptsOptions<C>) {
    options.semaphore.onFree(() => void this.#pump());
  }

  /** Calls queued or in flight. */
  get size(): number {
    return this.#queue.length + this.#running;
  }

  add(calls: readonly C[]): void {
    this.#queue.push(...calls);
    this.options.queued?.(this.#queue.length);
    void this.#pump();
  }

  /** Resolves once fewer than `limit` calls are queued or in flight. */
  async below(limit: number): Promise<void> {
    if (this.size < limit) return;
    await new Promise<void>((resolve) => this.#waiters.push({ below: limit, resolve }));
  }

  /** Resolves once every call added so far has finished (or was deferred or abandoned). */
  drain(): Promise<void> {
    return this.below(1);
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
          this.#finish(count);
          this.options.abandon(batch, error);
          continue;
        }
        const deferred = batch.filter((_, i) => !taken[i]);
        if (deferred.length > 0) {
          this.#finish(deferred.length);
          this.options
            .defer(deferred)
            .catch((error: unknown) => this.options.abandon(deferred, error));
        }
        batch.forEach((call, i) => {
          if (taken[i]) void this.#attempt(call, tokens[i]!);
        });
      }
    } finally {
      this.#pumping = false;
    }
  }

  async #attempt(call: C, token: string): Promise<void> {
    try {
      await this.options.attempt(call);
    } catch (error) {
      this.options.abandon([call], error);
    } finally {
      await this.options.release(call.webhookId, token).catch(() => undefined);
      this.#finish(1);
    }
  }

  /** `count` calls left: their pool slots go back, and waiters with room are told. */
  #finish(count: number): void {
    this.#running -= count;
    for (let i = 0; i < count; i++) this.options.semaphore.give();
    this.#waiters = this.#waiters.filter((waiter) => {
      if (this.size >= waiter.below) return true;
      waiter.resolve();
      return false;
    });
  }
}
