import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { Router, type Response } from 'express';
import { ApiError } from '@herald/contract';
import type { ApiOperation } from '@herald/runtime';

export const consoleOperation: ApiOperation = {
  method: 'get',
  path: '/console/',
  summary: 'The web console (HTML and scripts; no data)',
  description: 'Its API reference page renders GET /openapi.json: `/console/#/api`.',
  tag: 'Operations',
  extension: true,
  access: 'public',
  responses: { 200: { description: 'The console', mediaType: 'text/html' } },
  errors: ['INVALID_ENDPOINT'],
};

export const rootOperation: ApiOperation = {
  method: 'get',
  path: '/',
  summary: 'Leads a browser to the console',
  tag: 'Operations',
  extension: true,
  access: 'public',
  responses: {
    302: { description: 'To /console/', mediaType: ['text/plain', 'text/html'] },
  },
};

/**
 * GET /console: the web console's static files (services/console's build), and GET / leading
 * there. Public: the HTML and scripts hold no data; every API call they make carries the user's
 * token. Mounted before auth.
 */
export function consoleRouter(dir: string | undefined): Router {
  const router = Router();
  // A person who opens Herald's address in a browser lands on the console.
  router.get('/', (_req, res) => res.redirect(302, '/console/'));
  const built = dir !== undefined && existsSync(join(dir, 'index.html'));
  if (!built) {
    router.get(['/console', '/console/*rest'], () => {
      throw new ApiError('INVALID_ENDPOINT', {
        message: 'The console is not built here: run `pnpm build` (it builds services/console)',
      });
    });
    return router;
  }
  router.use(
    '/console',
    express.static(dir, {
      index: 'index.html',
      redirect: true,
      fallthrough: true,
      setHeaders: (res: Response, path: string) => {
        setSecurityHeaders(res);
        // Vite names assets by content hash: they never change; index.html must be revalidated.
        res.setHeader(
          'Cache-Control',
          path.includes(`${join(dir, 'assets')}`)
            ? 'public, max-age=31536000, immutable'
            : 'no-cache',
        );
      },
    }),
  );
  // The console routes in the URL's hash, so any other path under /console is a mistyped asset.
  router.get('/console/*rest', (req) => {
    throw new ApiError('INVALID_ENDPOINT', {
      message: `No console file ${req.path}`,
      method: req.method,
      path: req.path,
    });
  });
  return router;
}

/** A strict policy: the console loads only its own scripts and styles and talks only to Herald. */
function setSecurityHeaders(res: Response): void {
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
      "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  );
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
}
