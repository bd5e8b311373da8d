import { readFileSync } from 'node:fs';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  /**
   * Checks Postgres and Redis (when it is configured) for herald_dependency_up when /metrics is scraped; set by the
   * health router (the first one of the registry's apps).
   */
  checkDependencies?: () => Promise<Partial<Record<'postgres' | 'redis', boolean>>>;
}

/** Herald's version: the root package.json's, which every package shares. */
function heraldVersion(): string {
  try {
    const file = new URL('../../../package.json', import.meta.url);
    const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * One registry per process: in the single-process mode the three services share it, so each
 * metric is registered once. Labels never hold ids or URLs (route templates only).
 */
export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'herald_http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const metrics: Metrics = { registry, httpDuration };
  new Gauge({
    name: 'herald_build_info',
    help: 'Always 1; its labels say which Herald runs: version, and the Node.js version',
    labelNames: ['version', 'node_version'] as const,
    registers: [registry],
  }).set({ version: heraldVersion(), node_version: process.version }, 1);
  new Gauge({
    name: 'herald_dependency_up',
    help: 'Whether Postgres and Redis answered this process within 2 s when /metrics was scraped (1) or not (0), by dependency',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const up = await metrics.checkDependencies?.();
      if (!up) return;
      for (const [dependency, ok] of Object.entries(up)) this.set({ dependency }, ok ? 1 : 0);
    },
  });
  return metrics;
}
