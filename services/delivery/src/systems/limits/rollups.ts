import type { Logger } from '@herald/runtime';
import {
  recordAttemptRollups,
  type AttemptRollup,
  type CircuitSettings,
  type CircuitWait,
  type Db,
} from '@herald/store';
import { errorMessage } from '@herald/contract';

/** Attempts kept for the rollups while the database is away, at most (the oldest go first). */
const MAX_PENDING = 100_000;

/**
 * The stats, health and circuit rollups of this process's attempts, added up and written every
 * `intervalMs` in one statement. Written with each batch of outcomes, the few rows of a busy
 * webhook (its minute, its hour, its health) were updated by every batch of every process, and
 * those updates cost more than the outcomes themselves. Stats and circuits follow within about
 * `intervalMs`; a process killed loses at most that much of them, never an outcome. A failure
 * that counts towards a circuit is written at once (after the write under way), so that the
 * circuit opens when its run of failures is complete, not up to `intervalMs` later; each write
 * tells `onCircuits` the circuits of the webhooks it wrote.
 */
export class AttemptRollups {
  #pending: AttemptRollup[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** The writes, one after the other. */
  #writing: Promise<void> = Promise.resolve();
  #soon = false;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly circuit: CircuitSettings,
    private readonly intervalMs: number,
    private readonly onCircuits?: (circuits: CircuitWait[]) => void,
  ) {}

  start(): void {
    const tick = (): void => {
      void this.#write().finally(() => {
        if (this.#timer) this.#timer = setTimeout(tick, this.intervalMs);
      });
    };
    this.#timer = setTimeout(tick, this.intervalMs);
  }

  /** A write after the one under way (if any). */
  #write(): Promise<void> {
    this.#writing = this.#writing.then(() => this.flush());
    return this.#writing;
  }

  add(attempts: readonly AttemptRollup[]): void {
    // (A webhook's policy may turn its circuit on where the deployment's default is off. At most
    // one early write waits behind the one under way, so an outage's failures add a write at a
    // time, not one per failure.)
    if (this.#timer && !this.#soon && attempts.some((attempt) => attempt.tripsCircuit)) {
      this.#soon = true;
      void this.#write().finally(() => (this.#soon = false));
    }
    this.#pending.push(...attempts);
    if (this.#pending.length > MAX_PENDING) {
      this.logger.warn(
        { dropped: this.#pending.length - MAX_PENDING },
        'stats rollups dropped: the database was away too long',
      );
      this.#pending = this.#pending.slice(-MAX_PENDING);
    }
  }

  /** Writes what was gathered; kept for the next time if the write fails. */
  async flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    try {
      const circuits = await recordAttemptRollups(this.db, batch, this.circuit);
      this.onCircuits?.(circuits);
    } catch (error) {
      this.#pending = [...batch, ...this.#pending];
      this.logger.warn(
        { err: errorMessage(error) },
        'could not write the stats rollups; will retry',
      );
    }
  }

  /** Stops the timer and writes what is left (once). */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#write();
  }
}
