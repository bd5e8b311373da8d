import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '@herald/runtime';
import {
  endLease,
  listHeldWebhookCalls,
  releaseWebhookCalls,
  renewLease,
  type Db,
} from '@herald/store';
import { errorMessage } from '@herald/contract';

/**
 * This process's lease on the calls it holds (their first attempts queued or running in its
 * memory; webhook_calls.held_by). A heartbeat renews it every third of `leaseMs`; the sweeper of
 * any process takes over the calls of a lease not renewed for `leaseMs` (the holder died), and
 * only those, so a live process's backlog is never sent twice. A holder that cannot renew stops
 * starting attempts before its calls can be taken over (`valid`).
 *
 * The calls this process has in memory are counted here too (`create`, `letGo`). At each
 * heartbeat the calls Postgres says it holds are compared with them, and those it does not have
 * are released to the sweeper: a first attempt's outcome (which ends the hold) that Postgres
 * forgot in a crash (the workers commit with synchronous_commit=off), or calls created by a
 * statement whose reply was lost. Without this they would stay held by a live process, which
 * never sends them, and no sweeper would take them over.
 */
export class Lease {
  readonly id = randomUUID();
  /** When the last renewal that succeeded was sent (performance.now()). */
  #renewedAt = -Infinity;
  /** Since when every renewal succeeded (performance.now(); undefined after a miss). */
  #healthySince: number | undefined;
  /** Calls to let go of whose release did not reach the database yet, by id: due or not. */
  #releases = new Map<string, boolean>();
  /** Calls held here and in memory: created (`create`), not yet let go (`letGo`). */
  #holding = new Set<string>();
  /** `create`s whose statement has not answered yet. */
  #creating = new Set<Promise<unknown>>();
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  /** The comparison of held calls under way (beside the heartbeat, never holding it up). */
  #comparing: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    readonly leaseMs: number,
    /** Hears how many calls held in Postgres but not in memory were released. */
    private readonly onReleasedForgotten: (count: number) => void = () => undefined,
  ) {}

  /**
   * Runs a statement that creates calls held by this lease, and counts the calls it returns as
   * in memory. A statement that fails may still have committed: its calls are released at a
   * heartbeat.
   */
  create<C extends { id: string }>(statement: () => Promise<C[]>): Promise<C[]> {
    const created = statement().then((calls) => {
      for (const call of calls) this.#holding.add(call.id);
      return calls;
    });
    this.#creating.add(created);
    const forget = (): void => void this.#creating.delete(created);
    created.then(forget, forget);
    return created;
  }

  /** Calls no longer in memory here: attempted (the outcome ended the hold), deferred or given up. */
  letGo(ids: readonly string[]): void {
    for (const id of ids) this.#holding.delete(id);
  }

  /** Takes the lease (the first renewal must succeed) and starts the heartbeat. */
  async start(): Promise<void> {
    await this.#renew();
    const beat = (): void => {
      this.#beating = this.#beat().finally(() => {
        if (this.#timer) this.#timer = setTimeout(beat, this.leaseMs / 3);
      });
    };
    this.#timer = setTimeout(beat, this.leaseMs / 3);
  }

  /**
   * Whether calls held here may still be started: the lease was renewed recently enough that no
   * sweeper can have taken them over (a third of a lease kept as margin).
   */
  get valid(): boolean {
    return performance.now() - this.#renewedAt < (this.leaseMs * 2) / 3;
  }

  /** How long every renewal has succeeded (0 right after a miss). */
  healthyForMs(): number {
    return this.#healthySince === undefined ? 0 : performance.now() - this.#healthySince;
  }

  /**
   * Lets go of calls held here that this process will not finish (see releaseWebhookCalls for
   * `due`). When the database is away the release is retried at each heartbeat; if the process
   * dies first, the lease runs out and the sweeper takes the calls over anyway.
   */
  async release(ids: readonly string[], due: boolean): Promise<void> {
    if (ids.length === 0) return;
    try {
      await releaseWebhookCalls(this.db, this.id, ids, due);
    } catch (error) {
      for (const id of ids) this.#releases.set(id, due);
      this.logger.warn(
        { err: errorMessage(error), calls: ids.length },
        'could not release held calls; will retry',
      );
    }
  }

  /** Stops the heartbeat, lets go of what is left to release and ends the lease. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#beating;
    await this.#comparing;
    await this.#flushReleases().catch(() => undefined);
    // Calls still held (their outcome could not be written) stay held: the lease runs out and the
    // sweeper takes them over.
    if (this.#releases.size === 0) await endLease(this.db, this.id).catch(() => undefined);
  }

  async #beat(): Promise<void> {
    try {
      await this.#renew();
      await this.#flushReleases();
    } catch (error) {
      this.#healthySince = undefined;
      this.logger.warn({ err: errorMessage(error) }, 'lease renewal failed; will retry');
      return;
    }
    // It may wait for a slow statement creating calls: the renewals go on meanwhile.
    this.#comparing ??= this.#releaseForgotten()
      .catch((error: unknown) => {
        this.logger.warn({ err: errorMessage(error) }, 'could not compare held calls; will retry');
      })
      .finally(() => (this.#comparing = undefined));
  }

  async #renew(): Promise<void> {
    const sent = performance.now();
    await renewLease(this.db, { id: this.id, host: hostname(), pid: process.pid });
    this.#renewedAt = sent;
    this.#healthySince ??= sent;
  }

  /** Releases, as due, the calls Postgres says are held here that this process does not have. */
  async #releaseForgotten(): Promise<void> {
    const held = await listHeldWebhookCalls(this.db, this.id);
    if (held.length === 0) return;
    // A statement still creating calls may have committed before that read: once it answers,
    // its calls are in memory. One that starts after the read created none of those read.
    await Promise.allSettled([...this.#creating]);
    const forgotten = held.filter((id) => !this.#holding.has(id) && !this.#releases.has(id));
    if (forgotten.length === 0) return;
    // Only calls still held: one whose outcome was written since the read is left alone.
    const released = await releaseWebhookCalls(this.db, this.id, forgotten, true);
    if (released === 0) return;
    this.onReleasedForgotten(released);
    this.logger.warn(
      { calls: released },
      'calls held by this process in Postgres but not in its memory released to the sweeper ' +
        '(an outcome Postgres forgot, or a reply lost): they are sent again',
    );
  }

  async #flushReleases(): Promise<void> {
    for (const due of [true, false]) {
      const ids = [...this.#releases].filter(([, d]) => d === due).map(([id]) => id);
      if (ids.length === 0) continue;
      await releaseWebhookCalls(this.db, this.id, ids, due);
      for (const id of ids) this.#releases.delete(id);
    }
  }
}
