import type { Server } from 'node:http';
import type { Logger } from './logger.js';

type Hook = { name: string; run: () => Promise<void> };

/**
 * The process's one shutdown mechanism (ARCHITECTURE.md, API.md §7). On a signal: readiness turns
 * 503, then the hooks run in reverse order of registration (last opened, first closed): intake
 * stops, in-flight work finishes within the grace period, connections close.
 */
export class Lifecycle {
  #draining = false;
  #hooks: Hook[] = [];
  #done: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  get draining(): boolean {
    return this.#draining;
  }

  /** Registers something to close at shutdown. */
  onShutdown(name: string, run: () => Promise<void>): void {
    this.#hooks.push({ name, run });
  }

  /** Idempotent: a second signal waits for the first shutdown. */
  shutdown(reason: string): Promise<void> {
    this.#done ??= this.#run(reason);
    return this.#done;
  }

  async #run(reason: string): Promise<void> {
    this.#draining = true;
    this.logger.info({ reason }, 'shutting down');
    for (const hook of [...this.#hooks].reverse()) {
      try {
        await hook.run();
      } catch (error) {
        this.logger.error({ err: error, hook: hook.name }, 'shutdown step failed');
      }
    }
    this.logger.info('shutdown complete');
  }

  /** Only main.ts calls this: it owns the process's signals. */
  installSignalHandlers(onDone: (code: number) => void): void {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void this.shutdown(signal).then(() => onDone(0));
      });
    }
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
