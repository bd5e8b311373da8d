import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Router } from 'express';
import { describe, expect } from 'vitest';
import { ApiError, ERROR_STATUS, type ErrorCode } from '@herald/contract';
import { appTest } from '@herald/testkit/fixtures';
import { createApiApp } from './create-api-app.js';
import { answerClientErrors } from './listen.js';

// Issue #32 item 5: `doc_url` points at the error reference Herald serves itself (GET
// /docs/errors, docs/errors.md as HTML) unless DOCS_URL names another base.

/** Answers GET /fail/<CODE> with that code's error: one real envelope per code. */
function failRouter(): Router {
  const router = Router();
  router.get('/fail/:code', (req) => {
    throw new ApiError(String(req.params['code']) as ErrorCode, { message: 'probe' });
  });
  return router;
}

/** The plumbing without DOCS_URL (its default), failRouter public. */
const it = appTest((deps) => createApiApp(deps, [], [failRouter()]), {
  http: { docsUrl: undefined },
});

async function docUrl(response: Response): Promise<string> {
  const body = (await response.json()) as { data: [{ attributes: { doc_url: string } }] };
  return body.data[0].attributes.doc_url;
}

describe('doc_url without DOCS_URL', () => {
  it('leads every code to its own anchor in the reference the process serves', async ({
    server,
  }) => {
    const pages = new Map<string, string>();
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      const failed = await fetch(`${server.url}/fail/${code}`);
      expect(failed.status).toBe(ERROR_STATUS[code]);
      const url = await docUrl(failed);
      expect(url).toBe(`${server.url}/docs/errors#${code}`);
      const page = url.slice(0, url.indexOf('#'));
      if (!pages.has(page)) {
        const reference = await fetch(page);
        expect(reference.status).toBe(200);
        expect(reference.headers.get('content-type')).toBe('text/html; charset=utf-8');
        pages.set(page, await reference.text());
      }
      expect(pages.get(page), code).toMatch(new RegExp(`<[^>]+ id="${code}"`));
    }
  });

  it('follows the address the client used through a trusted proxy, and echoes no odd host', async ({
    server,
  }) => {
    const proxied = await fetch(`${server.url}/fail/NOT_FOUND`, {
      headers: { 'X-Forwarded-Host': 'herald.example.com:8443', 'X-Forwarded-Proto': 'https' },
    });
    expect(proxied.status).toBe(404);
    expect(await docUrl(proxied)).toBe('https://herald.example.com:8443/docs/errors#NOT_FOUND');
    const odd = await fetch(`${server.url}/fail/NOT_FOUND`, {
      headers: { 'X-Forwarded-Host': 'evil"host/<x>' },
    });
    expect(await docUrl(odd)).toBe('/docs/errors#NOT_FOUND');
  });

  it('is relative for what the HTTP parser refuses (no Host was read)', async () => {
    const server = createServer(() => undefined);
    answerClientErrors(server, undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () =>
          socket.end('NOT HTTP AT ALL\r\n\r\n'),
        );
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('"doc_url":"/docs/errors#INVALID_REQUEST"');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('GET /docs/errors', () => {
  it('needs no token, loads nothing and links nowhere outside the page', async ({ server }) => {
    const reference = await fetch(`${server.url}/docs/errors`);
    expect(reference.status).toBe(200);
    expect(reference.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await reference.text();
    expect(html).toContain('<h1>Herald error codes</h1>');
    expect(html).not.toMatch(/<script/i);
    // errors.md's links to other repository files name the file instead of leading to a 404.
    const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((match) => match[1]!);
    expect(hrefs.length).toBeGreaterThan(0);
    expect(hrefs.filter((href) => !href.startsWith('#'))).toEqual([]);
    expect(html).toContain('<code>docs/api.md#errors</code>');
  });
});
