import type { Gauge } from 'prom-client';
import type { Logger } from '@herald/runtime';
import {
  claimCircuitProbe,
  listOpenCircuits,
  readCircuit,
  type CircuitWait,
  type Db,
} from '@herald/store';
import { errorMessage } from '@herald/contract';

/** Whether an attempt may go now, or how long its call waits first. */
export type Admission = { send: true } | { send: false; waitMs: number };

/**
 * The webhooks' circuit breakers as this process sees them: the circuits not closed, read from
 * Postgres every `pollMs` (the statement that rolls up attempts opens and closes them, in any
 * process), and at once from this process's own rollups (heard). A retry reads its webhook's
 * circuit afresh just before it would go (a retry follows a failure, perhaps another process's
 * that opened the circuit since the last read). While a webhook's circuit is open its calls wait
 * for the cool-down's end; then one probe, taken in Postgres by one process, goes, and the others
 * wait a little more until its outcome closes the circuit or opens it again. Nothing is dropped.
 */
export class Circuits {
  /** Webhook id → when (performance.now()) its cool-down ends here. */
  #open = new Map<string, number>();
  /** Webhook id → when (performance.now()) a circuit was last heard of apart from the polls. */
  #heardAt = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;

  constructor(
    private readonly options: {
      db: Db;
      logger: Logger;
      pollMs: number;
      /** A probe's claim older than this is dead (its process went away): another may go. */
      probeTimeoutMs: number;
      /** How long a call waits while another process's probe runs. */
      probeWaitMs: number;
      openGauge?: Gauge;
    },
  ) {}

  /** Reads the circuits now, then every pollMs. */
  async start(): Promise<void> {
    await this.poll();
    const tick = (): void => {
      this.#polling = this.poll().finally(() => {
        if (this.#timer) this.#timer = setTimeout(tick, this.options.pollMs);
      });
    };
    this.#timer = setTimeout(tick, this.options.pollMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#polling;
  }

  /** Reads the circuits not closed (a failed read keeps the last ones). */
  async poll(): Promise<void> {
    const startedAt = performance.now();
    try {
      const rows = await listOpenCircuits(this.options.db);
      const now = performance.now();
      const open = new Map(rows.map((row) => [row.webhookId, now + row.waitMs]));
      // What was heard while the read ran is newer than what it read.
      for (const [webhookId, heardAt] of this.#heardAt) {
        if (heardAt < startedAt) continue;
        const until = this.#open.get(webhookId);
        if (until === undefined) open.delete(webhookId);
        else open.set(webhookId, until);
      }
      this.#heardAt.clear();
      this.#open = open;
      this.options.openGauge?.set(open.size);
    } catch (error) {
      this.options.logger.warn({ err: errorMessage(error) }, 'could not read the circuits');
    }
  }

  /** Circuits as a statement of this process just left them (its rollups). */
  heard(circuits: readonly CircuitWait[]): void {
    const now = performance.now();
    for (const { webhookId, waitMs } of circuits) {
      if (waitMs === null) this.#open.delete(webhookId);
      else this.#open.set(webhookId, now + waitMs);
      this.#heardAt.set(webhookId, now);
    }
    this.options.openGauge?.set(this.#open.size);
  }

  /**
   * Whether an attempt of this webhook may go now: yes when its circuit is closed, or when this
   * call takes the probe of a circuit whose cool-down has ended; otherwise how long to wait (a
   * little jitter, so that a backlog does not come back all at once). `fresh`: read the circuit
   * from Postgres first rather than trust the last poll.
   */
  async admit(webhookId: string, { fresh = false } = {}): Promise<Admission> {
    if (fresh) this.heard([await readCircuit(this.options.db, webhookId)]);
    const until = this.#open.get(webhookId);
    if (until === undefined) return { send: true };
    const jitter = (ms: number): number => ms * (1 + Math.random() / 4);
    const left = until - performance.now();
    if (left > 0) return { send: false, waitMs: jitter(left) };
    const { db, probeTimeoutMs, probeWaitMs } = this.options;
    if (await claimCircuitProbe(db, webhookId, probeTimeoutMs)) return { send: true };
    return { send: false, waitMs: jitter(probeWaitMs) };
  }
}
