import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '@herald/runtime';
import { endLease, releaseWebhookCalls, renewLease, type Db } from '@herald/store';
import { errorMessage } from '@herald/contract';

/**
 * This process's lease on the calls it holds (their first attempts queued or running in its
 * memory; webhook_calls.held_by). A heartbeat renews it every third of `leaseMs`; the sweeper of
 * any process takes over the calls of a lease not renewed for `leaseMs` (the holder died), and
 * only those, so a live process's backlog is never sent twice. A holder that cannot renew stops
 * starting attempts before its calls can be taken over (`valid`).
 */
export class Lease {
  readonly id = randomUUID();
  /** When the last renewal that succeeded was sent (performance.now()). */
  #renewedAt = -Infinity;
  /** Since when every renewal succeeded (performance.now(); undefined after a miss). */
  #healthySince: number | undefined;
  /** Calls to let go of whose release did not reach the database yet, by id: due or not. */
  #releases = new Map<string, boolean>();
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    readonly leaseMs: number,
  ) {}

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
    }
  }

  async #renew(): Promise<void> {
    const sent = performance.now();
    await renewLease(this.db, { id: this.id, host: hostname(), pid: process.pid });
    this.#renewedAt = sent;
    this.#healthySince ??= sent;
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
