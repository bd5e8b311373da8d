import { Router } from 'express';
import { z } from 'zod';
import { ApiError, renderErrorEnvelope } from '@herald/contract';
import type { Db } from '@herald/store';
import type { Coordination } from '../coordination.js';
import { postgresProblem, redisAddress, redisProblem } from '../dependencies.js';
import type { Metrics } from '../metrics.js';
import { docsUrlFor, errorReferenceOperation } from './error-reference.js';
import type { ApiOperation } from './openapi.js';

export interface HealthDeps {
  db: Db;
  coordination: Coordination;
  metrics: Metrics;
  isDraining: () => boolean;
  /** What the start is still doing or waiting for (Lifecycle.starting); undefined once started. */
  starting?: () => string | undefined;
  /** DOCS_URL: the base of `doc_url`; unset, the process's own /docs/errors (docsUrlFor). */
  docsUrl: string | undefined;
}

const PROBE_TIMEOUT_MS = 2000;

/** 'ok', or what is wrong in Herald's words (the probe's error, or that it did not answer). */
async function check(
  probe: () => Promise<unknown>,
  describe: (error: unknown) => string,
  late: string,
): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const answered = await Promise.race([
      probe().then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS);
      }),
    ]);
    return answered ? 'ok' : late;
  } catch (error) {
    return describe(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Postgres, and Redis when it is the coordination, each `ok` or what is wrong in Herald's words
 * (2 s at most). Postgres alone: the database is the coordination too, and no redis is checked.
 */
async function checkDependencies(deps: HealthDeps): Promise<{ database: string; redis?: string }> {
  const { coordination } = deps;
  const [database, redis] = await Promise.all([
    check(() => deps.db.query('SELECT 1'), postgresProblem, 'Postgres did not answer within 2 s'),
    coordination.kind !== 'redis'
      ? undefined
      : // A client that is not connected fails at once; say why it is not (its last error).
        coordination.redis.status === 'ready'
        ? check(
            () => coordination.redis.ping(),
            (error) => redisProblem(coordination.redis, error),
            `${redisAddress(coordination.redis)} did not answer within 2 s`,
          )
        : redisProblem(coordination.redis),
  ]);
  return redis === undefined ? { database } : { database, redis };
}

const Alive = z.strictObject({ status: z.literal('ok') });
const Ready = z.strictObject({
  status: z.literal('ready'),
  // redis only when REDIS_URL is set: on Postgres alone the database is the coordination too.
  checks: z.strictObject({ database: z.literal('ok'), redis: z.literal('ok').optional() }),
});

/** docs/api.md, Operations: served by every Herald process, without a token. */
export const healthOperations: readonly ApiOperation[] = [
  {
    method: 'get',
    path: '/healthz',
    summary: 'The process is alive',
    tag: 'Operations',
    extension: true,
    access: 'public',
    responses: { 200: { description: 'Alive', schema: Alive } },
  },
  {
    method: 'get',
    path: '/readyz',
    summary:
      'The process can serve: started, Postgres (and Redis when configured) answer, not shutting down',
    tag: 'Operations',
    extension: true,
    access: 'public',
    responses: { 200: { description: 'Ready', schema: Ready } },
    errors: ['SERVICE_UNAVAILABLE'],
  },
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics, in the text format',
    tag: 'Operations',
    extension: true,
    access: 'public',
    responses: { 200: { description: 'The metrics', mediaType: 'text/plain' } },
  },
  errorReferenceOperation,
];

/**
 * GET /healthz (alive), /readyz (started; Postgres, and Redis when it is configured, reachable; not
 * draining), /metrics (which checks them too, for herald_dependency_up).
 */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  deps.metrics.checkDependencies ??= async () => {
    const { database, redis } = await checkDependencies(deps);
    return redis === undefined
      ? { postgres: database === 'ok' }
      : { postgres: database === 'ok', redis: redis === 'ok' };
  };
  router.get('/healthz', (_req, res) => {
    const answer: z.infer<typeof Alive> = { status: 'ok' };
    res.json(answer);
  });
  router.get('/readyz', async (req, res) => {
    // Draining is said at once, without asking the dependencies: a load balancer must hear it
    // even while Postgres answers slowly (a busy pool, a dependency going away with the process).
    if (deps.isDraining()) {
      const error = new ApiError('SERVICE_UNAVAILABLE', {
        message: 'Shutting down',
        draining: true,
      });
      res.status(503).json(renderErrorEnvelope(error, docsUrlFor(req, deps.docsUrl)));
      return;
    }
    const checks = await checkDependencies(deps);
    const { database, redis } = checks;
    const draining = deps.isDraining();
    const starting = deps.starting?.();
    if (!draining && !starting && Object.values(checks).every((check) => check === 'ok')) {
      const answer = { status: 'ready', checks } as z.infer<typeof Ready>;
      res.json(answer);
      return;
    }
    const waitingFor = [
      database !== 'ok' && 'Postgres',
      redis !== undefined && redis !== 'ok' && 'Redis',
    ].filter(Boolean);
    const error = new ApiError('SERVICE_UNAVAILABLE', {
      message: draining
        ? 'Shutting down'
        : waitingFor.length
          ? `Herald is waiting for ${waitingFor.join(' and ')}`
          : `Herald is starting (${starting})`,
      draining,
      ...(starting ? { starting } : {}),
      checks,
    });
    res.status(503).json(renderErrorEnvelope(error, docsUrlFor(req, deps.docsUrl)));
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.registry.contentType);
    res.send(await deps.metrics.registry.metrics());
  });
  return router;
}
