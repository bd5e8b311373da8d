import type { Server } from 'node:http';
import type { Express } from 'express';
import type { LevelWithSilent } from 'pino';
import { ConfigError } from './config.js';
import { DeploymentConflictError } from './deployment.js';
import { listen } from './http/listen.js';
import { createLogger, type Logger } from './logger.js';
import { Lifecycle, closeServer } from './shutdown.js';

/** An error class whose instances runMain prints by their message alone. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * Runs a process's main. A failure the operator can fix from its message (bad configuration, a
 * claimed Redis prefix, or one of `expected`) prints that message alone; anything else prints its
 * stack. Either way the process exits 1.
 */
export function runMain(
  name: string,
  main: () => Promise<void>,
  expected: ErrorClass[] = [],
): void {
  main().catch((error: unknown) => {
    const known = [ConfigError, DeploymentConflictError, ...expected];
    if (known.some((type) => error instanceof type)) {
      process.stderr.write(`${(error as Error).message}\n`);
    } else {
      const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`${name} failed to start: ${detail}\n`);
    }
    process.exit(1);
  });
}

/**
 * What every process starts with (startRoles): its logger and its lifecycle, starting (the API
 * answers 503 until lifecycle.started()) with the one shutdown mechanism installed.
 */
export function startService(
  name: string,
  config: {
    LOG_LEVEL: LevelWithSilent;
    SHUTDOWN_READINESS_DELAY_MS: number;
    SHUTDOWN_GRACE_MS: number;
  },
): { logger: Logger; lifecycle: Lifecycle } {
  const logger = createLogger({ name, level: config.LOG_LEVEL });
  // A hook gets the grace period, and one more second for the close that follows it.
  const lifecycle = new Lifecycle(logger, config.SHUTDOWN_GRACE_MS + 1000);
  lifecycle.startStep('starting');
  lifecycle.installSignalHandlers((code) => process.exit(code), {
    readinessDelayMs: config.SHUTDOWN_READINESS_DELAY_MS,
  });
  return { logger, lifecycle };
}

/** Listens with the app and registers the server's graceful close (SHUTDOWN_GRACE_MS). */
export async function serveHttp(
  app: Express,
  config: { PORT: number; HOST: string; DOCS_URL?: string | undefined; SHUTDOWN_GRACE_MS: number },
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<{ server: Server; url: string }> {
  const listening = await listen(app, {
    port: config.PORT,
    host: config.HOST,
    docsUrl: config.DOCS_URL,
    logger,
  });
  lifecycle.onShutdown('http', () => closeServer(listening.server, config.SHUTDOWN_GRACE_MS));
  return listening;
}
