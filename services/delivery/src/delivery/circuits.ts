import type { Gauge } from 'prom-client';
import type { Logger } from '@herald/runtime';
import { claimCircuitProbe, listOpenCircuits, type Db } from '@herald/store';
import { errorMessage } from '@herald/contract';

/** Whether an attempt may go now, or how long its call waits first. */
export type Admission = { send: true } | { send: false; waitMs: number };

/**
 * The webhooks' circuit breakers as this process sees them: the circuits not closed, read from
 * Postgres every `pollMs` (the statement that records attempts opens and closes them, in any
 * process). While a webhook's circuit is open its calls wait for the cool-down's end; then one
 * probe, taken in Postgres by one process, goes, and the others wait a little more until its
 * outcome closes the circuit or opens it again. Nothing is dropped.
 */
export class Circuits {
  /** Webhook id → when (performance.now()) its cool-down ends here. */
  #open = new Map<string, number>();
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
    try {
      const rows = await listOpenCircuits(this.options.db);
      const now = performance.now();
      this.#open = new Map(rows.map((row) => [row.webhookId, now + row.waitMs]));
      this.options.openGauge?.set(rows.length);
    } catch (error) {
      this.options.logger.warn({ err: errorMessage(error) }, 'could not read the circuits');
    }
  }

  /**
   * Whether an attempt of this webhook may go now: yes when its circuit is closed, or when this
   * call takes the probe of a circuit whose cool-down has ended; otherwise how long to wait (a
   * little jitter, so that a backlog does not come back all at once).
   */
  async admit(webhookId: string): Promise<Admission> {
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
