/**
 * Work a process started and did not wait for (the first attempts the match worker starts):
 * counted, so the match worker can wait for room before taking more, and drained on shutdown.
 */
export class Background {
  #running = new Set<Promise<void>>();
  #waiters: { below: number; resolve: () => void }[] = [];

  get size(): number {
    return this.#running.size;
  }

  track(work: Promise<void>): void {
    const tracked = work.finally(() => {
      this.#running.delete(tracked);
      this.#waiters = this.#waiters.filter((w) => {
        if (this.#running.size >= w.below) return true;
        w.resolve();
        return false;
      });
    });
    this.#running.add(tracked);
  }

  /** Resolves once fewer than `limit` pieces of work run. */
  async below(limit: number): Promise<void> {
    if (this.#running.size < limit) return;
    await new Promise<void>((resolve) => this.#waiters.push({ below: limit, resolve }));
  }

  /** Resolves once everything tracked so far has settled. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }
}
