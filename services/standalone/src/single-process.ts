import { resolve } from 'node:path';
import type { Lifecycle, Logger, ProcessHost } from '@herald/runtime';
import { EmbeddedPostgresError, embeddedPostgresUrlFile } from '@herald/store';
import { loadOrCreateAdminToken } from './admin-token.js';
import type { StandaloneSettings } from './config.js';
import {
  PgliteFolderError,
  embeddedPostgresDir,
  startEmbeddedDatabase,
} from './embedded-database.js';
import { PidLockError, acquirePidLock } from './pid-lock.js';

/** The single process's failures whose message says what to do (runMain prints it alone). */
export const SINGLE_PROCESS_ERRORS = [PidLockError, PgliteFolderError, EmbeddedPostgresError];

/**
 * What the single process adds around its three roles: without DATABASE_URL the embedded
 * PostgreSQL under HERALD_DATA_DIR (and the pid lock that keeps one Herald on it), the admin token
 * kept in HERALD_DATA_DIR/admin-token, and on the terminal what it waits for and its banner.
 */
export function singleProcess(settings: StandaloneSettings): ProcessHost<StandaloneSettings> {
  const tokenFile = resolve(settings.HERALD_DATA_DIR, 'admin-token');
  const tokenSource = settings.HERALD_ADMIN_TOKEN ? 'HERALD_ADMIN_TOKEN' : tokenFile;
  return {
    async prepare(logger, lifecycle) {
      // From here on the single process runs as on any PostgreSQL: the same pools, plan-once
      // share and statement budgets. Without REDIS_URL the queues run on that PostgreSQL too
      // (Postgres alone): the embedded default needs nothing but Node.
      const databaseUrl =
        settings.DATABASE_URL ?? (await startEmbeddedPostgres(settings, logger, lifecycle));
      const adminToken = settings.HERALD_ADMIN_TOKEN ?? (await loadOrCreateAdminToken(tokenFile));
      return {
        config: { ...settings, DATABASE_URL: databaseUrl },
        adminToken: {
          token: adminToken,
          name: settings.HERALD_ADMIN_TOKEN ? 'HERALD_ADMIN_TOKEN' : 'HERALD_DATA_DIR/admin-token',
        },
        listening: { database: settings.DATABASE_URL ? 'postgres' : 'embedded' },
      };
    },
    // A Postgres or Redis that does not answer: the terminal says what Herald waits for (once),
    // the log at most every 10 s, /readyz with each request.
    onWaiting(problem, url) {
      process.stdout.write(
        `\nHerald is waiting: ${problem}.\n` +
          `  ${url}/readyz answers 503 with the reason until then. Herald goes on by itself once\n` +
          `  it answers, and prints its banner.\n\n`,
      );
    },
    onStarted(url, adminTokenWorks) {
      const tokenHint = !adminTokenWorks
        ? `the admin token in ${tokenSource} was revoked: use another admin token`
        : settings.HERALD_ADMIN_TOKEN
          ? 'the admin token is the HERALD_ADMIN_TOKEN you set'
          : `the admin token is in ${tokenFile}:  export HERALD_TOKEN=$(cat ${tokenFile})`;
      const loopbackHint = settings.loopbackReceiversByDefault
        ? '  webhooks may call receivers on this machine (127.0.0.0/8, ::1): a development default of\n' +
          '  the embedded database; SSRF_ALLOW_CIDRS=none keeps the whole SSRF guard\n'
        : '';
      process.stdout.write(
        `\nHerald is running at ${url}\n` +
          `  the console:  ${url}/console\n` +
          `  ${tokenHint}\n` +
          `  try:  curl -H "Authorization: Bearer $HERALD_TOKEN" ${url}/webhooks\n` +
          `  more tokens (producer, read_only):  pnpm herald tokens create --name <name> --role producer\n` +
          `  or the console's Tokens screen:  ${url}/console/#/tokens\n` +
          (settings.DATABASE_URL
            ? ''
            : `  the database:  psql "$(cat ${embeddedPostgresUrlFile(embeddedPostgresDir(settings.HERALD_DATA_DIR))})"\n`) +
          `${loopbackHint}\n`,
      );
    },
  };
}

/**
 * Starts the embedded PostgreSQL of HERALD_DATA_DIR, holding its pid lock, and returns its URL.
 * Its stop is registered before the pools open, so it runs after they have closed; should it exit
 * on its own, the process shuts down and exits 1.
 */
async function startEmbeddedPostgres(
  settings: StandaloneSettings,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<string> {
  const release = await acquirePidLock(resolve(settings.HERALD_DATA_DIR, 'herald.pid'));
  lifecycle.onShutdown('pid-lock', release);
  const log = logger.child({ module: 'embedded-postgres' });
  const embedded = await startEmbeddedDatabase({
    dataDir: settings.HERALD_DATA_DIR,
    port: settings.EMBEDDED_POSTGRES_PORT,
    log: (message) => log.info(message),
  });
  // Waited for whole: a server still checkpointing when Node exits would hold the data folder
  // against the next start.
  lifecycle.onShutdown('embedded-postgres', () => embedded.stop(), Number.POSITIVE_INFINITY);
  embedded.onUnexpectedExit((code, signal) => {
    log.fatal({ code, signal }, 'the embedded PostgreSQL exited; stopping');
    void lifecycle.shutdown('embedded PostgreSQL exited').finally(() => process.exit(1));
  });
  log.info(
    { postgresPid: embedded.pid, port: new URL(embedded.url).port },
    'embedded PostgreSQL started',
  );
  return embedded.url;
}
