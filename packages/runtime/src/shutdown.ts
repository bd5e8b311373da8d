import type { Server } from 'node:http';
import type { Logger } from './logger.js';
import { settleWithin } from './settle-within.js';

type Hook = { name: string; run: () => Promise<void>; boundMs: number };

export interface SignalSettings {
  /**
   * On SIGTERM, how long readiness answers 503 while everything else is served as usual, before
   * the hooks run (SHUTDOWN_READINESS_DELAY_MS): the time a load balancer or Kubernetes needs to
   * see it and stop routing here. SIGINT (Ctrl-C) does not wait.
   */
  readinessDelayMs: number;
}

/**
 * The process's lifecycle: what its start still waits for, and its one shutdown mechanism
 * (docs/architecture.md; docs/api.md, Operations). On a signal: readiness turns 503 (on SIGTERM,
 * for a delay during which everything else is still served), then the hooks run in reverse order
 * of registration (last opened, first closed): intake stops, in-flight work finishes within the
 * grace period, connections close.
 */
export class Lifecycle {
  #draining = false;
  #starting: string | undefined;
  #hooks: Hook[] = [];
  #done: Promise<void> | undefined;
  /** Ends the readiness delay early; set only while it runs. */
  #endDelay: (() => void) | undefined;

  /**
   * @param stepBoundMs how long a shutdown hook may take unless it says otherwise
   * (SHUTDOWN_GRACE_MS): past it the shutdown goes on without it.
   */
  constructor(
    private readonly logger: Logger,
    private readonly stepBoundMs = 10_000,
  ) {}

  get draining(): boolean {
    return this.#draining;
  }

  /**
   * What the start is doing or waiting for (the startup routine says it: startStep), undefined
   * once started: meanwhile readiness and the API answer 503 saying it, while health and metrics
   * are served.
   */
  get starting(): string | undefined {
    return this.#starting;
  }

  startStep(what: string): void {
    this.#starting = what;
  }

  started(): void {
    this.#starting = undefined;
  }

  /**
   * Registers something to close at shutdown, which may take boundMs at most (the lifecycle's
   * step bound unless given; Infinity: waited for whole). A close that waits on a server gone
   * silent (a Redis master killed mid-command, a network that drops packets) would otherwise hold
   * the process until an orchestrator kills it: past its bound, it is logged by name and the
   * shutdown goes on (runShutdownStep).
   */
  onShutdown(name: string, run: () => Promise<void>, boundMs = this.stepBoundMs): void {
    this.#hooks.push({ name, run, boundMs });
  }

  /**
   * Idempotent: a second call waits for the first shutdown. With readinessDelayMs, readiness
   * answers 503 that long before the hooks run.
   */
  shutdown(reason: string, readinessDelayMs = 0): Promise<void> {
    this.#done ??= this.#run(reason, readinessDelayMs);
    return this.#done;
  }

  async #run(reason: string, readinessDelayMs: number): Promise<void> {
    this.#draining = true;
    this.logger.info({ reason, readinessDelayMs }, 'shutting down');
    if (readinessDelayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, readinessDelayMs);
        this.#endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#endDelay = undefined;
    }
    for (const hook of [...this.#hooks].reverse()) {
      await runShutdownStep(this.logger, { hook: hook.name }, hook.run, hook.boundMs);
    }
    this.logger.info('shutdown complete');
  }

  /**
   * Only the startup routine calls this (startService, run by main.ts's runProcess): it owns the
   * process's signals. SIGTERM (what orchestrators send)
   * waits settings.readinessDelayMs with readiness at 503 before stopping; SIGINT (Ctrl-C, a
   * person at a terminal, no load balancer to warn) stops at once. A second signal during the
   * delay ends it. Later ones are ignored: the hooks are running, bounded by the grace period,
   * and duplicates are common (npm forwards the terminal's Ctrl-C to a process that got it too).
   */
  installSignalHandlers(onDone: (code: number) => void, settings: SignalSettings): void {
    const onSignal = (signal: 'SIGTERM' | 'SIGINT') => {
      if (!this.#done) {
        const delayMs = signal === 'SIGTERM' ? settings.readinessDelayMs : 0;
        void this.shutdown(signal, delayMs).then(() => onDone(0));
      } else if (this.#endDelay) {
        this.logger.info({ signal }, 'second signal: stopping without waiting for the delay');
        this.#endDelay();
      } else {
        this.logger.info({ signal }, 'already shutting down');
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
}

/**
 * Runs one step of a shutdown for `ms` at most (Infinity: to its end). One still running then is
 * logged as late and left to settle; one that fails is logged. Either way the caller goes on.
 * `name` is how the log names the step (`{ hook }` for the lifecycle's, `{ step }` for a
 * service's own steps).
 */
export async function runShutdownStep(
  logger: Logger,
  name: Record<string, string>,
  work: () => Promise<unknown>,
  ms: number,
): Promise<void> {
  try {
    const run = work().then(() => true);
    const finished = Number.isFinite(ms) ? await settleWithin(run, ms, () => false) : await run;
    if (!finished) {
      logger.warn(
        { ...name, waitedMs: ms },
        'a shutdown step did not finish in time; the shutdown goes on without it',
      );
    }
  } catch (error) {
    logger.error({ err: error, ...name }, 'shutdown step failed');
  }
}

/**
 * Stops accepting connections and waits for in-flight requests; after graceMs the remaining
 * connections are cut.
 */
export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
