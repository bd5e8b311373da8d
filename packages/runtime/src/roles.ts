import type { Express, Router } from 'express';
import type { LevelWithSilent } from 'pino';
import type { Db } from '@herald/store';
import {
  openCoordination,
  openDatabase,
  prepareCoordination,
  prepareDatabase,
  registerAdminToken,
  type CommonConfig,
  type CoordinationConfig,
} from './boot.js';
import type { Coordination } from './coordination.js';
import { redisReady } from './dependencies.js';
import { claimPrefix } from './deployment.js';
import { LocalMatchHandOff } from './local-match.js';
import {
  createApiApp,
  createOpsApp,
  shareApiState,
  type HttpSettings,
  type SharedApiDeps,
} from './http/create-api-app.js';
import type { Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { runMain, serveHttp, startService, type ErrorClass } from './service.js';
import type { Lifecycle } from './shutdown.js';
import { startTracing, type TracingConfig } from './tracing.js';

/** The roles a process runs: the split services run one each, the single process all three. */
export type RoleName = 'ingest' | 'read' | 'delivery';

/** What the startup routine opens once and hands to every role. */
export interface Infrastructure {
  /** Its pools' application_name: `herald-<poolName>`, `herald-<poolName>-items`. */
  poolName: string;
  db: Db;
  /** Redis or Postgres alone: the queues and the state the processes share. */
  coordination: Coordination;
  logger: Logger;
  metrics: Metrics;
  lifecycle: Lifecycle;
  /** Ids ingest commits, handed to the delivery role's match workers when this process runs both. */
  localMatch: LocalMatchHandOff;
}

/** A role's routes on the process's one API app (createApiApp). */
export interface RoleApi {
  /** The HTTP settings (httpSettings): every API role of a process reads the same variables. */
  http: HttpSettings;
  /**
   * Before the process listens: opens what the routes need (queues, pools), registering each
   * close, and returns the routers, mounted in the order of the roles. `publicRouters` are served
   * without a token (createApiApp).
   */
  routers(
    infrastructure: Infrastructure,
    api: SharedApiDeps,
  ): { routers: Router[]; publicRouters?: Router[] };
}

/** One of Herald's roles, as its service exports it (ingestRole, readRole, deliveryRole). */
export interface Role {
  name: RoleName;
  /** Uses the queues: the process migrates their tables (Postgres alone), claims REDIS_PREFIX. */
  queues: boolean;
  /** Its routes; a process whose roles have none serves health, readiness and metrics only. */
  api?: RoleApi;
  /**
   * Once the database is ready, the prefix claimed and Redis answers: starts the role's workers,
   * registering their close. Registered last, they close first (hooks run in reverse): workers
   * stop taking jobs and finish those in flight while /readyz already answers 503.
   */
  start?(infrastructure: Infrastructure): Promise<void>;
}

/** The variables the routine itself reads (each service's config has them). */
export interface ProcessConfig extends CommonConfig, CoordinationConfig, TracingConfig {
  LOG_LEVEL: LevelWithSilent;
  SHUTDOWN_READINESS_DELAY_MS: number;
  SHUTDOWN_GRACE_MS: number;
  PORT: number;
  HOST: string;
  DOCS_URL?: string | undefined;
  /** Registered as a token at start when set (the API services read it). */
  HERALD_ADMIN_TOKEN?: string | undefined;
}

/** What a host prepares before the database opens (see ProcessHost.prepare). */
export interface Prepared<C> {
  /** The configuration to run on (the single process sets DATABASE_URL to its embedded one). */
  config: C;
  /** The admin token to register instead of HERALD_ADMIN_TOKEN, and the name it is stored by. */
  adminToken?: { token: string; name: string };
  /** Fields of the `<name> listening` log line. */
  listening?: Record<string, unknown>;
}

/**
 * What a process adds around the routine, where it has more to do than run roles: the single
 * process's embedded PostgreSQL, its admin token file, what it says on the terminal.
 */
export interface ProcessHost<C> {
  /** After tracing starts, before the database opens. */
  prepare?(logger: Logger, lifecycle: Lifecycle): Promise<Prepared<C>>;
  /**
   * Once listening, what the start waits for (Postgres, or Redis before the workers start): at
   * most once per dependency, besides the log and /readyz.
   */
  onWaiting?(problem: string, url: string): void;
  /** Once everything runs. `adminTokenWorks`: the admin token registered is not revoked. */
  onStarted?(url: string, adminTokenWorks: boolean): void;
}

export interface ProcessOptions<C extends ProcessConfig> {
  /** Its logger's name, its traces' (`herald-<name>`, or `herald`), its `<name> listening`. */
  name: string;
  /** Its pools' names (Infrastructure.poolName); default `name`. */
  poolName?: string;
  /** main.ts passes process.env here; loaded inside the routine, a ConfigError is said plainly. */
  loadConfig: () => C;
  /** The roles it runs, in order: their routes are mounted and their workers started in it. */
  roles: ((config: C) => Role)[];
  host?: (config: C) => ProcessHost<C>;
  /** Errors whose message alone is printed (runMain), beyond configuration and prefix conflicts. */
  expected?: ErrorClass[];
}

/** main.ts's one call: runs the process's roles (startRoles) and exits 1 if the start fails. */
export function runProcess<C extends ProcessConfig>(options: ProcessOptions<C>): void {
  runMain(options.name, () => startRoles(options), options.expected);
}

/**
 * The one startup routine of every Herald process: opens the infrastructure once (logger,
 * signals, tracing, the database, Redis or Postgres alone, metrics), lets each role add its
 * routes, listens before the database answers (/healthz at once, /readyz 503 saying why), then
 * prepares the database, registers the admin token, migrates the queues' tables and claims
 * REDIS_PREFIX, opens the API, waits for Redis and starts the roles' workers.
 */
export async function startRoles<C extends ProcessConfig>(
  options: ProcessOptions<C>,
): Promise<void> {
  const { name } = options;
  const settings = options.loadConfig();
  const { logger, lifecycle } = startService(name, settings);
  await startTracing(name === 'herald' ? 'herald' : `herald-${name}`, settings, logger, lifecycle);
  const host = options.host?.(settings);
  const prepared = (await host?.prepare?.(logger, lifecycle)) ?? { config: settings };
  const { config } = prepared;
  const roles = options.roles.map((role) => role(config));

  const poolName = options.poolName ?? name;
  const db = openDatabase(config, poolName, logger, lifecycle);
  const coordination = openCoordination(config, db, logger, lifecycle);
  const metrics = createMetrics();
  const infrastructure: Infrastructure = {
    poolName,
    db,
    coordination,
    logger,
    metrics,
    lifecycle,
    localMatch: new LocalMatchHandOff(),
  };
  const app = createRolesApp(config, roles, infrastructure);
  // Listening first: while Postgres or Redis does not answer, /readyz says which and why, and the
  // API answers 503 until the database is ready (Redis may come later: events are stored).
  const { url } = await serveHttp(app, config, logger, lifecycle);
  const waiting = (): ((problem: string) => void) | undefined => {
    if (!host?.onWaiting) return undefined;
    let said = false;
    return (problem) => {
      if (said) return;
      said = true;
      host.onWaiting?.(problem, url);
    };
  };
  const workers = roles.filter((role) => role.start !== undefined);
  const redisAnswers =
    workers.length > 0 && coordination.kind === 'redis'
      ? redisReady(coordination.redis, waiting())
      : Promise.resolve();

  await prepareDatabase(db, config, logger, lifecycle, waiting());
  const adminToken =
    prepared.adminToken ??
    (config.HERALD_ADMIN_TOKEN
      ? { token: config.HERALD_ADMIN_TOKEN, name: 'HERALD_ADMIN_TOKEN' }
      : undefined);
  const adminTokenWorks = adminToken
    ? await registerAdminToken(db, adminToken.token, adminToken.name, logger)
    : false;
  if (roles.some((role) => role.queues)) {
    await prepareCoordination(config, coordination, logger, lifecycle);
    await claimPrefix(db, coordination, logger);
  }
  // The API opens once the database is ready; the workers start once Redis answers too.
  if (roles.some((role) => role.api)) lifecycle.started();
  await redisAnswers;
  for (const role of workers) await role.start?.(infrastructure);
  lifecycle.started();
  logger.info(
    { url, roles: roles.map((role) => role.name), ...prepared.listening },
    `${name} listening`,
  );
  host?.onStarted?.(url, adminTokenWorks);
}

/**
 * The API roles' routers on one app with the shared plumbing, in the order of the roles; without
 * any, health, readiness and metrics only (the delivery service).
 */
function createRolesApp(
  config: ProcessConfig,
  roles: Role[],
  infrastructure: Infrastructure,
): Express {
  const apis = roles.flatMap((role) => (role.api ? [role.api] : []));
  const [first] = apis;
  if (!first) return createOpsApp({ ...infrastructure, docsUrl: config.DOCS_URL });
  const shared = shareApiState({ ...infrastructure, http: first.http });
  const parts = apis.map((api) => api.routers(infrastructure, shared));
  return createApiApp(
    shared,
    parts.flatMap((part) => part.routers),
    parts.flatMap((part) => part.publicRouters ?? []),
  );
}
