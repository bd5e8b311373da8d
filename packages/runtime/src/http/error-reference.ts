import { existsSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Router, type Request } from 'express';
import { Marked } from 'marked';
import { ApiError } from '@herald/contract';
import type { ApiOperation } from './openapi.js';

/** Where every Herald process serves its error reference: the default base of `doc_url`. */
export const ERROR_REFERENCE_PATH = '/docs/errors';

/**
 * The repository's docs/errors.md, found from this file in src/ or dist/ alike (the image keeps it
 * at the same place: infra/Dockerfile).
 */
const ERRORS_MD = fileURLToPath(new URL('../../../../docs/errors.md', import.meta.url));

export const errorReferenceOperation: ApiOperation = {
  method: 'get',
  path: ERROR_REFERENCE_PATH,
  summary: 'The error codes, one anchor per code (docs/errors.md as HTML)',
  description: "Where each error's `doc_url` points unless DOCS_URL is set: `/docs/errors#<CODE>`.",
  tag: 'Operations',
  extension: true,
  access: 'public',
  responses: { 200: { description: 'The error reference', mediaType: 'text/html' } },
  errors: ['INVALID_ENDPOINT'],
};

/** A host as a client may send it (name, IPv4 or [IPv6], and a port): nothing else is echoed. */
const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The base of `doc_url` in the answer to `req`: DOCS_URL when it is set, else this process's own
 * reference at the address the client used (Host, or X-Forwarded-Host and X-Forwarded-Proto from
 * a trusted proxy: express's `trust proxy`), `http://herald.example/docs/errors`. A host that is
 * not a plain host name or address gives the relative `/docs/errors`.
 */
export function docsUrlFor(req: Request, configured: string | undefined): string {
  if (configured !== undefined) return configured;
  const host = req.host;
  if (!host || !HOST.test(host)) return ERROR_REFERENCE_PATH;
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}${ERROR_REFERENCE_PATH}`;
}

const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"]/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[char] ?? char,
  );

/**
 * Markdown to HTML (marked, GFM). errors.md's own anchors (`<a id="CODE">`) pass through; a link
 * to another file of the repository, which is not served, becomes its text followed by the file's
 * path, so no link of the page leads to a 404 or out of Herald.
 */
const markdown = new Marked({
  gfm: true,
  renderer: {
    link(token) {
      if (/^(?:#|[a-z][a-z0-9+.-]*:)/i.test(token.href)) return false;
      const [file = '', anchor] = token.href.split('#');
      const path = posix.normalize(posix.join('docs', file)) + (anchor ? `#${anchor}` : '');
      const named = `<code>${escapeHtml(path)}</code>`;
      // `[docs/api.md](api.md#errors)` says the file already: its path alone.
      const text = token.text.replace(/`/g, '');
      if (text === file || path.startsWith(`${text}#`) || text === path) return named;
      return `${this.parser.parseInline(token.tokens)} (${named})`;
    },
  },
});

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}' +
  'table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}' +
  'code{background:#f3f3f3;padding:0 .2rem}pre{background:#f3f3f3;padding:.6rem;overflow:auto}' +
  'pre code{padding:0}';

let page: string | undefined;

/** docs/errors.md as one HTML page, rendered on first use. */
function errorReferencePage(): string {
  if (page !== undefined) return page;
  if (!existsSync(ERRORS_MD)) {
    throw new ApiError('INVALID_ENDPOINT', {
      message: `The error reference is not installed here: ${ERRORS_MD} is missing`,
    });
  }
  const body = markdown.parse(readFileSync(ERRORS_MD, 'utf8'), { async: false });
  page =
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>Herald error codes</title><style>${STYLE}</style></head>\n<body><main>\n${body}</main></body></html>\n`;
  return page;
}

/**
 * GET /docs/errors: the error reference every `doc_url` points at by default, served by every
 * Herald process without a token (it holds no data), so that a `doc_url` resolves against whichever
 * process or gateway answered. Rendered from docs/errors.md in memory: nothing is fetched.
 */
export function errorReferenceRouter(): Router {
  const router = Router();
  router.get(ERROR_REFERENCE_PATH, (_req, res) => {
    const html = errorReferencePage();
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    // No scripts, no requests: the page is its own text and one inline style.
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.send(html);
  });
  return router;
}
