import { randomUUID } from 'node:crypto';
import express, { type Express, type RequestHandler, type Router } from 'express';
import { ApiError } from '@herald/contract';
import type { Db } from '@herald/store';
import type { Coordination } from '../coordination.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { accessLog, routeTemplate, type AccessLogSettings } from './access-log.js';
import { authenticate, TokenVerifier } from './auth.js';
import { context, type RequestContext } from './context.js';
import { EnvironmentResolver, selectEnvironment } from './environments.js';
import { errorReferenceRouter } from './error-reference.js';
import { errorHandler } from './errors.js';
import { checkAccept, checkApiVersion, checkContentType } from './headers.js';
import { healthRouter } from './health.js';
import { jsonBody } from './json-body.js';
import { findJsonProblem } from './json-walk.js';
import { parseQueryString } from './query.js';
import { RateLimiter, type RateLimits } from './rate-limit.js';

export interface HttpSettings {
  /** DOCS_URL: the base of `doc_url`; undefined, each process's own /docs/errors (docsUrlFor). */
  docsUrl: string | undefined;
  bodyLimitBytes: number;
  rateLimits: RateLimits;
  authCacheTtlMs: number;
  accessLog: AccessLogSettings;
}

export interface ApiAppDeps {
  db: Db;
  /** Redis or Postgres alone: the HTTP rate limit's windows, readiness. */
  coordination: Coordination;
  logger: Logger;
  metrics: Metrics;
  lifecycle: { readonly draining: boolean; readonly starting?: string | undefined };
  http: HttpSettings;
  /** Shared so that a service can invalidate it after changing environments. */
  environments?: EnvironmentResolver;
  /** Shared so that the token routes can make their changes apply at once (forget). */
  tokens?: TokenVerifier;
}

/** ApiAppDeps whose environment resolver and token verifier are made (shareApiState). */
export type SharedApiDeps = ApiAppDeps & Required<Pick<ApiAppDeps, 'environments' | 'tokens'>>;

/**
 * `deps` with the environment resolver and the token verifier made once, when absent, so that the
 * plumbing of createApiApp and a service's routes share them: a route that changes environments
 * or tokens makes the change apply at once.
 */
export function shareApiState<D extends ApiAppDeps>(deps: D): D & SharedApiDeps {
  return {
    ...deps,
    environments: deps.environments ?? new EnvironmentResolver(deps.db),
    tokens: deps.tokens ?? new TokenVerifier(deps.db, { cacheTtlMs: deps.http.authCacheTtlMs }),
  };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const requestContext =
  (metrics: Metrics): RequestHandler =>
  (req, res, next) => {
    const started = process.hrtime.bigint();
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    const locals: RequestContext = { requestId, query: {} };
    Object.assign(res.locals, locals);
    res.setHeader('X-Request-Id', requestId);
    res.setHeader('X-Api-Version', '3');
    res.setHeader('X-Environment', 'main');
    res.on('finish', () => {
      metrics.httpDuration.observe(
        { method: req.method, route: routeTemplate(req), status: String(res.statusCode) },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    });
    next();
  };

const parseQuery: RequestHandler = (req, res, next) => {
  const raw = req.originalUrl.includes('?')
    ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1)
    : '';
  const query = parseQueryString(raw);
  context(res).query = query;
  Object.defineProperty(req, 'query', { value: query, configurable: true, enumerable: true });
  next();
};

/**
 * Before any route (or anything recursive) sees a JSON body: over-deep nesting is a 400
 * INVALID_JSON_BODY; a NUL character or a lone surrogate anywhere a 422 naming where (Postgres
 * cannot store either).
 */
const checkBody: RequestHandler = (req, _res, next) => {
  const problem = findJsonProblem(req.body);
  if (problem === undefined) return next();
  if (problem.kind === 'too_deep') {
    return next(
      new ApiError('INVALID_JSON_BODY', {
        message: `Invalid JSON: arrays and objects nest deeper than ${problem.maxDepth} levels`,
        max_depth: problem.maxDepth,
      }),
    );
  }
  next(
    ApiError.many([
      ApiError.field(
        problem.path.replace(/^data\.attributes\./, ''),
        'VALIDATION_FORMAT',
        problem.kind === 'nul'
          ? 'must not contain NUL characters'
          : 'must be valid Unicode: it holds a lone surrogate (an unpaired \\uD800-\\uDFFF)',
      ),
    ]),
  );
};

/**
 * While the process drains (SIGTERM: readiness 503, then the server closes), every answer says
 * `Connection: close`, so keep-alive clients open their next request on a new connection, which a
 * closed server refuses cleanly, instead of sending it on one the shutdown is about to cut.
 */
function closeWhileDraining(lifecycle: { readonly draining: boolean }): RequestHandler {
  return (_req, res, next) => {
    if (lifecycle.draining) res.setHeader('Connection', 'close');
    next();
  };
}

/**
 * Until the process has started (its database answers and is migrated), the API answers 503
 * saying what the start waits for; health, metrics and the console are served meanwhile.
 */
function refuseWhileStarting(lifecycle: ApiAppDeps['lifecycle']): RequestHandler {
  return (_req, _res, next) => {
    const starting = lifecycle.starting;
    if (starting === undefined) return next();
    next(
      new ApiError(
        'SERVICE_UNAVAILABLE',
        { message: `Herald is starting (${starting}); retry in a moment`, starting },
        { headers: { 'Retry-After': '1' } },
      ),
    );
  };
}

/**
 * The HTTP plumbing shared by the API services (docs/api.md, Conventions), around the given
 * routers: request ids and standard headers, the access log, health and metrics, the error
 * reference (GET /docs/errors), query parsing with limits, Accept,
 * auth and rate limits, X-Api-Version, X-Environment, Content-Type and JSON bodies, 404 for unknown
 * routes, and the error envelope. `publicRouters` are mounted right after health, before auth and
 * the API's header checks: for what is public by design (the console's static files).
 */
export function createApiApp(
  deps: ApiAppDeps,
  routers: Router[],
  publicRouters: Router[] = [],
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', false);
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');

  const verifier =
    deps.tokens ?? new TokenVerifier(deps.db, { cacheTtlMs: deps.http.authCacheTtlMs });
  const limiter = new RateLimiter(
    deps.coordination,
    deps.http.rateLimits,
    `${deps.coordination.prefix}:rl:`,
  );
  const environments = deps.environments ?? new EnvironmentResolver(deps.db);

  app.use(requestContext(deps.metrics));
  app.use(accessLog(deps.logger, deps.http.accessLog));
  useOps(app, deps, deps.http.docsUrl);
  for (const router of publicRouters) app.use(router);
  app.use(refuseWhileStarting(deps.lifecycle));
  app.use(parseQuery);
  app.use(checkAccept);
  app.use(authenticate(verifier, limiter));
  app.use(checkApiVersion);
  app.use(selectEnvironment(environments));
  app.use(checkContentType);
  app.use(jsonBody(deps.http.bodyLimitBytes));
  app.use(checkBody);
  for (const router of routers) app.use(router);
  app.use(notFound);
  app.use(errorHandler(deps.logger, deps.http.docsUrl));
  return app;
}

/**
 * What both apps answer before any API route: nothing new while draining, then health, readiness,
 * metrics and the error reference.
 */
function useOps(
  app: Express,
  deps: Pick<ApiAppDeps, 'db' | 'coordination' | 'metrics' | 'lifecycle'>,
  docsUrl: string | undefined,
): void {
  app.use(closeWhileDraining(deps.lifecycle));
  app.use(
    healthRouter({
      db: deps.db,
      coordination: deps.coordination,
      metrics: deps.metrics,
      isDraining: () => deps.lifecycle.draining,
      starting: () => deps.lifecycle.starting,
      docsUrl,
    }),
  );
  app.use(errorReferenceRouter());
}

const notFound: RequestHandler = (req, _res, next) => {
  next(
    new ApiError('INVALID_ENDPOINT', {
      message: `No endpoint ${req.method} ${req.path}`,
      method: req.method,
      path: req.path,
    }),
  );
};

/**
 * Health, readiness and metrics only (and the error reference its errors point at): the delivery
 * service has no API of its own.
 */
export function createOpsApp(
  deps: Omit<ApiAppDeps, 'http' | 'environments'> & { docsUrl: string | undefined },
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestContext(deps.metrics));
  app.use(accessLog(deps.logger, { sampleRates: {} }));
  useOps(app, deps, deps.docsUrl);
  app.use(notFound);
  app.use(errorHandler(deps.logger, deps.docsUrl));
  return app;
}
