import { acquireInFlightSlots, releaseInFlightSlots, type Queryable } from '@herald/store';
import type { SlotRequest } from './in-flight.js';

/**
 * The per-webhook in-flight limit on Postgres alone (InFlightLimiter's counterpart): a row per
 * slot in an UNLOGGED table, each webhook's slots counted under its advisory lock (migration 027),
 * expired slots (a killed worker's) evicted before counting. As on Redis, the slots of a whole
 * batch are asked for in one statement and the releases of one tick go together.
 */
export class PostgresInFlightLimiter {
  #releases: { webhookId: string; token: string; done: () => void; fail: (e: unknown) => void }[] =
    [];

  constructor(
    private readonly db: Queryable,
    private readonly limit: number,
    /** Longer than the longest attempt (the whole-call timeout plus margin). */
    private readonly ttlMs: number,
  ) {}

  async acquire(webhookId: string, token: string): Promise<boolean> {
    const [taken] = await this.acquireMany([{ webhookId, token }]);
    return taken === true;
  }

  acquireMany(requests: readonly SlotRequest[]): Promise<boolean[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return acquireInFlightSlots(this.db, requests, this.limit, this.ttlMs);
  }

  release(webhookId: string, token: string): Promise<void> {
    return new Promise((done, fail) => {
      this.#releases.push({ webhookId, token, done, fail });
      if (this.#releases.length === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#releases;
    this.#releases = [];
    releaseInFlightSlots(this.db, batch).then(
      () => batch.forEach((r) => r.done()),
      (error: unknown) => batch.forEach((r) => r.fail(error)),
    );
  }
}
