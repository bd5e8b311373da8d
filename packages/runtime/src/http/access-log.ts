import type { Request, RequestHandler, Response } from 'express';
import type { LevelWithSilent } from 'pino';
import { pinoHttp } from 'pino-http';
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
 * The access log (pino-http): one line per request, written when its answer is finished, with
 * the method, route template, path, status, duration, request id and the token's id and name
 * (never the token). Errors log at warn (4xx) and error (5xx) with their code, always; a request
 * the client gave up on logs at warn with `aborted`.
 */
export function accessLog(logger: Logger, settings: AccessLogSettings): RequestHandler {
  const level = (req: Request, res: Response): LevelWithSilent => {
    if (!res.writableEnded) return 'warn';
    if (res.statusCode >= 500) return 'error';
    if (res.statusCode >= 400) return 'warn';
    const route = routeTemplate(req);
    if (PROBES.has(route)) return 'debug';
    const rate = settings.sampleRates[`${req.method} ${route}`];
    return rate === undefined || Math.random() < rate ? 'info' : 'silent';
  };
  const line = (req: Request, res: Response, val: { durationMs: number }) => {
    const { auth, errorCode } = context(res);
    return {
      method: req.method,
      route: routeTemplate(req),
      path: req.path,
      status: res.statusCode,
      durationMs: val.durationMs,
      ...(errorCode ? { code: errorCode } : {}),
      ...(auth ? { tokenId: auth.tokenId, tokenName: auth.tokenName } : {}),
      ...(res.writableEnded ? {} : { aborted: true }),
    };
  };
  const message = (_req: Request, res: Response): string =>
    res.writableEnded ? 'request' : 'request aborted';
  return pinoHttp<Request, Response>({
    logger: logger.child({ module: 'access' }),
    genReqId: (_req, res) => context(res).requestId,
    // The line is built by `line` alone: no request headers (the token), no response object.
    quietReqLogger: true,
    quietResLogger: true,
    customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
    customLogLevel: level,
    customSuccessObject: line,
    customErrorObject: (req, res, _error, val: { durationMs: number }) => line(req, res, val),
    customSuccessMessage: message,
    customErrorMessage: message,
  });
}
