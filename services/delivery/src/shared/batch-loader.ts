/**
 * Coalesces concurrent reads by id into `SELECT … WHERE id = ANY($1)` queries: at most
 * `maxInFlight` queries run at once, and the ids asked for meanwhile wait and go together in the
 * next one. Idle, a read costs one query as before; under load (200 deliveries in flight) one
 * query serves many jobs, which is what the workers' Postgres round trips cost most.
 */
export class BatchLoader<V> {
  #waiting = new Map<string, { resolve: (v: V | null) => void; reject: (e: unknown) => void }[]>();
  #inFlight = 0;

  constructor(
    private readonly fetchMany: (ids: string[]) => Promise<Iterable<V>>,
    private readonly idOf: (value: V) => string,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 500,
  ) {}

  load(id: string): Promise<V | null> {
    return new Promise((resolve, reject) => {
      const list = this.#waiting.get(id);
      if (list) list.push({ resolve, reject });
      else this.#waiting.set(id, [{ resolve, reject }]);
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.maxInFlight && this.#waiting.size > 0) {
      const batch = new Map<
        string,
        { resolve: (v: V | null) => void; reject: (e: unknown) => void }[]
      >();
      for (const [id, list] of this.#waiting) {
        batch.set(id, list);
        this.#waiting.delete(id);
        if (batch.size >= this.maxBatch) break;
      }
      this.#inFlight++;
      this.fetchMany([...batch.keys()])
        .then((values) => {
          const byId = new Map<string, V>();
          for (const value of values) byId.set(this.idOf(value), value);
          for (const [id, list] of batch) for (const w of list) w.resolve(byId.get(id) ?? null);
        })
        .catch((error: unknown) => {
          for (const list of batch.values()) for (const w of list) w.reject(error);
        })
        .finally(() => {
          this.#inFlight--;
          this.#pump();
        });
    }
  }
}

/**
 * The same for writes keyed by id: the items handed in while a write runs go together in the next
 * one, each id at most once per write (a second item for an id waits for the next write, so
 * writes of one id keep their order). `write` resolves once its item is committed, with what
 * `writeMany` answered for it (an array in the order of the items), if anything.
 */
interface PendingWrite<T, R> {
  id: string;
  value: T;
  resolve: (result: R | undefined) => void;
  reject: (e: unknown) => void;
}

export class BatchWriter<T, R = void> {
  #waiting: PendingWrite<T, R>[] = [];
  #inFlight = 0;

  constructor(
    private readonly writeMany: (items: { id: string; value: T }[]) => Promise<readonly R[] | void>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 500,
  ) {}

  write(id: string, value: T): Promise<R | undefined> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ id, value, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.maxInFlight && this.#waiting.length > 0) {
      const ids = new Set<string>();
      const batch: PendingWrite<T, R>[] = [];
      const rest: PendingWrite<T, R>[] = [];
      for (const item of this.#waiting) {
        if (batch.length < this.maxBatch && !ids.has(item.id)) {
          ids.add(item.id);
          batch.push(item);
        } else rest.push(item);
      }
      this.#waiting = rest;
      this.#inFlight++;
      this.writeMany(batch.map(({ id, value }) => ({ id, value })))
        .then((results) => {
          batch.forEach((item, i) => item.resolve(results?.[i]));
        })
        .catch((error: unknown) => {
          for (const item of batch) item.reject(error);
        })
        .finally(() => {
          this.#inFlight--;
          this.#pump();
        });
    }
  }
}
