import { request } from 'node:http';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type TestServer } from '@herald/testkit';
import { JSON_TYPES } from './headers.js';
import { jsonBody } from './json-body.js';

const LIMIT = 512;

/** An app that answers what the parser made of the body, or its error's status, type, message. */
function echo(parser: RequestHandler): express.Express {
  const app = express();
  app.use(parser);
  app.post('/', (req, res) => {
    res.json({ body: req.body === undefined ? '(undefined)' : (req.body as unknown) });
  });
  const errors: ErrorRequestHandler = (
    error: Error & { status?: number; type?: string },
    _req,
    res,
    _next,
  ) => {
    res.status(error.status ?? 500).json({ type: error.type, message: error.message });
  };
  app.use(errors);
  return app;
}

function post(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let lean: TestServer;
let general: TestServer;
beforeAll(async () => {
  lean = await serve(echo(jsonBody(LIMIT)));
  general = await serve(echo(express.json({ limit: LIMIT, type: JSON_TYPES })));
});
afterAll(async () => {
  await lean.close();
  await general.close();
});

const contentTypes = fc.constantFrom(
  'application/json',
  'application/vnd.api+json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16le',
  'application/json; charset=latin1',
  'text/plain',
);

/** Bodies near and far from JSON: documents, scalars, whitespace, a BOM, broken text, bytes. */
const bodies = fc.oneof(
  fc.json().map((text) => Buffer.from(text)),
  fc.jsonValue().map((value) => Buffer.from(` \n\t${JSON.stringify(value)}  `)),
  fc.string({ unit: 'binary' }).map((text) => Buffer.from(text)),
  fc
    .tuple(fc.constantFrom('', ' ', '\r\n', '\ufeff', '\ufeff '), fc.json(), fc.string())
    .map(([before, text, after]) => Buffer.from(before + text.slice(0, -1) + after)),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)),
  fc
    .constantFrom('', ' ', 'null', '"x"', 'true', '1', 'undefined', '{"a":1}x', '[1,]')
    .map((text) => Buffer.from(text)),
);

describe('jsonBody', () => {
  it('answers every body exactly as express.json does, errors included', async () => {
    await fc.assert(
      fc.asyncProperty(bodies, contentTypes, async (body, contentType) => {
        const headers = { 'content-type': contentType };
        const [mine, theirs] = await Promise.all([
          post(lean.url, body, headers),
          post(general.url, body, headers),
        ]);
        expect(mine).toEqual(theirs);
      }),
      { numRuns: 400 },
    );
  });

  it('reads the common body itself, and leaves compressed and oversized ones to express.json', async () => {
    const document = Buffer.from('{"data":{"type":"event"}}');
    const json = { 'content-type': 'application/json' };
    expect(await post(lean.url, document, json)).toEqual({
      status: 200,
      text: '{"body":{"data":{"type":"event"}}}',
    });
    const tooLarge = await post(lean.url, Buffer.alloc(LIMIT + 1, 0x20), json);
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.text)).toMatchObject({ type: 'entity.too.large' });
    const { gzipSync } = await import('node:zlib');
    const gzipped = await post(lean.url, gzipSync(document), {
      ...json,
      'content-encoding': 'gzip',
    });
    expect(gzipped.text).toBe('{"body":{"data":{"type":"event"}}}');
  });
});
