/**
 * The process's pool of attempts in flight (DELIVERY_CONCURRENCY), shared by deliver jobs, which
 * wait for a slot (run), and the first attempts the match worker starts, which take the slots
 * that are free (take / give) and are told when one frees up (onFree). An attempt's HTTP timeout
 * only starts once it holds a slot.
 */
export class Semaphore {
  #free: number;
  #waiting: (() => void)[] = [];
  #listeners: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      this.give();
    }
  }

  /** Takes up to `wanted` free slots without waiting; returns how many it took. */
  take(wanted: number): number {
    const taken = Math.max(0, Math.min(wanted, this.#free));
    this.#free -= taken;
    return taken;
  }

  /** Frees a slot: to the longest waiter of run(), else to the pool (and the listeners hear). */
  give(): void {
    const next = this.#waiting.shift();
    if (next) return next();
    this.#free++;
    for (const listener of this.#listeners) listener();
  }

  /** Calls `listener` each time a slot returns to the pool. */
  onFree(listener: () => void): void {
    this.#listeners.push(listener);
  }
}
