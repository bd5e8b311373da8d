import { Router } from 'express';
import { ApiError, renderErrorEnvelope } from '@herald/contract';
import type { Db } from '@herald/store';
import type { Redis } from 'ioredis';
import type { Metrics } from '../metrics.js';

export interface HealthDeps {
  db: Db;
  redis: Redis;
  metrics: Metrics;
  isDraining: () => boolean;
  docsUrl: string;
}

async function check(probe: () => Promise<unknown>, timeoutMs: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message : 'failed';
  } finally {
    clearTimeout(timer);
  }
}

/** GET /healthz (alive), /readyz (Redis and Postgres reachable, not draining), /metrics. */
export function healthRouter(deps: HealthDeps): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [database, redis] = await Promise.all([
      check(() => deps.db.query('SELECT 1'), 2000),
      check(() => deps.redis.ping(), 2000),
    ]);
    const draining = deps.isDraining();
    if (!draining && database === 'ok' && redis === 'ok') {
      res.json({ status: 'ready', checks: { database, redis } });
      return;
    }
    const error = new ApiError('SERVICE_UNAVAILABLE', {
      message: draining ? 'Shutting down' : 'A dependency is unreachable',
      draining,
      checks: { database, redis },
    });
    res.status(503).json(renderErrorEnvelope(error, deps.docsUrl));
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.registry.contentType);
    res.send(await deps.metrics.registry.metrics());
  });
  return router;
}
