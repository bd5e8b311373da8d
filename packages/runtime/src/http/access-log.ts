import type { Request, RequestHandler, Response } from 'express';
import type { LevelWithSilent } from 'pino';
import type { Logger } from '../logger.js';
import { context } from './context.js';

export interface AccessLogSettings {
  /**
   * Share (0 to 1) of successful answers that are logged, by `METHOD /route/template`; any route
   * not named is always logged. Error answers (4xx, 5xx) are logged whatever it says.
   */
  sampleRates: Readonly<Record<string, number>>;
}

/** Polled every few seconds by orchestrators and Prometheus: their successes log at debug. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

/** The route template a request matched (`/webhooks/:id`), or `unmatched` when none answered. */
export function routeTemplate(req: Request): string {
  const matched = req.route as { path: string } | undefined;
  return matched ? `${req.baseUrl}${matched.path}` : 'unmatched';
}

/**
 * The access log: one line per request, written when its answer is finished, with the method,
 * route template, path, status, duration, request id and the token's id and name (never the
 * token). Errors log at warn (4xx) and error (5xx) with their code, always; a request the client
 * gave up on logs at warn with `aborted`.
 *
 * Written here rather than with pino-http, which it replaced: pino-http makes two child loggers
 * per request, one of them serializing the request through the redaction paths, though this line
 * uses neither (its own object, the request id as a field). pino-http, pino and @pinojs/redact
 * took 75 µs of the ingest process's ~1,340 busy µs per one-event POST /events
 * (`BENCH_CPU_PROF=<dir> BENCH_BATCHES=1 pnpm bench:ingest`); one child made once and one call
 * per logged line are what is left.
 */
export function accessLog(logger: Logger, settings: AccessLogSettings): RequestHandler {
  const log = logger.child({ module: 'access' });
  const level = (req: Request, res: Response): LevelWithSilent => {
    if (!res.writableEnded) return 'warn';
    if (res.statusCode >= 500) return 'error';
    if (res.statusCode >= 400) return 'warn';
    const route = routeTemplate(req);
    if (PROBES.has(route)) return 'debug';
    const rate = settings.sampleRates[`${req.method} ${route}`];
    return rate === undefined || Math.random() < rate ? 'info' : 'silent';
  };
  return (req, res, next) => {
    const started = Date.now();
    const finished = () => {
      res.removeListener('finish', finished);
      res.removeListener('close', finished);
      const at = level(req, res);
      if (at === 'silent') return;
      const { auth, errorCode, requestId } = context(res);
      log[at](
        {
          requestId,
          method: req.method,
          route: routeTemplate(req),
          path: req.path,
          status: res.statusCode,
          durationMs: Date.now() - started,
          ...(errorCode ? { code: errorCode } : {}),
          ...(auth ? { tokenId: auth.tokenId, tokenName: auth.tokenName } : {}),
          ...(res.writableEnded ? {} : { aborted: true }),
        },
        res.writableEnded ? 'request' : 'request aborted',
      );
    };
    // Whichever comes first: `finish` once the answer is handed to the socket, `close` when the
    // connection went away before.
    res.on('finish', finished);
    res.on('close', finished);
    next();
  };
}
