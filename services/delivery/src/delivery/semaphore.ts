/**
 * Counts the attempts a process has in flight (DELIVERY_CONCURRENCY). A deliver-calls job holds
 * many calls; their requests start as slots free up, in arrival order, so the HTTP timeout of a
 * call only starts once it is really being sent.
 */
export class Semaphore {
  #free: number;
  #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}
